"""Hosting a folder: the process that has it open (``chronos serve``, the shell, ``chronos
mcp``) serves the ``chronos mcp`` sessions that join it over the folder's socket.

A joined session is a stdio session whose lines come over the socket: the same loop
(``stdio.serve``: cancels, the line limit, replies in order), with the modes its own ``chronos
mcp`` was started with (``--agent``, ``--allow-merge``, ``--branch``, the call limits; the host's
``--max-memory-mb`` is the process's). Its calls run on the host's databases (``pool``), so
every session's calls find what earlier calls warmed: tables, worlds, search indexes.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import chronos_lite

from ..errors import BAD_ARGUMENT, ChronosError
from ..history import prune
from ..opening import open_folder
from . import foldersocket
from .core import MAX_RESULT_CHARS, Server
from .pool import Databases
from .stdio import serve, session_caller

HELLO_TIMEOUT = 10.0  # seconds a joining process has to say who it is
STOP_WAIT = 10.0  # seconds a stopping host gives joined calls in flight
MAX_HELLO = 64 * 1024
VERSION_MISMATCH = "version"


class JoinedServer(Server):
    """An MCP session of its own (caller, protocol version, cancels) whose calls each run on
    a database of the host's pool."""

    def __init__(self, databases: Databases, caller: Any, folder: str) -> None:
        with databases.lease() as db:
            super().__init__(db, caller, folder)
        self.databases = databases

    def answer(self, message: Any) -> dict | None:
        with self.databases.lease() as db:
            self.db = db  # (cancel reaches it: it stops the call running on this database)
            return super().answer(message)

    def between_messages(self) -> None:
        if time.monotonic() - self._pruned > prune.EVERY:
            with self.databases.lease() as db:
                self.db = db
                super().between_messages()


class Host:
    """The folder's socket, served on threads of this process until ``close``."""

    def __init__(
        self,
        folder: str,
        role: str,
        claim: foldersocket.Claim,
        listening: socket.socket,
        databases: Callable[[], Databases],
    ) -> None:
        self.folder, self.role = folder, role
        self._claim, self._listening = claim, listening
        self._make_databases = databases
        self._databases: Databases | None = None
        self._lock = threading.Lock()
        self._joined: dict[socket.socket, threading.Thread] = {}
        self._accepting = threading.Thread(target=self._accept, daemon=True, name="chronos-host")
        self._accepting.start()

    @classmethod
    def start(cls, folder: str, role: str, databases: Callable[[], Databases]) -> Host | None:
        """Host ``folder`` (``role`` names this process to those who join); None when another
        process hosts it, or its socket can't be made (the folder read-only): this process
        then serves only itself, as before joining existed."""
        try:
            claim = foldersocket.Claim.take(folder)
        except OSError:
            return None
        if claim is None:
            return None
        try:
            listening = foldersocket.listen(folder, claim)
        except OSError:
            claim.release()
            return None
        return cls(str(folder), role, claim, listening, databases)

    def databases(self) -> Databases:
        """The databases joined sessions use, opened at the first join."""
        with self._lock:
            if self._databases is None:
                self._databases = self._make_databases()
            return self._databases

    def opened(self) -> Databases | None:
        """The databases the first join opened (None: no one joined), for their maker to close."""
        with self._lock:
            return self._databases

    # --- serving ----------------------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listening.accept()
            except OSError:
                return  # the socket was closed: the host stops
            if foldersocket.peer_uid(conn) not in (None, os.getuid()):
                conn.close()  # (the socket is the owner's only; this is a second guard)
                continue
            thread = threading.Thread(target=self._session, args=(conn,), daemon=True)
            with self._lock:
                self._joined[conn] = thread
            thread.start()

    def _session(self, conn: socket.socket) -> None:
        rfile, wfile = conn.makefile("rb"), conn.makefile("wb")
        try:
            conn.settimeout(HELLO_TIMEOUT)
            try:
                server = self._joined_server(_hello(rfile.readline(MAX_HELLO)))
            except ChronosError as exc:
                _say(wfile, {"error": exc.message, "code": exc.code})
                return
            _say(wfile, {"joined": self.role, "pid": os.getpid()})
            conn.settimeout(None)
            serve(server, rfile, wfile)
        except (OSError, ValueError):
            pass  # the joined process went away: its session ends
        finally:
            for f in (rfile, wfile):
                try:
                    f.close()
                except OSError:
                    pass
            conn.close()
            with self._lock:
                self._joined.pop(conn, None)

    def _joined_server(self, hello: dict) -> JoinedServer:
        if hello.get("chronos") != chronos_lite.__version__:
            raise ChronosError(
                f"{self.role} (pid {os.getpid()}) hosts {self.folder} with chronos "
                f"{chronos_lite.__version__}, this chronos mcp is {hello.get('chronos')}",
                VERSION_MISMATCH,
            )
        return session_server(self.databases(), self.folder, hello)

    # --- stopping ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop: no new sessions; each joined session's calls in flight are answered (up to
        ``STOP_WAIT`` seconds), then its socket closes and its ``chronos mcp`` serves itself.
        The databases are left to whoever made them."""
        try:
            self._listening.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listening.close()
        self._accepting.join(timeout=STOP_WAIT)
        foldersocket.remove(self.folder)
        self._claim.release()
        with self._lock:
            joined = list(self._joined.items())
        for conn, _ in joined:
            try:
                conn.shutdown(socket.SHUT_RD)  # (its loop sees the end of input after the call)
            except OSError:
                pass
        deadline = time.monotonic() + STOP_WAIT
        for _, thread in joined:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


@contextmanager
def hosting(folder: str, role: str, size: int = 2) -> Iterator[Host | None]:
    """Host ``folder`` while the block runs (None: another process hosts it), joined sessions
    on databases of their own (``size`` at most), opened at the first join."""
    host = Host.start(folder, role, lambda: Databases(lambda: open_folder(folder), size))
    try:
        yield host
    finally:
        if host is not None:
            host.close()
            opened = host.opened()
            if opened is not None:
                opened.close()


def session_server(databases: Databases, folder: str, hello: dict) -> JoinedServer:
    """The MCP session a ``chronos mcp`` asks for (``hello``: its modes and limits)."""
    with databases.lease() as db:
        branch = hello.get("branch")
        if branch not in (None, "main"):
            db.world(str(branch))  # the branch must exist
        caller = session_caller(
            db,
            bool(hello.get("allow_merge")),
            _text(hello.get("agent")),
            _number(hello.get("max_query_ms")),
            _number(hello.get("max_result_chars")) or MAX_RESULT_CHARS,
        )
    return JoinedServer(databases, caller, folder)


def _hello(line: bytes) -> dict:
    try:
        hello = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        hello = None
    if not isinstance(hello, dict):
        raise ChronosError("a joining process must say who it is first (one JSON line)")
    return hello


def _say(wfile: Any, message: dict) -> None:
    wfile.write(json.dumps(message).encode() + b"\n")
    wfile.flush()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChronosError(f"a limit must be a whole number, not {value!r}", BAD_ARGUMENT)
    return value
