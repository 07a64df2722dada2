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
from typing import TYPE_CHECKING

import apsw

from .. import errors
from ..errors import ChronosError
from ..statements.sqltext import keywords, name_tokens, quote_ident
from . import shadow
from .catalog import PREFIX, Column, TableInfo, table_info
from .shadow import SEQ, WORLD, history_table, overlay_table

if TYPE_CHECKING:
    from .db import Database, Session, World

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
    rows = conn.execute(
        f"select id, world, clock, kind, table_id, name, detail from main._chronos_schema "
        f"where {where} order by id",
        args,
    ).fetchall()
    return [Op(*r[:6], json.loads(r[6])) for r in rows]


def own_ops(conn: apsw.Connection, world_id: int) -> list[Op]:
    return _ops(conn, "world = ?", (world_id,))


def visible_ops(conn: apsw.Connection, world_id: int) -> list[Op]:
    """The ops a world's schema is made of: its own, and each ancestor's from before the fork
    that leads to it."""
    cutoff: dict[int, int | None] = {}
    w, seen_before = world_id, None
    while w is not None:
        cutoff[w] = seen_before
        parent, fork_seq = conn.execute(
            "select parent, fork_seq from main._chronos_worlds where id = ?", (w,)
        ).fetchone()
        seen_before = fork_seq if seen_before is None else min(seen_before, fork_seq)
        w = parent
    marks = ", ".join("?" for _ in cutoff)
    ops = _ops(conn, f"world in ({marks})", tuple(cutoff))
    return [op for op in ops if cutoff[op.world] is None or op.clock < cutoff[op.world]]


def signature(conn: apsw.Connection) -> int:
    """Moves on whenever any op is made, moved or removed (ids are never reused)."""
    return conn.execute(
        "select coalesce(max(seq), 0) from main.sqlite_sequence where name = '_chronos_schema'"
    ).fetchone()[0]


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


# --- running a schema statement on a world ---------------------------------------------------


def run(db: Database, session: Session, stmt: str) -> str:
    """Make a schema change on the session's world (inside the call's transaction); its tag."""
    words = keywords(stmt, 8)
    if words[:2] == ["CREATE", "TABLE"]:
        tag = _create(db, session, stmt)
    elif words[:2] == ["ALTER", "TABLE"] and "ADD" in words:
        tag = _add_column(db, session, stmt)
    elif words[:2] == ["DROP", "TABLE"]:
        tag = _drop(db, session, stmt)
    else:
        raise ChronosError(
            f"{' '.join(words[:2])} runs on main, not on a world: {WORKS}; make other schema "
            f"changes on main",
            errors.REFUSED,
        )
    db.bump_version(session.conn, session.world)
    db.rebuild_world(session)  # (main's side follows on main's connection, after the commit)
    return tag


def _target(stmt: str, skip: int) -> tuple[str, int, bool]:
    """The table a statement names after ``skip`` words, where its name ends, and whether it
    said IF [NOT] EXISTS."""
    tokens = name_tokens(stmt)
    upper = [w.upper() for w, _, _ in tokens]
    at, guarded = skip, False
    if upper[at : at + 2] == ["IF", "EXISTS"] or upper[at : at + 3] == ["IF", "NOT", "EXISTS"]:
        guarded = True
        at += 3 if upper[at + 1] == "NOT" else 2
    if at >= len(tokens):
        raise ChronosError(f"no table name in: {stmt}")
    name, _start, end = tokens[at]
    if stmt[end:].lstrip().startswith(".") and at + 1 < len(tokens):
        if name.lower() not in ("main", "temp"):
            raise ChronosError(f"a world has no database '{name}': name the table alone")
        name, _start, end = tokens[at + 1]
    if name.lower().startswith(PREFIX):
        raise ChronosError(errors.OWN_TABLES, errors.REFUSED)
    return name, end, guarded


def _find(tables: dict, name: str) -> tuple[str, int, TableInfo] | None:
    for tname, (n, t) in tables.items():
        if tname.lower() == name.lower():
            return tname, n, t
    return None


def _record(
    db: Database, conn: apsw.Connection, world: int, kind: str, n: int, name: str, detail: dict
) -> None:
    conn.execute(
        "insert into main._chronos_schema(world, clock, kind, table_id, name, detail) "
        "values (?, ?, ?, ?, ?, ?)",
        (world, db.tick(conn), kind, n, name, json.dumps(detail)),
    )


def _create(db: Database, session: Session, stmt: str) -> str:
    conn, world = session.conn, session.world
    name, end, guarded = _target(stmt, 2)
    rest = stmt[end:]
    if keywords(rest, 1) == ["AS"]:
        raise ChronosError(
            "CREATE TABLE ... AS SELECT isn't supported on a world: create the table with its "
            "columns, then INSERT INTO ... SELECT"
        )
    if name.lower().startswith("sqlite_"):
        raise ChronosError(f"table names starting sqlite_ are reserved for SQLite: '{name}'")
    if _find(db.tables_for(world, conn), name):
        if guarded:
            return "CREATE TABLE"
        raise ChronosError(f"table {name} already exists on {world.name}", errors.SQL_ERROR)
    scratch = apsw.Connection(":memory:")
    try:  # SQLite's own check of the statement, with its own message
        scratch.execute(f"CREATE TABLE {quote_ident(name)}{rest}")
        columns = table_info(scratch, name).column_names
    except apsw.Error as exc:
        raise errors.from_sqlite(exc) from None
    finally:
        scratch.close()
    conn.execute(
        "insert into main._chronos_tables(name, columns) values (?, ?)", (name, json.dumps(columns))
    )
    n = conn.last_insert_rowid()
    _record(db, conn, world.id, "create", n, name, {"rest": rest})
    conn.execute(f"CREATE TABLE main.{stored_name(n)}{rest}")
    t = table_info(conn, stored_name(n))
    for ddl in shadow.history_ddl(t, n) + shadow.overlay_ddl(t, n) + shadow.world_history_ddl(t, n):
        conn.execute(ddl)
    conn.execute("insert or ignore into main._chronos_counters values (?, 0)", (n,))
    return "CREATE TABLE"


def _add_column(db: Database, session: Session, stmt: str) -> str:
    conn, world = session.conn, session.world
    name, end, _ = _target(stmt, 2)
    found = _find(db.tables_for(world, conn), name)
    if found is None:
        raise ChronosError(f"no such table: {name}", errors.SQL_ERROR)
    tname, n, t = found
    rest = stmt[end:]
    words = name_tokens(rest)
    upper = [w.upper() for w, _, _ in words]
    if upper[:1] != ["ADD"]:
        raise ChronosError(f"ALTER TABLE runs on main, not on a world, except ADD COLUMN: {WORKS}")
    column_sql = rest[words[1][2] if upper[1:2] == ["COLUMN"] else words[0][2] :].strip()
    col = _probe_column(t, column_sql)
    for table in shadow.shadow_tables(n):
        shadow.add_shadow_column(conn, table, col)
    _record(
        db,
        conn,
        world.id,
        "add",
        n,
        tname,
        {"column_sql": column_sql, "column": col.__dict__},
    )
    return "ALTER TABLE"


def _probe_column(t: TableInfo, column_sql: str) -> Column:
    """SQLite's own check of a new column, on a scratch table with the table's columns and a row
    (as the world's table may have rows); the column as SQLite describes it."""
    scratch = apsw.Connection(":memory:")
    try:
        cols = ", ".join(quote_ident(c) for c in t.column_names)
        scratch.execute(f"CREATE TABLE probe({cols}); INSERT INTO probe DEFAULT VALUES")
        scratch.execute(f"ALTER TABLE probe ADD COLUMN {column_sql}")
        return table_info(scratch, "probe").columns[-1]
    except apsw.Error as exc:
        raise errors.from_sqlite(exc) from None
    finally:
        scratch.close()


def _drop(db: Database, session: Session, stmt: str) -> str:
    conn, world = session.conn, session.world
    name, _end, guarded = _target(stmt, 2)
    found = _find(db.tables_for(world, conn), name)
    if found is None:
        if guarded:
            return "DROP TABLE"
        raise ChronosError(f"no such table: {name}", errors.SQL_ERROR)
    tname, n, _t = found
    created_here = any(op.kind == "create" and op.table_id == n for op in own_ops(conn, world.id))
    if created_here and not db.children(world, conn):
        remove_table(conn, n)
        return "DROP TABLE"
    conn.execute(f"delete from main.{overlay_table(n)} where {WORLD} = ?", (world.id,))
    _record(db, conn, world.id, "drop", n, tname, {})
    return "DROP TABLE"


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


# --- merging schema changes ------------------------------------------------------------------


@dataclass
class Step:
    op: Op
    table: str  # the table's name now
    conflict: str = ""  # why it can't merge; empty when it can
    rows: int = 0  # a dropped table: the rows the parent loses with it

    @property
    def outcome(self) -> str:
        return "conflict" if self.conflict else "apply"


def steps(db: Database, world: World, parent: Session, only: set[str] | None = None) -> list[Step]:
    """The world's own schema changes, each checked against the parent as it is now."""
    conn = parent.conn
    mine = db.tables_for(world)
    theirs = db.tables_for(parent.world) if parent.world is not None else db.tables()
    theirs_by_id = {n: (name, t) for name, (n, t) in theirs.items()}
    created = set()
    out = []
    for op in own_ops(conn, world.id):
        current = next((k for k, (n, _t) in mine.items() if n == op.table_id), op.name)
        if only is not None and current not in only and op.name not in only:
            continue
        step = Step(op, current)
        if op.kind == "create":
            created.add(op.table_id)
            if _find(theirs, op.name):
                step.conflict = f"{parent.branch} has a table named {op.name} too"
        elif op.table_id in created:
            pass
        elif op.table_id not in theirs_by_id:
            if op.kind == "add":
                step.conflict = f"{parent.branch} dropped {op.name} since the fork"
        elif op.kind == "add":
            col = op.detail["column"]["name"]
            pname, t = theirs_by_id[op.table_id]
            if col.lower() in (c.lower() for c in t.column_names):
                step.conflict = f"{parent.branch} has a column {col} in {pname} too"
        elif _parent_wrote(conn, world, parent, op.table_id):
            step.conflict = f"{parent.branch} changed rows of {op.name} since the fork"
        else:
            pname = theirs_by_id[op.table_id][0]
            source = f"main.{quote_ident(pname)}" if parent.world is None else quote_ident(pname)
            step.rows = conn.execute(f"select count(*) from {source}").fetchone()[0]
        out.append(step)
    return out


def _parent_wrote(conn: apsw.Connection, world: World, parent: Session, n: int) -> bool:
    if parent.world is None:
        last = conn.execute(f"select coalesce(max({SEQ}), 0) from main.{history_table(n)}")
        return last.fetchone()[0] > world.base.get(n, 0)
    return bool(
        conn.execute(
            f"select 1 from main.{overlay_table(n)} where {WORLD} = ? and {SEQ} > ? limit 1",
            (parent.world.id, world.fork_seq),
        ).fetchone()
    )


def conflict_error(
    world: World, parent: str, found: list[Step], doing: str = "merging"
) -> ChronosError:
    where, again = ("into", "merge") if doing == "merging" else ("onto", "rebase")
    lines = [
        f"{doing} {world.name} {where} {parent}: schema changes that conflict, nothing was changed:"
    ]
    lines += [f"! {s.op.sql(s.table)} ({s.conflict})" for s in found]
    lines.append(
        f"change {world.name}'s schema to fit (drop the table and create it under another "
        f"name), or change {parent}'s, then {again} again"
    )
    data = [{"table": s.table, "schema": s.op.sql(s.table), "detail": s.conflict} for s in found]
    return ChronosError("\n".join(lines), errors.CONFLICT, data)


def apply_steps(db: Database, world: World, parent: Session, todo: list[Step]) -> None:
    """Make the changes on the parent (in the merge's transaction)."""
    if not todo:
        return
    conn = parent.conn
    if parent.world is None:
        for s in todo:
            _apply_on_main(conn, s.op)
            conn.execute("delete from main._chronos_schema where id = ?", (s.op.id,))
        db.follow_schema(conn)
        for s in todo:
            if s.op.kind == "create":
                _counter_follows(conn, s.op)
        return
    for s in todo:
        if s.op.kind == "drop":
            conn.execute(
                f"delete from main.{overlay_table(s.op.table_id)} where {WORLD} = ?",
                (parent.world.id,),
            )
        conn.execute(
            "insert into main._chronos_schema(world, clock, kind, table_id, name, detail) "
            "select ?, ?, kind, table_id, name, detail from main._chronos_schema where id = ?",
            (parent.world.id, db.tick(conn), s.op.id),
        )
        conn.execute("delete from main._chronos_schema where id = ?", (s.op.id,))
    db.rebuild_world(parent)


def _apply_on_main(conn: apsw.Connection, op: Op) -> None:
    name = conn.execute(
        "select name from main._chronos_tables where id = ?", (op.table_id,)
    ).fetchone()[0]
    if op.kind == "create":
        conn.execute(f"ALTER TABLE main.{stored_name(op.table_id)} RENAME TO {quote_ident(name)}")
    elif op.kind == "add":
        conn.execute(f"ALTER TABLE main.{quote_ident(name)} ADD COLUMN {op.detail['column_sql']}")
    else:
        conn.execute(f"DROP TABLE main.{quote_ident(name)}")


def _counter_follows(conn: apsw.Connection, op: Op) -> None:
    """A created table's ids came from chronos' counter on the world; main's counter (now the
    table's AUTOINCREMENT sequence) starts past them, so the world's later ids don't collide."""
    conn.execute(
        "update main.sqlite_sequence set seq = max(seq, (select hi from main._chronos_counters "
        "where table_id = ?)) where name = ?",
        (op.table_id, op.name),
    )
