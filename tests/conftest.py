"""Shared fixtures: fresh database folders, and the real `chronos` command as a subprocess."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import chronos_lite

CHRONOS = str(Path(sys.executable).with_name("chronos"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "shop"


@pytest.fixture
def db(folder: Path):
    database = chronos_lite.init(folder)
    yield database
    database.close()


@pytest.fixture
def shop(db):
    """A database with the users table of the issue's example and one row."""
    db.sql("create table users(id integer primary key autoincrement, name text, email text unique)")
    db.sql("insert into users(name, email) values ('Ada', 'ada@x.org')")
    return db


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
