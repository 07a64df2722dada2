"""A ``chronos mcp`` whose folder another process hosts: it says who it is over the folder's
socket, then carries the client's lines to the host and the replies back, unchanged.

The client's lines are read by one thread (``Feed``) and handed to wherever the session is
served now: the host, or, once the host has stopped, this process itself. A request the host
had not answered when it stopped gets an error saying so (it may have run), and the session
goes on: the next host (or this process) gets the client's ``initialize`` again, so the
protocol version stays as negotiated.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import ChronosError
from .core import CANCELLED, INTERNAL, MAX_MESSAGE, encode, rpc_error
from .stdio import skip_rest_of_line

TRACKED = 1024 * 1024  # lines up to this long have their request ids followed
REPLY_ID = re.compile(rb'^\{"jsonrpc":"2\.0","id":("(?:[^"\\]|\\.)*"|-?\d+|null)')
Sink = Callable[[bytes], None]


@dataclass
class Joined:
    sock: socket.socket
    replies: BinaryIO  # the host's lines
    host: str  # who hosts: "the shell (pid 412)"


def handshake(sock: socket.socket, hello: dict) -> Joined:
    """Say who this session is; the host's refusal raises (its code kept)."""
    sock.sendall(json.dumps(hello).encode() + b"\n")
    replies = sock.makefile("rb")
    try:
        answer = json.loads(replies.readline(64 * 1024) or b"null")
    except (ValueError, UnicodeDecodeError):
        answer = None
    if not isinstance(answer, dict) or "joined" not in answer:
        replies.close()
        error = answer.get("error") if isinstance(answer, dict) else None
        code = answer.get("code") if isinstance(answer, dict) else None
        raise ChronosError(str(error or "the folder's host didn't answer"), str(code or ""))
    sock.settimeout(None)
    return Joined(sock, replies, f"{answer['joined']} (pid {answer.get('pid')})")


class Feed:
    """The client's lines, read on a thread of their own and given to the current sink; while
    there is none (the session moving), they wait."""

    def __init__(self, stdin: BinaryIO) -> None:
        self.stdin = stdin
        self.initialize: bytes | None = None  # the client's initialize line, to give again
        self.pending: dict[Any, None] = {}  # request ids sent to a host, not answered yet
        self.ended = False  # the client's input ended
        self._ready = threading.Condition()
        self._sink: Sink | None = None
        self._end: Callable[[], None] | None = None
        self._track = False
        threading.Thread(target=self._read, daemon=True, name="chronos-feed").start()

    def attach(self, sink: Sink, end: Callable[[], None], track: bool) -> None:
        """Lines go to ``sink`` from now on (``end`` at the end of input); ``track``: follow
        request ids (a host's replies may never come)."""
        with self._ready:
            self._sink, self._end, self._track = sink, end, track
            if self.ended:
                end()
            self._ready.notify_all()

    def detach(self) -> list[Any]:
        """The sink is gone; the ids it never answered."""
        with self._ready:
            self._sink = self._end = None
            lost, self.pending = list(self.pending), {}
            return lost

    def answered(self, reply: bytes) -> None:
        found = REPLY_ID.match(reply)
        if found:
            with self._ready:
                self.pending.pop(json.loads(found.group(1)), None)

    def _read(self) -> None:
        try:
            while True:
                line = self.stdin.readline(MAX_MESSAGE + 1)
                if not line:
                    break
                if len(line) > MAX_MESSAGE and not line.endswith(b"\n"):
                    # (its first part and a newline: the host's reader sees it is too long)
                    skip_rest_of_line(self.stdin)
                    line += b"\n"
                self._give(line)
        except (OSError, ValueError):
            pass
        with self._ready:
            self.ended = True
            if self._end is not None:
                self._end()

    def _give(self, line: bytes) -> None:
        while True:
            with self._ready:
                while self._sink is None:
                    self._ready.wait()
                sink = self._sink
                ident = self._follow(line) if self._track else None
            try:  # (not under the lock: the replies must go on being read meanwhile)
                sink(line)
                return
            except OSError:  # the host went away as the line went out: to the next one
                with self._ready:
                    self.pending.pop(ident, None)
                    if self._sink is sink:
                        self._sink = None

    def _follow(self, line: bytes) -> Any:
        """Note a request going to a host: its id (returned), and the client's initialize."""
        if len(line) > TRACKED:
            return None
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        if not isinstance(message, dict) or "method" not in message:
            return None
        params = message.get("params")
        if message["method"] == CANCELLED and isinstance(params, dict):
            cancelled = params.get("requestId")
            if isinstance(cancelled, str | int):
                self.pending.pop(cancelled, None)  # (no reply will come)
        if "id" not in message:
            return None
        if message["method"] == "initialize":
            self.initialize = line
        ident = message["id"]
        if isinstance(ident, str | int) and not isinstance(ident, bool):
            self.pending[ident] = None
            return ident
        return None


def relay(joined: Joined, feed: Feed, stdout: BinaryIO) -> bool:
    """Carry the session through the host until the client's input ends (True) or the host
    stops (False: the calls it had in flight are answered with an error here)."""
    sock = joined.sock

    def end() -> None:
        try:
            sock.shutdown(socket.SHUT_WR)  # (the host answers what it has, then closes)
        except OSError:
            pass

    feed.attach(sock.sendall, end, track=True)
    try:
        for reply in joined.replies:
            feed.answered(reply)
            stdout.write(reply)
            stdout.flush()
    except OSError:
        pass
    finally:
        joined.replies.close()
        sock.close()
    lost = feed.detach()
    if feed.ended and not lost:
        return True
    for ident in lost:
        stdout.write(
            encode(
                rpc_error(
                    ident,
                    INTERNAL,
                    f"{joined.host}, which served this session, stopped during this call: it "
                    "may have run (read the branch or history before calling again); the "
                    "session goes on",
                )
            )
        )
    stdout.flush()
    return feed.ended
