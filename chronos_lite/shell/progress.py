"""A progress bar on the terminal for long work (a table's text index, a simulation's worlds,
any call that runs past a second and a half):
prompt_toolkit's, on stderr, shown only when stderr is a terminal (a script's output stays
clean)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any


class BuildProgress:
    """Called as ``(what, done, total)`` by a build as it goes; ``close()`` at the end.
    ``title``: the bar's title for ``what`` (a text index's build by default)."""

    def __init__(self, title: Callable[[str], str] | None = None) -> None:
        self.bar: Any = None
        self.counter: Any = None
        self.title = title or (lambda what: f"indexing {what} for text search")

    def __call__(self, what: str, done: int, total: int) -> None:
        if self.bar is None:
            if not sys.stderr.isatty():
                return
            self.bar = _opened(self.title(what), sys.stderr)
            self.counter = self.bar(total=total, label=what)
        self.counter.items_completed = done
        self.bar.invalidate()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


class WhileLong:
    """A bar without a total (the time it has run) for a call still running after ``after``
    seconds, on a terminal, until it ends; none while one of ``others`` shows its own bar."""

    def __init__(
        self, title: str, others: list[BuildProgress], after: float = 1.5, stream: Any = None
    ) -> None:
        self.title, self.others = title, others
        self.stream = stream or sys.stderr
        self.bar: Any = None
        self.done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(after, self._show)
        self._timer.daemon = True

    def __enter__(self) -> WhileLong:
        if self.stream.isatty():
            self._timer.start()
        return self

    def _show(self) -> None:
        with self._lock:
            if self.done or any(other.bar is not None for other in self.others):
                return
            self.bar = _opened(self.title, self.stream)
            self.bar(total=None, label="Ctrl-C stops it, nothing changed")

    def __exit__(self, *_exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            self.done = True
            if self.bar is not None:
                self.bar.__exit__(None, None, None)
                self.bar = None


def _opened(title: str, stream: Any) -> Any:
    """prompt_toolkit's bar, shown on ``stream`` (imported only when a bar is shown)."""
    from prompt_toolkit.output import create_output
    from prompt_toolkit.shortcuts import ProgressBar

    bar = ProgressBar(title=title, output=create_output(stream))
    bar.__enter__()
    return bar
