"""Schema changes made on a world: CREATE TABLE, ALTER TABLE ... ADD COLUMN, DROP TABLE.

A world's schema is main's, plus the changes the world made, plus those its ancestors made
before it forked (kept as ops in ``_chronos_schema``). Every read and write path then works
unchanged on the world's tables:

* A table a world creates is a real, empty table in the file under an internal name
  (``_chronos_wt_<n>``), with the usual history and overlay; the world's rows live in the
  overlay like any world row. Merged into main, it is renamed to its name and gets its rows.
* A column a world adds is a column of the table's overlay and history; main's rows read its
  default in the world. Merged into main, main's table gets the column.
* A table a world drops disappears from the world's views. Merged into main, it is dropped,
  unless main changed its rows since the fork (a conflict).

A merge into a world moves the ops to that world. Other schema changes (indexes, renames, DROP
COLUMN, views, triggers) run on main.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import apsw

from ..sqltext import quote_ident
from . import shadow, worlds
from .catalog import PREFIX, Column, TableInfo, table_info
from .fetch import all_rows, one_row

DROPPED = f"{PREFIX}dropped:"  # a world's placeholder for a table it dropped reads this (absent)
WORKS = (
    "a world can CREATE TABLE, ALTER TABLE ... ADD COLUMN and DROP TABLE (they merge as "
    "schema changes)"
)


def stored_name(n: int) -> str:
    return f"{PREFIX}wt_{n}"


@dataclass(frozen=True)
class Op:
    id: int
    world: int
    clock: int
    kind: str
    table_id: int
    name: str
    detail: dict

    def sql(self, table: str | None = None) -> str:
        """The statement that makes this change (on a table now named ``table``)."""
        name = quote_ident(table or self.name)
        if self.kind == "create":
            return f"CREATE TABLE {name}{self.detail['rest']}"
        if self.kind == "add":
            return f"ALTER TABLE {name} ADD COLUMN {self.detail['column_sql']}"
        return f"DROP TABLE {name}"


def _ops(conn: apsw.Connection, where: str, args: tuple) -> list[Op]:
    rows = all_rows(
        conn.execute(
            f"select id, world, clock, kind, table_id, name, detail from main._chronos_schema "
            f"where {where} order by id",
            args,
        )
    )
    return [
        Op(op_id, world, clock, kind, table_id, name, json.loads(detail))
        for op_id, world, clock, kind, table_id, name, detail in rows
    ]


def own_ops(conn: apsw.Connection, world_id: int) -> list[Op]:
    return _ops(conn, "world = ?", (world_id,))


def visible_ops(conn: apsw.Connection, world_id: int) -> list[Op]:
    """The ops a world's schema is made of: its own, and each ancestor's from before the fork
    that leads to it."""
    cutoff: dict[int, int | None] = {}
    w: int | None = world_id
    seen_before: int | None = None
    while w is not None:
        cutoff[w] = seen_before
        parent, fork_seq = worlds.parent_and_fork(conn, w)
        seen_before = fork_seq if seen_before is None else min(seen_before, fork_seq)
        w = parent
    marks = ", ".join("?" for _ in cutoff)
    ops = _ops(conn, f"world in ({marks})", tuple(cutoff))
    return [op for op in ops if (before := cutoff[op.world]) is None or op.clock < before]


def signature(conn: apsw.Connection) -> int:
    """Moves on whenever any op is made, moved or removed (ids are never reused)."""
    return one_row(
        conn.execute(
            "select coalesce(max(seq), 0) from main.sqlite_sequence where name = '_chronos_schema'"
        )
    )[0]


def apply_ops(
    conn: apsw.Connection, tables: dict[str, tuple[int, TableInfo]], ops: list[Op]
) -> dict[str, tuple[int, TableInfo]]:
    """Main's tables changed by ``ops``: a world's tables."""
    out = dict(tables)
    for op in ops:
        name = next((k for k, (n, _t) in out.items() if n == op.table_id), None)
        if op.kind == "create":
            t = table_info(conn, stored_name(op.table_id))
            out[op.name] = (
                op.table_id,
                replace(t, name=op.name, stored_as=stored_name(op.table_id), autoincrement=False),
            )
        elif name is None:
            continue  # main dropped the table since: the op has nothing left to change
        elif op.kind == "add":
            n, t = out[name]
            col = Column(**op.detail["column"])
            if col.name not in t.column_names:
                out[name] = (
                    n,
                    replace(
                        t,
                        columns=(*t.columns, col),
                        world_columns=t.world_columns | {col.name},
                    ),
                )
        else:
            del out[name]
    return out


def find_table(tables: dict, name: str) -> tuple[str, int, TableInfo] | None:
    """A table of a branch by name, as SQLite matches names (any case)."""
    for tname, (n, t) in tables.items():
        if tname.lower() == name.lower():
            return tname, n, t
    return None


def remove_table(conn: apsw.Connection, n: int) -> None:
    """A table a world created, gone with everything it had."""
    for table in (stored_name(n), *shadow.shadow_tables(n)):
        conn.execute(f"drop table if exists main.{table}")
    conn.execute("delete from main._chronos_tables where id = ?", (n,))
    conn.execute("delete from main._chronos_counters where table_id = ?", (n,))
    conn.execute("delete from main._chronos_schema where table_id = ?", (n,))


def discard_ops(conn: apsw.Connection, world_id: int) -> None:
    """A world that ends without merging: the tables it created go, its other ops too."""
    for op in own_ops(conn, world_id):
        if op.kind == "create":
            remove_table(conn, op.table_id)
    conn.execute("delete from main._chronos_schema where world = ?", (world_id,))
