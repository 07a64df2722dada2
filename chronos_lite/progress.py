"""Long work says how far it is: a merge's rows, a file's rows loaded, a text index built, a
simulation's worlds, a backup's pages. The work calls ``report``; whoever started the call
listens (the command line's progress bar on a terminal, an MCP client that sent a
``progressToken``), and when no one does a report costs one lookup.

A report is ``(what, done, total)``: ``what`` says the step as a person reads it ("merging
task-1: writing rows"), ``total`` is None where it isn't known ahead."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[str, int, "int | None"], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("chronos_progress", default=None)
EVERY = 1000  # rows between two reports of a loop over rows


def report(what: str, done: int, total: int | None = None) -> None:
    """Tell the listener, if any, that ``done`` of ``total`` steps of ``what`` are done."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(what, done, total)


def listened() -> bool:
    """Whether anyone listens (work may skip counting what it would report)."""
    return _LISTENER.get() is not None


def current() -> Listener | None:
    """The listener, for work that reports from threads of its own (they don't inherit it)."""
    return _LISTENER.get()


def counted(what: str, items: list, every: int = EVERY) -> Iterator:
    """``items`` one by one, reported every ``every`` and at the end (when someone listens)."""
    if not listened() or len(items) < every:
        yield from items
        return
    total = len(items)
    for done, item in enumerate(items):
        if done % every == 0:
            report(what, done, total)
        yield item
    report(what, total, total)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Reports made in this context (this thread's, and what it starts with its context)
    go to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
