"""A schema statement on a world (CREATE TABLE, ALTER TABLE ... ADD COLUMN, DROP TABLE), run
inside the call's transaction and kept as the world's schema change (``storage.worldschema``
holds the record; a merge applies it, ``merge.schema``)."""

from __future__ import annotations

import json

import apsw

from .. import errors
from ..errors import ChronosError
from ..sqltext import keywords, name_tokens, quote_ident
from ..storage import events, schemasync, shadow, worlds
from ..storage.catalog import PREFIX, Column, TableInfo, table_info
from ..storage.db import Database, Session
from ..storage.shadow import WORLD, overlay_table
from ..storage.worldschema import WORKS, find_table, own_ops, remove_table, stored_name


def run(db: Database, session: Session, stmt: str) -> str:
    """Make a schema change on the session's world (inside the call's transaction); its tag."""
    assert session.world is not None  # (sqlrun calls this for a world's session only)
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
    worlds.bump_version(session.conn, session.world)
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


def _record(
    db: Database, conn: apsw.Connection, world: int, kind: str, n: int, name: str, detail: dict
) -> None:
    conn.execute(
        "insert into main._chronos_schema(world, clock, kind, table_id, name, detail) "
        "values (?, ?, ?, ?, ?, ?)",
        (world, events.tick(conn), kind, n, name, json.dumps(detail)),
    )


def _create(db: Database, session: Session, stmt: str) -> str:
    conn, world = session.conn, session.world
    assert world is not None  # (run's session)
    name, end, guarded = _target(stmt, 2)
    rest = stmt[end:]
    if keywords(rest, 1) == ["AS"]:
        raise ChronosError(
            "CREATE TABLE ... AS SELECT isn't supported on a world: create the table with its "
            "columns, then INSERT INTO ... SELECT"
        )
    if name.lower().startswith("sqlite_"):
        raise ChronosError(f"table names starting sqlite_ are reserved for SQLite: '{name}'")
    if find_table(db.tables_for(world, conn), name):
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
    assert world is not None  # (run's session)
    name, end, _ = _target(stmt, 2)
    found = find_table(db.tables_for(world, conn), name)
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
        schemasync.add_shadow_column(conn, table, col)
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
    assert world is not None  # (run's session)
    name, _end, guarded = _target(stmt, 2)
    found = find_table(db.tables_for(world, conn), name)
    if found is None:
        if guarded:
            return "DROP TABLE"
        raise ChronosError(f"no such table: {name}", errors.SQL_ERROR)
    tname, n, _t = found
    created_here = any(op.kind == "create" and op.table_id == n for op in own_ops(conn, world.id))
    if created_here and not worlds.children(conn, world):
        remove_table(conn, n)
        return "DROP TABLE"
    conn.execute(f"delete from main.{overlay_table(n)} where {WORLD} = ?", (world.id,))
    _record(db, conn, world.id, "drop", n, tname, {})
    return "DROP TABLE"
