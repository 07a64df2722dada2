"""Declared readers: who outside the database reads which of main's columns (``_chronos_readers``).

A reader is a name a person gives a program, a report or a team that reads columns (``MARK
READER billing READS (users.email, users.plan) CRITICAL``). Nothing in SQLite can see such a
reader, so a person declares it; ``diff`` with readers names it beside the views, triggers and
indexes SQLite has, and a merge policy's ``critical`` rule holds a merge that changes a column a
critical reader reads. Columns are kept as ``table.column``, spelled as main's schema spells
them when the reader was marked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

import apsw

from ... import errors, names
from ...errors import ChronosError
from ..fetch import all_rows

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_readers(
    name TEXT PRIMARY KEY COLLATE NOCASE,
    columns TEXT NOT NULL,             -- a JSON array of "table.column"
    critical INTEGER NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Reader:
    name: str
    columns: tuple[str, ...]  # "table.column", as main's schema spelled them
    critical: bool
    created: float

    def reads(self, column: str) -> bool:
        """Whether it reads this ``table.column`` (case as SQLite compares names)."""
        return column.lower() in {c.lower() for c in self.columns}


def _row(r: tuple) -> Reader:
    return Reader(r[0], tuple(json.loads(r[1])), bool(r[2]), r[3])


def listing(conn: apsw.Connection) -> list[Reader]:
    rows = all_rows(
        conn.execute(
            "select name, columns, critical, created from main._chronos_readers order by name"
        )
    )
    return [_row(r) for r in rows]


def mark(conn: apsw.Connection, name: str, columns: list[str], critical: bool) -> Reader:
    """Declare a reader (in the caller's write transaction); ``columns`` already checked
    against main's schema. A name already marked is refused: drop it first."""
    found = [r for r in listing(conn) if r.name.lower() == name.lower()]
    if found:
        raise ChronosError(
            f"reader {found[0].name} is already marked (it reads "
            f"{', '.join(found[0].columns)}): DROP READER {found[0].name} first to mark it again",
            errors.IN_USE,
        )
    names.check(name, "a reader's name")
    conn.execute(
        "insert into main._chronos_readers(name, columns, critical, created) values (?, ?, ?, ?)",
        (name, json.dumps(columns), int(critical), time.time()),
    )
    return Reader(name, tuple(columns), critical, time.time())


def drop(conn: apsw.Connection, name: str) -> Reader:
    """Remove a reader (in the caller's write transaction); the reader it was."""
    found = [r for r in listing(conn) if r.name.lower() == name.lower()]
    if not found:
        have = ", ".join(r.name for r in listing(conn)) or "none"
        raise ChronosError(
            f"no reader {name} (readers: {have}; SHOW READERS lists them)", errors.NOT_FOUND
        )
    conn.execute("delete from main._chronos_readers where name = ?", (found[0].name,))
    return found[0]


def reading(conn: apsw.Connection, columns: Iterable[str]) -> list[tuple[Reader, list[str]]]:
    """Each declared reader reading any of these ``table.column`` names, with those it reads
    (as given), by name."""
    wanted = list(columns)
    out = []
    for reader in listing(conn):
        read = [c for c in wanted if reader.reads(c)]
        if read:
            out.append((reader, read))
    return out
