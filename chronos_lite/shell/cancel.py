"""Ctrl-C while a call runs: SQLite is interrupted at once, the call fails and rolls back.

Python runs a signal handler only between bytecodes, so while SQLite works (apsw has let go
of the GIL) a handler can't stop it. The signal module's wakeup fd is written by the C-level
handler the moment the signal arrives: a small watcher thread blocked on it interrupts the
database's connections. The Python-level handler, installed only for the call, records the
cancel instead of raising KeyboardInterrupt in the middle of chronos' own rollback.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import apsw

from ..errors import ChronosError

CANCELLED = "57014"  # Postgres' query_canceled
T = TypeVar("T")


class Canceller:
    def __init__(self, interrupt: Callable[[], object]) -> None:
        self._interrupt = interrupt  # stops what the database's connections run
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self.active = False
        self.cancelled = False
        threading.Thread(target=self._watch, name="chronos-ctrl-c", daemon=True).start()

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data:
                os.close(self._read)
                return
            if self.active and signal.SIGINT in data:
                self.cancelled = True
                self._stop()

    def _stop(self) -> None:
        """Interrupt from the watcher, which may wake as the call ends and its connections
        close: then there is nothing left to stop."""
        try:
            self._interrupt()
        except (apsw.Error, ValueError):
            pass

    def _on_sigint(self, _signum: int, _frame: Any) -> None:
        self.cancelled = True
        self._interrupt()

    @contextmanager
    def during_call(self) -> Iterator[Canceller]:
        """Around one call: Ctrl-C interrupts it (only the main thread gets signals)."""
        self.cancelled = False
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        old_handler = signal.signal(signal.SIGINT, self._on_sigint)
        self.active = True
        try:
            yield self
        finally:
            self.active = False
            signal.signal(signal.SIGINT, old_handler)
            signal.set_wakeup_fd(old_fd)

    def close(self) -> None:
        os.close(self._write)  # the watcher reads end-of-file and stops; it closes its end

    def run(self, call: Callable[[], T]) -> T:
        """``call()``, which Ctrl-C stops: it then fails with nothing changed."""
        with self.during_call() as cancel:
            try:
                return call()
            except (ChronosError, apsw.Error) as exc:
                if cancel.cancelled or isinstance(exc, apsw.InterruptError):
                    raise ChronosError(
                        "cancelled: the statement was stopped; nothing changed", CANCELLED
                    ) from None
                raise
