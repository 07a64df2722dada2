"""Schema changes made on a world, and the schema a branch has.

The changes: CREATE TABLE, ALTER TABLE ... ADD COLUMN, ... RENAME TO, ... RENAME COLUMN, ...
DROP COLUMN, DROP TABLE; CREATE [UNIQUE] INDEX, DROP INDEX, CREATE VIEW, DROP VIEW, CREATE
TRIGGER, DROP TRIGGER.

A world's schema is main's, plus the changes the world made, plus those its ancestors made
before it forked (kept as ops in ``_chronos_schema``). Every read and write path then works
unchanged on the world's tables:

* A table a world creates is a real, empty table in the file under an internal name
  (``_chronos_wt_<n>``), with the usual history and overlay; the world's rows live in the
  overlay like any world row. Merged into main, it is renamed to its name and gets its rows.
* A column a world adds is a column of the table's overlay and history; main's rows read its
  default in the world. Merged into main, main's table gets the column.
* A table a world renames is read under its new name; a column it drops is left out of its
  views (the overlay keeps it, unwritten). A column it renames keeps its storage name (main's,
  in main's table, its history, the overlay: ``Column.stored``); the world's views show it
  under the new one. Merged into main, main's table is renamed, loses the column, or renames it
  (and the storage follows main's name, as for any rename on main).
* A table a world drops disappears from the world's views. Merged into main, it is dropped,
  unless main changed its rows since the fork (a conflict).

* An index, a view or a trigger a world makes or drops is kept as its statement: the world's
  schema is main's with the world's statements replayed on it, by SQLite, in a scratch
  database (``branch_schema``). The world's rules (a UNIQUE index holds at once), triggers and
  views are read from there. Merged into main, the statements run on main.

A merge into a world moves the ops to that world.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import apsw

from ...sqltext import quote_ident
from .. import shadow, worlds
from ..fetch import all_rows, one_row
from ..schema.catalog import PREFIX, Column, TableInfo, generated_expressions, table_info
from ..schema.constraints import UserTrigger, read_rules, read_triggers

DROPPED = f"{PREFIX}dropped:"  # a world's placeholder for a table it dropped reads this (absent)
WORKS = (
    "a world can CREATE and DROP a TABLE, an INDEX, a VIEW or a TRIGGER, and ALTER TABLE ... "
    "ADD COLUMN, RENAME TO, RENAME COLUMN or DROP COLUMN (they merge as schema changes)"
)
# The ops kept as their statement: (kind, what it makes or drops)
STATEMENT_OPS = {
    "index": "index",
    "drop_index": "index",
    "view": "view",
    "drop_view": "view",
    "trigger": "trigger",
    "drop_trigger": "trigger",
}


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
        if self.kind in STATEMENT_OPS:
            return self.detail["sql"]
        name = quote_ident(table or self.name)
        if self.kind == "create":
            return f"CREATE TABLE {name}{self.detail['rest']}"
        if self.kind == "add":
            return f"ALTER TABLE {name} ADD COLUMN {self.detail['column_sql']}"
        if self.kind == "rename":  # (by the names then: a sequence that replays)
            to = quote_ident(self.detail["to"])
            return f"ALTER TABLE {quote_ident(self.name)} RENAME TO {to}"
        if self.kind == "drop_column":
            column = quote_ident(self.detail["column"])
            return f"ALTER TABLE {quote_ident(self.name)} DROP COLUMN {column}"
        if self.kind == "rename_column":  # (by the names then, in the statement's words)
            return f"ALTER TABLE {quote_ident(self.name)}{self.detail['rest']}"
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


def signature(conn: apsw.Connection) -> tuple[int, int]:
    """Moves on whenever any op is made, moved or removed (ids are never reused; a removal
    changes the count)."""
    return one_row(
        conn.execute(
            "select (select coalesce(max(seq), 0) from main.sqlite_sequence "
            "where name = '_chronos_schema'), (select count(*) from main._chronos_schema)"
        )
    )


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
        elif op.kind in STATEMENT_OPS:
            continue  # (read from the branch's scratch schema)
        elif op.kind == "rename":  # (the world reads the same storage under another name)
            n, t = out.pop(name)
            to = op.detail["to"]
            out[to] = (n, replace(t, name=to, stored_as=t.stored))
        elif op.kind == "drop_column":
            n, t = out[name]
            gone = op.detail["column"].lower()
            kept = tuple(c for c in t.columns if c.name.lower() != gone)
            lost = {c.name for c in t.columns if c.name.lower() == gone}
            out[name] = (n, replace(t, columns=kept, world_columns=t.world_columns - lost))
        elif op.kind == "rename_column":
            n, t = out[name]
            out[name] = (n, renamed_column(t, op.detail["column"], op.detail["to"]))
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


def renamed_column(t: TableInfo, old: str, new: str) -> TableInfo:
    """A table whose column ``old`` the world calls ``new`` (stored under its name as before;
    unchanged if it has no such column: main renamed or dropped it since)."""
    found = next((c for c in t.columns if c.name.lower() == old.lower()), None)
    if found is None:
        return t

    def swap(name: str) -> str:
        return new if name == found.name else name

    stored = found.stored or found.name
    col = replace(found, name=new, stored="" if stored == new else stored)
    extra = t.world_columns
    if found.name in extra:  # (a column the world added: stored under the name it was added as)
        extra = (extra - {found.name}) | {new}
    return replace(
        t,
        columns=tuple(col if c is found else c for c in t.columns),
        pk=tuple(swap(c) for c in t.pk),
        uniques=tuple(tuple(swap(c) for c in u) for u in t.uniques),
        unique_constraints=tuple(tuple(swap(c) for c in u) for u in t.unique_constraints),
        world_columns=extra,
    )


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


# --- a branch's whole schema, as SQLite makes it ---------------------------------------------


@dataclass(frozen=True)
class BranchSchema:
    """What a branch's connection is placed on: its tables (each with its rules), the app's
    triggers, its views (in the order they can be made), and the names main has that the
    branch dropped."""

    tables: dict[str, tuple[int, TableInfo]]
    triggers: tuple[UserTrigger, ...] = ()
    views: tuple[tuple[str, str], ...] = ()
    hidden: tuple[str, ...] = ()
    indexes: tuple[tuple[str, str], ...] = ()  # (table, CREATE INDEX statement)

    def indexes_on(self, table: str) -> list[str]:
        return [sql for on, sql in self.indexes if on.lower() == table.lower()]


def main_objects(conn: apsw.Connection) -> list[tuple[str, str, str]]:
    """Main's own schema statements (chronos' and SQLite's objects, and the shadow tables of
    virtual tables, left out): (type, name, sql), in the order they were made."""
    shadows = {
        r[0]
        for r in conn.execute(
            "select name from pragma_table_list where schema = 'main' and type = 'shadow'"
        )
    }
    rows = all_rows(
        conn.execute(
            "select type, name, sql from main.sqlite_schema where sql is not null "
            "and name not like '\\_chronos\\_%' escape '\\' "
            "and name not like 'sqlite\\_%' escape '\\' order by rowid"
        )
    )
    return [r for r in rows if r[1] not in shadows]


def scratch(conn: apsw.Connection, ops: list[Op]) -> apsw.Connection:
    """An empty database holding main's schema with ``ops`` replayed on it: the branch's
    schema, as SQLite makes it. (An op that no longer applies, main having dropped its table
    since, say, is left out, as the world's tables leave it out.)"""
    out = apsw.Connection(":memory:")
    objects = main_objects(conn)
    order = {"table": 0, "index": 1, "view": 2, "trigger": 3}
    pending = sorted(objects, key=lambda o: order.get(o[0], 4))
    while pending:  # (views and triggers on views made before what they name: retried)
        failed = []
        for kind, name, sql in pending:
            try:
                out.execute(sql)
            except apsw.Error:
                failed.append((kind, name, sql))
        if len(failed) == len(pending):
            break
        pending = failed
    for op in ops:
        try:
            out.execute(op.sql())
        except apsw.Error:
            pass
    return out


def branch_schema(
    conn: apsw.Connection,
    main_tables: dict[str, tuple[int, TableInfo]],
    ops: list[Op],
    tables: dict[str, tuple[int, TableInfo]],
) -> BranchSchema:
    """A world's schema: its tables (``tables``: main's with ``ops`` applied) with the rules,
    triggers and views of main's schema with ``ops`` replayed."""
    db = scratch(conn, ops)
    try:
        ruled = {}
        for name, (n, t) in tables.items():
            row = db.execute(
                "select name, sql from sqlite_schema where type = 'table' "
                "and name = ? collate nocase",
                (name,),
            ).fetchone()
            if row is not None:  # (its rules as the branch has them, by the branch's names)
                t = replace(t, rules=read_rules(db, "main", row[0], row[1]), sql=row[1])
                if t.renamed and t.generated:  # (their expressions by the branch's names too)
                    found = generated_expressions(row[1])
                    cols = tuple(
                        replace(c, expression=found.get(c.name, c.expression)) for c in t.columns
                    )
                    t = replace(t, columns=cols)
            ruled[name] = (n, t)
        views = tuple(
            (name, sql)
            for name, sql in db.execute(
                "select name, sql from sqlite_schema where type = 'view' order by rowid"
            )
        )
        triggers = tuple(read_triggers(db))
        indexes = _indexes(db)
    finally:
        db.close()
    mine = {name.lower() for name in ruled} | {name.lower() for name, _sql in views}
    theirs = list(main_tables) + [name for kind, name, _sql in main_objects(conn) if kind == "view"]
    hidden = tuple(name for name in theirs if name.lower() not in mine)
    return BranchSchema(ruled, triggers, views, hidden, indexes)


def main_schema(conn: apsw.Connection, tables: dict[str, tuple[int, TableInfo]]) -> BranchSchema:
    """Main's schema as a branch's: its tables, the app's triggers and views."""
    views = tuple((name, sql) for kind, name, sql in main_objects(conn) if kind == "view")
    return BranchSchema(tables, tuple(read_triggers(conn)), views, (), _indexes(conn))


def _indexes(conn: apsw.Connection) -> tuple[tuple[str, str], ...]:
    """The app's indexes that have a statement (not those of constraints): (table, sql)."""
    return tuple(
        (table, sql)
        for table, sql in conn.execute(
            "select tbl_name, sql from main.sqlite_schema where type = 'index' and sql is not "
            "null and name not like '\\_chronos\\_%' escape '\\' order by rowid"
        )
    )
