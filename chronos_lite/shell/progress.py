"""A progress bar on the terminal for long work (what a call reports: a merge's rows, a file's
rows loaded, a text index, a simulation's worlds, a backup's pages; and any call that runs past
a second and a half):
prompt_toolkit's, on stderr, shown only when stderr is a terminal (a script's output stays
clean)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


def at_a_terminal(stream: Any, output: Any = None) -> bool:
    """Whether a bar shows: on ``stream`` (stderr), when it and the output (stdout) are both a
    terminal. Output sent to a file or a pipe (a script's) gets none."""
    return bool(stream.isatty() and (output or sys.stdout).isatty())


class Bars:
    """What a call reports as it goes (``chronos_lite.progress``), as prompt_toolkit's bar on
    stderr when it and stdout are a terminal: a line for each step (its ``what``), with how
    many of how many are done; nothing at all off a terminal. ``close()`` at the end of the
    call. ``output``: the stream that must be a terminal too (stdout)."""

    def __init__(
        self, title: str, stream: Any = None, after: float = 0.5, output: Any = None
    ) -> None:
        self.title = title
        self.stream = stream or sys.stderr
        self.output = output
        self.shown_from = time.monotonic() + after  # (a quick call's reports flash no bar)
        self.bar: Any = None
        self.counters: dict[str, Any] = {}
        self._lock = threading.Lock()  # (a simulation reports from its threads)

    def __call__(self, what: str, done: int, total: int | None) -> None:
        with self._lock:
            if self.bar is None:
                if time.monotonic() < self.shown_from:
                    return
                if not at_a_terminal(self.stream, self.output):
                    return
                self.bar = _Opened(self.title, self.stream)
            counter = self.counters.get(what)
            if counter is None:
                counter = self.counters[what] = self.bar.counter(total, what)
            counter.total = total
            counter.items_completed = done
            if total is not None and done >= total:
                counter.done = True
            self.bar.invalidate()

    def close(self) -> None:
        with self._lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


class WhileLong:
    """A bar without a total (the time it has run) for a call still running after ``after``
    seconds, on a terminal, until it ends; none while one of ``others`` shows its own bar."""

    def __init__(
        self,
        title: str,
        others: list[Bars],
        after: float = 1.5,
        stream: Any = None,
        output: Any = None,
    ) -> None:
        self.title, self.others = title, others
        self.stream = stream or sys.stderr
        self.output = output
        self.bar: Any = None
        self.done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after, self._show)
        self._timer.daemon = True

    def __enter__(self) -> WhileLong:
        if at_a_terminal(self.stream, self.output):
            self._timer.start()
        return self

    def _show(self) -> None:
        with self._lock:
            if self.done or any(other.bar is not None for other in self.others):
                return
            self.bar = _Opened(self.title, self.stream)
            self.bar.counter(None, "Ctrl-C stops it, nothing changed")

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            self.done = True
            if self.bar is not None:
                self.bar.close()
                self.bar = None


class _Opened:
    """prompt_toolkit's bar, shown on ``stream`` (imported only when a bar is shown)."""

    def __init__(self, title: str, stream: Any) -> None:
        from prompt_toolkit.input import create_pipe_input
        from prompt_toolkit.output import create_output
        from prompt_toolkit.output.vt100 import Vt100_Output
        from prompt_toolkit.shortcuts import ProgressBar

        # No keys read from stdin (a pipe, or the data being loaded): an input nothing writes
        # to (Ctrl-C is the terminal's signal, as without a bar).
        self.keys = create_pipe_input()
        output = create_output(stream)
        if isinstance(output, Vt100_Output):
            output.enable_cpr = False  # (the terminal's answer would reach stdin, unread)
        self.bar = ProgressBar(title=title, output=output, input=self.keys.__enter__())
        self.bar.__enter__()

    def counter(self, total: int | None, label: str) -> Any:
        return self.bar(total=total, label=label)

    def invalidate(self) -> None:
        self.bar.invalidate()

    def close(self) -> None:
        self.bar.__exit__(None, None, None)
        self.keys.__exit__(None, None, None)
