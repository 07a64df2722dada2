"""The real `chronos <folder>` at a real terminal: tmux runs it, the test types and reads the
screen. Skipped only where tmux isn't installed."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import CHRONOS

import chronos_lite

TMUX = shutil.which("tmux")
STEP = 20.0  # seconds a step may take before the test gives up (never asserted on)

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")


def wait_until(check: Callable[[], bool], what: Callable[[], str]) -> None:
    deadline = time.monotonic() + STEP
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what()}")
        time.sleep(0.1)


class Pane:
    """A tmux server of the test's own (a private socket, no config file) with one pane."""

    def __init__(self, socket: str) -> None:
        self.base = [TMUX, "-L", socket, "-f", "/dev/null"]

    def tmux(self, *args: str) -> str:
        proc = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=STEP, check=True
        )
        return proc.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-")

    def type(self, text: str) -> None:
        """Type ``text`` and press Enter. (tmux reads an argument ending in ';' as the end of a
        command unless it is written '\\;'.)"""
        literal = text[:-1] + "\\;" if text.endswith(";") else text
        self.tmux("send-keys", "-t", "t", "-l", literal)
        self.tmux("send-keys", "-t", "t", "Enter")

    def wait(self, check: Callable[[str], bool], what: str) -> str:
        """The screen once ``check`` holds for it."""
        shown = [""]

        def on_screen() -> bool:
            shown[0] = self.screen()
            return check(shown[0])

        wait_until(on_screen, lambda: f"{what}; the screen:\n{shown[0]}")
        return shown[0]

    def wait_for_prompt(self, prompt: str) -> str:
        """The screen once the prompt waits for input on its last line."""
        return self.wait(
            lambda s: s.rstrip("\n").split("\n")[-1] == prompt.rstrip(), f"the prompt {prompt!r}"
        )


def test_the_shell_in_a_terminal(folder: Path, tmp_path: Path):
    db = chronos_lite.init(folder)
    db.sql("create table users(id integer primary key autoincrement, name text, email text unique)")
    db.sql("insert into users(name, email) values ('Ada', 'ada@x.org')")
    db.close()
    command = [
        "env",
        f"PYTHONPATH={os.environ.get('PYTHONPATH', '')}",
        f"XDG_CONFIG_HOME={tmp_path / 'config'}",
        f"XDG_STATE_HOME={tmp_path / 'state'}",
        CHRONOS,
        str(folder),
    ]
    # The pane's shell keeps the exit status (tmux itself may see the end of its pane late).
    status = tmp_path / "status"
    script = f"{shlex.join(command)}; echo $? > {shlex.quote(str(status))}"
    pane = Pane(f"chronos-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        pane.tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "50", script)
        screen = pane.wait_for_prompt("main=> ")
        assert f"{folder}, branch main. \\? for help." in screen

        pane.type("select id, name from users;")
        screen = pane.wait(lambda s: "(1 row)" in s, "the rows")
        assert " id | name\n----+------\n  1 | Ada\n(1 row)\n" in screen

        pane.type("FORK WORLD task-1;")
        pane.wait(lambda s: "created branch task-1" in s, "the fork")
        pane.type("\\c task-1")
        pane.wait_for_prompt("task-1=> ")
        pane.type("update users set name = 'Ada L.' where id = 1;")
        pane.wait(lambda s: "UPDATE 1" in s, "the update")
        pane.type("\\c main")
        pane.wait_for_prompt("main=> ")
        pane.type("MERGE WORLD task-1;")
        pane.wait(lambda s: "merged 1 change from task-1 into main" in s, "the merge")
        pane.wait_for_prompt("main=> ")

        pane.type("\\q")
        wait_until(
            lambda: status.is_file() and status.read_text().endswith("\n"),
            lambda: "the shell to exit",
        )
        assert status.read_text() == "0\n"
    finally:
        subprocess.run([*pane.base, "kill-server"], capture_output=True, timeout=STEP)

    with chronos_lite.open(folder) as db:
        assert db.query("select name from users") == [{"name": "Ada L."}]
        assert db.database.worlds() == []
    history = (tmp_path / "state" / "chronos" / "history").read_text()
    assert "\n+MERGE WORLD task-1;\n" in history
