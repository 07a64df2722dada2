"""Long work shows a bar on a terminal and nothing in a pipe, through the real `chronos`
command (stderr a pseudo-terminal)."""

from __future__ import annotations

import os
import pty
import subprocess
import threading

from helpers import CHRONOS, run_cli


def _run_on_terminal(*args: object) -> tuple[int, str, str]:
    """The command with stdout and stderr a terminal: its exit code, and what the terminal
    got (both)."""
    master, slave = pty.openpty()
    got: list[bytes] = []

    def read() -> None:
        while True:
            try:
                block = os.read(master, 65536)
            except OSError:  # (the other end closed)
                return
            if not block:
                return
            got.append(block)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc = subprocess.run([CHRONOS, *map(str, args)], stdout=slave, stderr=slave, timeout=120)
    finally:
        os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, "", b"".join(got).decode(errors="replace")


def _shop(tmp_path, rows: int):
    shop = tmp_path / "shop"
    run_cli("init", shop)
    run_cli(shop, "sql", "create table t(id integer primary key, v int)")
    run_cli(
        shop,
        "sql",
        "with recursive s(x) as (select 1 union all select x + 1 from s where x < "
        f"{rows}) insert into t select x, x from s",
    )
    run_cli(shop, "fork", "w")
    run_cli(shop, "sql", "-b", "w", "update t set v = v + 1")
    return shop


def test_a_long_merge_shows_its_steps_on_a_terminal(tmp_path):
    shop = _shop(tmp_path, 40_000)
    code, _out, terminal = _run_on_terminal(shop, "merge", "w")
    assert code == 0 and "merged 40000 changes from w into main" in terminal
    assert "writing rows" in terminal or "reading its changes" in terminal


def test_none_when_the_output_goes_to_a_file(tmp_path):
    shop = _shop(tmp_path, 40_000)
    master, slave = pty.openpty()
    try:
        with open(tmp_path / "out.txt", "w") as out:
            proc = subprocess.run(
                [CHRONOS, str(shop), "merge", "w"], stdout=out, stderr=slave, timeout=120
            )
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    try:
        shown = os.read(master, 65536)
    except OSError:  # (nothing was written: the read would block, or the end closed)
        shown = b""
    os.close(master)
    assert proc.returncode == 0 and shown == b""
    assert (tmp_path / "out.txt").read_text() == "merged 40000 changes from w into main\n"


def test_nothing_of_it_in_a_pipe(tmp_path):
    shop = _shop(tmp_path, 5_000)
    proc = run_cli(shop, "merge", "w")
    assert proc.stdout == "merged 5000 changes from w into main\n" and proc.stderr == ""
