"""Merge checks: SQL queries every merge's result must find nothing in (``_chronos_merge_checks``).

A check is one read-only SELECT; the rows it finds are what is wrong. A merge runs, inside its
own transaction and on the merged result, every check whose tables it touches (every check
without ``tables``); rows found refuse the merge for everyone (23514), and nothing of it stays.
Each check runs within its ``timeout_ms``: one that doesn't finish refuses the merge too.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import apsw

from ... import errors, names
from ...errors import ChronosError
from ..fetch import all_rows

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_merge_checks(
    name TEXT PRIMARY KEY COLLATE NOCASE,
    query TEXT NOT NULL,
    tables TEXT,                       -- a JSON array of table names; NULL: every merge
    timeout_ms INTEGER NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID;
"""

DEFAULT_TIMEOUT_MS = 1000
CHECK_VIOLATION = "23514"


@dataclass(frozen=True)
class MergeCheck:
    name: str
    query: str
    tables: tuple[str, ...] | None
    timeout_ms: int
    created: float

    def applies_to(self, touched: set[str]) -> bool:
        """Whether a merge touching these tables (lower case) runs it."""
        return self.tables is None or any(t.lower() in touched for t in self.tables)


def _row(r: tuple) -> MergeCheck:
    tables = tuple(json.loads(r[2])) if r[2] is not None else None
    return MergeCheck(r[0], r[1], tables, r[3], r[4])


def listing(conn: apsw.Connection) -> list[MergeCheck]:
    rows = all_rows(
        conn.execute(
            "select name, query, tables, timeout_ms, created from main._chronos_merge_checks "
            "order by name"
        )
    )
    return [_row(r) for r in rows]


def put(
    conn: apsw.Connection,
    name: str,
    query: str,
    tables: list[str] | None,
    timeout_ms: int,
) -> tuple[MergeCheck, bool]:
    """Create the check, or replace the one of that name (in the caller's write transaction);
    whether one was replaced."""
    replaced = bool(
        all_rows(conn.execute("select 1 from main._chronos_merge_checks where name = ?", (name,)))
    )
    if not replaced:
        names.check(name, "a merge check's name")
    conn.execute(
        "insert or replace into main._chronos_merge_checks(name, query, tables, timeout_ms, "
        "created) values (?, ?, ?, ?, ?)",
        (name, query, json.dumps(tables) if tables else None, timeout_ms, time.time()),
    )
    return next(c for c in listing(conn) if c.name.lower() == name.lower()), replaced


def drop(conn: apsw.Connection, name: str) -> None:
    conn.execute("delete from main._chronos_merge_checks where name = ?", (name,))
    if not conn.changes():
        names = ", ".join(c.name for c in listing(conn)) or "none"
        raise ChronosError(
            f"no merge check {name} (merge checks: {names}; SHOW MERGE CHECKS lists them)",
            errors.NOT_FOUND,
        )


def found_text(columns: list[str], rows: list[tuple], most: int = 3) -> str:
    """What a check found, as a message names it: ``(id = 1), (id = 2) and 3 more``."""
    shown = [
        "("
        + ", ".join(
            f"{c} = {v!r}" if isinstance(v, str) else f"{c} = {v}"
            for c, v in zip(columns, row, strict=False)
        )
        + ")"
        for row in rows[:most]
    ]
    more = len(rows) - most
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
