"""Ctrl-C in the shell stops what runs (and drops the input at the prompt); Ctrl-D, \\q and
exit leave."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable

import pytest
from prompt_toolkit.input import PipeInput
from terminal import (
    LONG_INSERT,
    LONG_READ,
    STEP,
    names,
    typed,
)

from chronos_lite.shell.session import Shell

# --- 4. Ctrl-C -------------------------------------------------------------------------------


@pytest.fixture
def ctrl_c():
    """Ctrl-C as a terminal sends it: SIGINT to the process, KeyboardInterrupt in the main
    thread (set explicitly: a test runner may have changed the handler)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach only the main thread")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def press_ctrl_c_while_running(shell: Shell) -> Callable[[PipeInput], None]:
    def driver(_inp: PipeInput) -> None:
        assert shell.running.wait(STEP), "the statement never started"
        time.sleep(0.3)  # well into the statement
        os.kill(os.getpid(), signal.SIGINT)

    return driver


@pytest.mark.parametrize("statement", [LONG_INSERT, LONG_READ], ids=["write", "read"])
def test_ctrl_c_cancels_a_long_statement_and_the_shell_goes_on(term, shop, ctrl_c, statement):
    keys = typed(statement, "select count(*) from users;", "\\q")
    assert term.run(keys, press_ctrl_c_while_running(term.shell)) == 0
    assert term.err.getvalue() == "ERROR: cancelled: the statement was stopped; nothing changed\n"
    assert term.out.getvalue().split("\n", 1)[1] == " count(*)\n----------\n        1\n(1 row)\n"
    assert names(shop) == ["Ada"]
    assert not term.shell.running.is_set()


def test_ctrl_c_on_a_world_leaves_the_world_unchanged(term, shop, ctrl_c):
    shop.fork("task-1")
    term.shell.switch("task-1")
    keys = typed(LONG_INSERT, "update users set name = 'Ada L.';", "\\q")
    assert term.run(keys, press_ctrl_c_while_running(term.shell)) == 0
    assert "cancelled" in term.err.getvalue()
    assert term.out.getvalue().endswith("UPDATE 1\n")
    assert names(shop, "task-1") == ["Ada L."]
    assert names(shop) == ["Ada"]


def test_ctrl_c_at_the_prompt_drops_the_input(term):
    assert term.run("select 'typed' as t\x03" + typed("select 2 as two;", "\\q")) == 0
    assert term.out.getvalue().split("\n", 1)[1] == " two\n-----\n   2\n(1 row)\n"
    assert term.err.getvalue() == ""


# --- 5. leaving ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "leave", ["\x04", typed("\\q"), typed("exit"), typed("quit"), typed("EXIT;")]
)
def test_ctrl_d_backslash_q_and_exit_leave_with_0(term, leave):
    # what's typed after leaving isn't run
    assert term.run(typed("select 1 as one;") + leave + typed("select 2 as two;")) == 0
    out = term.out.getvalue()
    assert " one" in out and " two" not in out
    assert term.err.getvalue() == ""


def test_the_end_of_the_input_leaves_with_0(term):
    def hang_up(inp: PipeInput) -> None:
        term.wait_for("(1 row)")
        inp.close()

    assert term.run(typed("select 1 as one;"), hang_up) == 0
