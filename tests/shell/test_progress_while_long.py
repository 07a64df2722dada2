"""A call that runs past a second and a half shows a bar on a terminal (the time it has run),
and none when it ends sooner, when stderr isn't a terminal, or while a bar of its own shows."""

from __future__ import annotations

import io
import time

import pytest

from chronos_lite import progress
from chronos_lite.shell.progress import Bars, WhileLong


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:  # (prompt_toolkit asks; a pipe's end would do)
        raise io.UnsupportedOperation


@pytest.fixture
def terminal(monkeypatch):
    seen: list[object] = []

    class Bar:  # (prompt_toolkit's ProgressBar, as far as WhileLong uses it)
        def __init__(self, title: str, output: object, input: object = None) -> None:
            seen.append(title)

        def __enter__(self):
            return self

        def __exit__(self, *exc: object) -> None:
            seen.append("closed")

        def __call__(self, total: object, label: str) -> Counter:
            seen.append((total, label))
            return Counter()

        def invalidate(self) -> None:
            pass

    class Counter:
        total: object = None
        items_completed = 0
        done = False

    import prompt_toolkit.output
    import prompt_toolkit.shortcuts

    monkeypatch.setattr(prompt_toolkit.shortcuts, "ProgressBar", Bar)
    monkeypatch.setattr(prompt_toolkit.output, "create_output", lambda stream: None)
    return seen


def test_a_long_call_shows_a_bar_until_it_ends(terminal):
    with WhileLong("merge running", [], after=0.05, stream=Terminal(), output=Terminal()) as long:
        time.sleep(0.5)
        assert long.bar is not None
    assert long.bar is None
    assert terminal == ["merge running", (None, "Ctrl-C stops it, nothing changed"), "closed"]


def test_a_short_call_shows_none(terminal):
    with WhileLong("get running", [], after=5, stream=Terminal(), output=Terminal()):
        pass
    assert terminal == []


def test_none_while_the_call_shows_its_own(terminal):
    own = Bars("index")
    own.bar = object()  # (a text index's bar is showing)
    long = WhileLong("index running", [own], after=0.05, stream=Terminal(), output=Terminal())
    with long:
        time.sleep(0.3)
        assert long.bar is None
    assert terminal == []


def test_none_off_a_terminal(terminal):
    with WhileLong("merge running", [], after=0.01, stream=io.StringIO()) as long:
        time.sleep(0.2)
        assert long.bar is None
    assert terminal == []


def test_what_a_call_reports_shows_a_line_a_step(terminal):
    bars = Bars("merge", stream=Terminal(), after=0, output=Terminal())
    with progress.listening(bars):
        progress.report("merging w: reading its changes", 1000)
        progress.report("merging w into main: writing rows", 0, 2000)
        progress.report("merging w into main: writing rows", 2000, 2000)
    assert bars.counters["merging w into main: writing rows"].done
    assert bars.counters["merging w into main: writing rows"].items_completed == 2000
    bars.close()
    assert terminal == [
        "merge",
        (None, "merging w: reading its changes"),
        (2000, "merging w into main: writing rows"),
        "closed",
    ]


def test_no_bar_and_no_listener_off_a_terminal(terminal):
    bars = Bars("merge", stream=io.StringIO())
    with progress.listening(bars):
        progress.report("loading rows", 1000)
    assert bars.bar is None and terminal == []
    assert not progress.listened()  # (the call's listener goes with it)


def test_none_when_the_output_goes_to_a_file(terminal):
    bars = Bars("merge", stream=Terminal(), after=0, output=io.StringIO())
    bars("merging w into main: writing rows", 10, 20)
    with WhileLong("merge running", [], after=0.01, stream=Terminal(), output=io.StringIO()):
        time.sleep(0.1)
    assert bars.bar is None and terminal == []
