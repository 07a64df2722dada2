"""The MCP server over stdio, one JSON-RPC message per line (``chronos mcp``, and each session
joined over a folder's socket).

A reader thread keeps reading stdin while a call runs, so ``notifications/cancelled`` stops the
call it names at once (it rolls back, and gets no reply, as the spec asks); a request cancelled
before it started is skipped. Replies go out in order on stdout, which carries protocol messages
only. A line over the limit (8 MB) is read past without being held, and answered with an error.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from typing import Any, BinaryIO

from ..operations.registry import Caller
from ..storage.db import Database
from .core import (
    CANCELLED,
    INVALID_REQUEST,
    MAX_MESSAGE,
    MAX_ROWS,
    Server,
    encode,
    rpc_error,
)

TOO_LONG = b"<a line over the limit>"  # (the reader's mark, compared by identity)


def serve(server: Server, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Read messages until stdin ends; answer each on stdout, in order."""
    lines: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    reader = threading.Thread(target=_read, args=(server, stdin, lines), daemon=True)
    reader.start()
    writing = threading.Lock()  # (a call's progress notes come from its own ticker thread too)

    def send(message: dict) -> None:
        with writing:
            stdout.write(encode(message))
            stdout.flush()

    server.notify = send
    while True:
        line = lines.get()
        if line is None:
            return
        reply: dict | None
        if line is TOO_LONG:
            reply = rpc_error(
                None,
                INVALID_REQUEST,
                f"Invalid request: a message may be at "
                f"most {MAX_MESSAGE // (1024 * 1024)} MB; this one is longer",
            )
        else:
            reply = server.answer_line(line)
        if reply is not None:
            send(reply)
        server.between_messages()


def _read(server: Server, stdin: BinaryIO, lines: queue.SimpleQueue) -> None:
    """The reader thread: lines to the loop; a cancel acted on as soon as it is read."""
    try:
        while True:
            line = stdin.readline(MAX_MESSAGE + 1)
            if not line:
                break
            if len(line) > MAX_MESSAGE and not line.endswith(b"\n"):
                skip_rest_of_line(stdin)
                lines.put(TOO_LONG)
            elif line.strip():
                if CANCELLED.encode() in line:
                    _cancel_from(server, line)
                lines.put(line)
    except (OSError, ValueError):
        pass  # stdin closed under us: the loop ends as at end of input
    finally:
        lines.put(None)


def _cancel_from(server: Server, line: bytes) -> None:
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return
    if isinstance(message, dict) and message.get("method") == CANCELLED:
        params = message.get("params")
        if isinstance(params, dict) and "requestId" in params:
            server.cancel(params["requestId"])


def skip_rest_of_line(stdin: BinaryIO) -> None:
    """Read past the rest of an over-long line, a block at a time, keeping none of it."""
    while True:
        block = stdin.readline(1024 * 1024)
        if not block or block.endswith(b"\n"):
            return


def session_caller(
    db: Database,
    allow_merge: bool,
    agent: str | None,
    max_query_ms: int | None,
    max_result_chars: int,
) -> Caller:
    """Who the session acts as: the named agent (``--agent`` wins), the database's own user
    (``--allow-merge``), else safe mode, named for its session (``safe:<6 hex digits>``)."""
    limits: dict[str, Any] = {
        "max_rows": MAX_ROWS,
        "max_chars": max_result_chars,
        "max_query_ms": max_query_ms,
    }
    if agent is not None:
        return Caller.for_agent(db, agent, **limits)
    if allow_merge:
        return Caller(name="owner", mode="owner", **limits)
    # (os.urandom is what secrets.token_hex reads; secrets would import random, hmac, hashlib)
    return Caller(name=f"safe:{os.urandom(3).hex()}", mode="safe", **limits)
