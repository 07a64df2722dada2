"""``chronos mcp <folder>``: join the process that has the folder open (``chronos serve``, the
shell, another ``chronos mcp``), or open it here and host it for the next ``chronos mcp``.

Either way the client sees one stdio session. If the host stops, the session moves: to the
process that hosts the folder next, or here.
"""

from __future__ import annotations

import os
import sys
import time
from typing import BinaryIO

import apsw

import chronos_lite

from ..errors import ChronosError
from ..opening import open_folder
from ..storage.db import DB_FILE
from .core import MAX_MEMORY_MB, MAX_RESULT_CHARS
from .foldersocket import connect
from .host import VERSION_MISMATCH, Host, session_server
from .pool import Databases
from .relay import Feed, Joined, handshake, relay
from .stdio import serve

JOIN_WAIT = 3.0  # seconds to wait for a host that holds the folder but doesn't answer yet
POOL = 4  # databases a hosting chronos mcp opens for its own session and joined ones


def run(
    folder: str,
    allow_merge: bool,
    agent: str | None,
    branch: str | None,
    max_query_ms: int | None = None,
    max_memory_mb: int = MAX_MEMORY_MB,
    max_result_chars: int = MAX_RESULT_CHARS,
    join: bool = True,
) -> int:
    """Serve the client on stdin and stdout; refusals before serving raise ChronosError.
    ``max_query_ms``: each call's time limit (None: safe mode's 30 s, none for the owner; 0:
    none); ``max_memory_mb``: SQLite's heap for this process (a host's own applies to the
    sessions that join it); ``max_result_chars``: a result's budget; ``join``: False serves
    here alone, neither joining nor hosting."""
    apsw.hard_heap_limit(max_memory_mb * 1024 * 1024)  # a call past it fails, the server lives
    if not os.path.isfile(os.path.join(folder, DB_FILE)):
        open_folder(folder).close()  # (raises: the folder isn't a chronos database)
    hello = {
        "chronos": chronos_lite.__version__,
        "agent": agent,
        "allow_merge": allow_merge,
        "branch": branch,
        "max_query_ms": max_query_ms,
        "max_result_chars": max_result_chars,
    }
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries protocol messages only: a stray print goes to logs
    if not join:
        return _serve_here(folder, hello, stdin, stdout, None, None)
    feed: Feed | None = None  # (made once the session first goes to a host)
    deadline = time.monotonic() + JOIN_WAIT
    while True:
        host = Host.start(folder, "chronos mcp", lambda: Databases(_opener(folder), POOL))
        if host is not None:
            return _serve_here(folder, hello, stdin, stdout, feed, host)
        try:
            joined = _join(folder, hello)
        except ChronosError as exc:
            if exc.code != VERSION_MISMATCH:
                raise  # (what the host refuses, this process would refuse too)
            _note(f"{exc.message}: serving this session on its own")
            return _serve_here(folder, hello, stdin, stdout, feed, None)
        if joined is not None:
            feed = feed or Feed(stdin)
            if relay(joined, feed, stdout):
                return 0
            _note(f"{joined.host} stopped serving {folder}; this session goes on")
            deadline = time.monotonic() + JOIN_WAIT
        elif time.monotonic() > deadline:
            _note(f"another process holds {folder} but doesn't answer on its socket: serving alone")
            return _serve_here(folder, hello, stdin, stdout, feed, None)
        else:
            time.sleep(0.05)


def _join(folder: str, hello: dict) -> Joined | None:
    """The session joined to the folder's host; None when no host answers (none listens, or
    it is going away as it is reached)."""
    sock = connect(folder, timeout=JOIN_WAIT)
    if sock is None:
        return None
    try:
        return handshake(sock, hello)
    except OSError:
        sock.close()
        return None
    except ChronosError:
        sock.close()
        raise


def _serve_here(
    folder: str,
    hello: dict,
    stdin: BinaryIO,
    stdout: BinaryIO,
    feed: Feed | None,
    host: Host | None,
) -> int:
    """Serve the session in this process (hosting the folder when ``host``)."""
    databases = host.databases() if host is not None else Databases(_opener(folder), 1)
    try:
        server = session_server(databases, folder, hello)
        if feed is None:
            serve(server, stdin, stdout)
            return 0
        # a session moved here: the lines still come through the feed, by a pipe
        read_end, write_end = os.pipe()
        with os.fdopen(read_end, "rb") as lines, os.fdopen(write_end, "wb") as sink:
            if feed.initialize is not None:
                server.answer_line(feed.initialize)  # (the client has its reply already)

            def give(line: bytes) -> None:
                sink.write(line)
                sink.flush()

            feed.attach(give, sink.close, track=False)
            serve(server, lines, stdout)
        return 0
    finally:
        if host is not None:
            host.close()
        databases.close()


def _opener(folder: str):
    return lambda: open_folder(folder)  # (each call is its own session: no TEMP kept)


def _note(message: str) -> None:
    print(f"chronos mcp: {message}", file=sys.stderr, flush=True)
