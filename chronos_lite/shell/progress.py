"""A progress bar on the terminal for a long build (a table's text index): prompt_toolkit's,
on stderr, shown only when stderr is a terminal (a script's output stays clean)."""

from __future__ import annotations

import sys
from typing import Any


class BuildProgress:
    """Called as ``(what, done, total)`` by a build as it goes; ``close()`` at the end."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.counter: Any = None

    def __call__(self, what: str, done: int, total: int) -> None:
        if self.bar is None:
            if not sys.stderr.isatty():
                return
            from prompt_toolkit.output import create_output
            from prompt_toolkit.shortcuts import ProgressBar

            self.bar = ProgressBar(
                title=f"indexing {what} for text search", output=create_output(sys.stderr)
            )
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
