"""What tests in every folder use: the real `chronos` command as a subprocess, and a folder's
file read outside chronos. (Fixtures are in conftest.py; property tests' settings in
strategies.py.)"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

CHRONOS = str(Path(sys.executable).with_name("chronos"))
ROOT = Path(__file__).resolve().parent.parent  # the checkout: chronos_lite/, schemas/, docs/


def run_cli(
    *args: str | os.PathLike, stdin: str | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    """Run the real `chronos` console script."""
    proc = subprocess.run(
        [CHRONOS, *map(str, args)], capture_output=True, text=True, input=stdin, timeout=120
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"chronos {args} exited {proc.returncode}: {proc.stderr}")
    return proc


def file_dump(folder: Path) -> list[str]:
    """Everything in a database folder's file, chronos' own tables included, read outside
    chronos (read-only: opening through chronos would prune and record)."""
    conn = sqlite3.connect(f"file:{folder / 'chronos.db'}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
