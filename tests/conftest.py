"""Shared fixtures: fresh database folders, and a database with the example's users table.
(What tests share besides fixtures: helpers.py, strategies.py, differential.py, mcp_lines.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

import chronos_lite


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
