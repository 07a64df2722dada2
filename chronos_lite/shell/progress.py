"""A progress bar on the terminal for long work (a table's text index, a simulation's worlds):
prompt_toolkit's, on stderr, shown only when stderr is a terminal (a script's output stays
clean)."""

from __future__ import annotations

import sys
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
            from prompt_toolkit.output import create_output
            from prompt_toolkit.shortcuts import ProgressBar

            self.bar = ProgressBar(title=self.title(what), output=create_output(sys.stderr))
            self.bar.__enter__()
            self.counter = self.bar(total=total, label=what)
        self.counter.items_completed = done
        self.bar.invalidate()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
