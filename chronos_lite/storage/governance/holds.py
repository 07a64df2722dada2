"""What a world is held to at its merge that its rows and meta don't show.

* ``_chronos_fork_scopes``: the scope (``may_change``, ``tenant``, ``max_rows``,
  ``max_deletes``) its fork declared. An agent's later set_meta doesn't change it; a person's
  does (a person may take a scope out).
* ``_chronos_taken_over``: the rows a rebase kept the world's version of over a change the
  parent made since the fork (``resolve=ours``, ``rows``). The rebase moves the fork past the
  parent's change, so only this mark says the merge overwrites it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import apsw

SCOPE_KEYS = ("may_change", "tenant", "max_rows", "max_deletes")

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_fork_scopes(
    world INTEGER PRIMARY KEY,   -- _chronos_worlds.id
    scope TEXT NOT NULL          -- JSON: the scope's parts, as its fork's meta declared them
);
CREATE TABLE IF NOT EXISTS _chronos_taken_over(
    world INTEGER NOT NULL,      -- _chronos_worlds.id
    table_id INTEGER NOT NULL,   -- _chronos_tables.id (a rename keeps it)
    row TEXT NOT NULL,           -- the row's id, as table/id spells it
    PRIMARY KEY (world, table_id, row)
) WITHOUT ROWID;
"""


def scope_of(meta: dict) -> dict:
    """The scope parts a meta declares."""
    return {k: meta[k] for k in SCOPE_KEYS if meta.get(k) is not None}


def keep_scope(conn: apsw.Connection, world: int, scope: dict) -> None:
    """The world's scope from now on (an empty one: none)."""
    if scope:
        conn.execute(
            "insert or replace into main._chronos_fork_scopes values (?, ?)",
            (world, json.dumps(scope, ensure_ascii=False)),
        )
    else:
        conn.execute("delete from main._chronos_fork_scopes where world = ?", (world,))


def fork_scope(conn: apsw.Connection, world: int) -> dict:
    row = conn.execute(
        "select scope from main._chronos_fork_scopes where world = ?", (world,)
    ).fetchone()
    return json.loads(row[0]) if row else {}


def take_over(conn: apsw.Connection, world: int, rows: Iterable[tuple[int, str]]) -> None:
    """Mark rows (table id, row id) as kept over the parent's newer change."""
    conn.executemany(
        "insert or ignore into main._chronos_taken_over values (?, ?, ?)",
        [(world, n, row) for n, row in rows],
    )


def release(conn: apsw.Connection, world: int, rows: Iterable[tuple[int, str]] | None) -> None:
    """Clear marks: these rows' (they merged, or the parent's version won), or (None) all."""
    if rows is None:
        conn.execute("delete from main._chronos_taken_over where world = ?", (world,))
        return
    conn.executemany(
        "delete from main._chronos_taken_over where world = ? and table_id = ? and row = ?",
        [(world, n, row) for n, row in rows],
    )


def taken_over(conn: apsw.Connection, world: int) -> set[tuple[int, str]]:
    return {
        (n, row)
        for n, row in conn.execute(
            "select table_id, row from main._chronos_taken_over where world = ?", (world,)
        )
    }


def forget(conn: apsw.Connection, world: int) -> None:
    """An ended world is held to nothing more."""
    conn.execute("delete from main._chronos_fork_scopes where world = ?", (world,))
    release(conn, world, None)
