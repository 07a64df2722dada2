"""``notifications/progress`` for a call whose request carried a ``progressToken`` (MCP's
progress utility): what the call reports as it goes (``chronos_lite.progress``: a merge's rows,
a simulation's worlds, a text index), and, until it reports anything, the seconds it has run,
once a second. At most five a second; none after the reply.

Each notification's ``progress`` is larger than the last, as the spec asks, across the call's
steps: a step's count goes on from where the previous step (or the seconds) left off, and
``total`` is given while a step's total is known."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

PROGRESS = "notifications/progress"
HEARTBEAT = 1.0  # seconds between notifications while the call reports nothing
LEAST_GAP = 0.2  # seconds at least between two notifications (a fast loop sends few)


def token_of(params: dict) -> str | int | None:
    """The request's progress token (params._meta.progressToken); None: none, or not a string
    or an integer."""
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(token, bool) or not isinstance(token, str | int):
        return None
    return token


class Notes:
    """The progress notifications of one call; ``close()`` before its reply is sent."""

    def __init__(self, token: str | int, send: Callable[[dict], None]) -> None:
        self.token, self.send = token, send
        self.began = time.monotonic()
        self.sent_at = self.began - LEAST_GAP
        self.last: float = 0  # the last progress sent
        self.reached: float = 0  # the last progress reported (sent or not)
        self.base: float = 0  # where the current step's count starts
        self.step: str | None = None
        self.reported = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    def __call__(self, what: str, done: int, total: int | None) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            self.reported = True
            if what != self.step:
                self.step, self.base = what, max(self.reached, self.last)
            value = self.base + done
            self.reached = max(self.reached, value)
            finished = total is not None and done >= total
            if time.monotonic() - self.sent_at < LEAST_GAP and not finished:
                return
            if value <= self.last:
                return
            whole = None if total is None else self.base + total
            self._note(value, whole, f"{what}: {done:,}" + (f" of {total:,}" if total else ""))

    def _tick(self) -> None:
        while not self._stop.wait(HEARTBEAT):
            with self._lock:
                if self._stop.is_set() or self.reported:
                    return
                seconds = int(time.monotonic() - self.began)
                if seconds > self.last:
                    self._note(seconds, None, f"running for {seconds} s")

    def _note(self, value: float, total: float | None, message: str) -> None:
        params: dict[str, Any] = {"progressToken": self.token, "progress": value}
        if total is not None:
            params["total"] = total
        params["message"] = message
        self.last, self.sent_at = value, time.monotonic()
        try:
            self.send({"jsonrpc": "2.0", "method": PROGRESS, "params": params})
        except (OSError, ValueError):
            self._stop.set()  # (the client went away: the reply will fail as well)

    def close(self) -> None:
        with self._lock:
            self._stop.set()
