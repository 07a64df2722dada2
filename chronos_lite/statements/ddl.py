"""A schema statement on a world, run inside the call's transaction and kept as the world's
schema change (``storage.world.schema`` holds the record; a merge applies it, ``merge.schema``).

CREATE TABLE, ALTER TABLE ... ADD COLUMN and DROP TABLE change what the world stores. CREATE
and DROP of an INDEX, a VIEW or a TRIGGER are checked by SQLite itself, on a scratch copy of
the world's schema (its errors are the ones main would give), and kept as their statement; a
UNIQUE index must hold on the world's rows at once.
"""

from __future__ import annotations

import json

import apsw

from .. import errors, sqltext
from ..errors import ChronosError
from ..sqltext import keywords, name_tokens, quote_ident
from ..storage import events, schemasync, shadow, worlds
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.schema.catalog import PREFIX, Column, TableInfo, table_info
from ..storage.schema.constraints import read_rules
from ..storage.shadow import WORLD, overlay_table
from ..storage.world import schema as worldschema
from ..storage.world.schema import WORKS, find_table, own_ops, remove_table, stored_name


def run(db: Database, session: Session, stmt: str) -> str:
    """Make a schema change on the session's world (inside the call's transaction); its tag."""
    assert session.world is not None  # (sqlrun calls this for a world's session only)
    words = keywords(stmt, 8)
    made = _object_kind(words)
    if made is not None:
        tag = _statement(db, session, stmt, made)
    elif words[:2] == ["CREATE", "TABLE"]:
        tag = _create(db, session, stmt)
    elif words[:2] == ["ALTER", "TABLE"]:
        tag = _alter(db, session, stmt)
    elif words[:2] == ["DROP", "TABLE"]:
        tag = _drop(db, session, stmt)
    else:
        raise ChronosError(
            f"{' '.join(words[:2])} runs on main, not on a world: {WORKS}; make other schema "
            f"changes on main",
            errors.REFUSED,
        )
    if not tag:  # (IF [NOT] EXISTS found nothing to do)
        return sqltext.statement_tag(stmt)
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


def _alter(db: Database, session: Session, stmt: str) -> str:
    """ALTER TABLE ... ADD [COLUMN] (a shadow column for the world's values), RENAME TO, RENAME
    [COLUMN], DROP [COLUMN], checked by SQLite on the world's schema and kept as the world's
    change (a rename or a dropped column leaves the storage as it is: the world reads the table
    under its new name, the column under its new name, or without the column)."""
    conn, world = session.conn, session.world
    assert world is not None  # (run's session)
    name, end, _ = _target(stmt, 2)
    found = find_table(db.tables_for(world, conn), name)
    if found is None:
        raise ChronosError(f"no such table: {name}", errors.SQL_ERROR)
    tname, n, t = found
    tail = stmt[end:]
    rest = name_tokens(tail)
    # (keywords are bare words: a quoted "to" is a name)
    upper = [w.upper() if tail[s] not in '"`[' else w for w, s, _ in rest]
    if upper[:1] == ["ADD"]:
        column_sql = tail[rest[1 if upper[1:2] == ["COLUMN"] else 0][2] :].strip()
        col = _probe_column(t, column_sql)
        _storage_free(t, col.name)
        for table in shadow.shadow_tables(n):
            schemasync.add_shadow_column(conn, table, col)
        # (a column of that name the world dropped before, or another world added, is there
        # already: the world's rows start from the new column's default, as main's would)
        default = col.default if col.default is not None else "NULL"
        conn.execute(
            f"update main.{overlay_table(n)} set {quote_ident(col.name)} = {default} "
            f"where {WORLD} in (?, ?)",
            (world.id, -world.id),
        )
        _record(
            db, conn, world.id, "add", n, tname, {"column_sql": column_sql, "column": col.__dict__}
        )
        return "ALTER TABLE"
    if upper[:2] == ["RENAME", "TO"] and len(rest) > 2:
        kind, detail = "rename", {"to": rest[2][0]}
        if rest[2][0].lower().startswith((PREFIX, "sqlite_")):
            raise ChronosError(errors.OWN_TABLES, errors.REFUSED)
    elif upper[:1] == ["DROP"] and len(rest) > 1:
        column = rest[2 if upper[1:2] == ["COLUMN"] and len(rest) > 2 else 1][0]
        real = next((c for c in t.column_names if c.lower() == column.lower()), column)
        kind, detail = "drop_column", {"column": real}
    elif upper[:1] == ["RENAME"] and "TO" in upper[2:]:
        at = 2 if upper[1] == "COLUMN" and upper.index("TO", 1) == 3 else 1
        column, to = rest[at][0], rest[upper.index("TO", at + 1) + 1 :]
        real = next((c for c in t.column_names if c.lower() == column.lower()), column)
        new = to[0][0] if to else ""
        if new.lower().startswith(PREFIX):
            raise ChronosError(
                f"a column can't take a {PREFIX} name (chronos' own columns have them): "
                f"choose another name for {real}",
                errors.REFUSED,
            )
        # (the statement's own words replay it: SQLite writes the new name as it was given)
        kind, detail = "rename_column", {"column": real, "to": new, "rest": tail}
    else:
        kind, detail = "", {}
    scratch = worldschema.scratch(conn, worldschema.visible_ops(conn, world.id))
    try:  # SQLite's own check, with its own message, on the world's schema
        scratch.execute(stmt)
    except apsw.Error as exc:
        raise errors.from_sqlite(exc) from None
    finally:
        scratch.close()
    if not kind:  # (SQLite took a form this doesn't know)
        raise ChronosError(f"ALTER TABLE on a world: {WORKS}", errors.SQL_ERROR)
    _record(db, conn, world.id, kind, n, tname, detail)
    return "ALTER TABLE"


def _storage_free(t: TableInfo, name: str) -> None:
    """A column a world adds is stored under its own name: not one a column the world renamed
    is stored under."""
    held = next((c for c in t.columns if c.stored.lower() == name.lower()), None)
    if held is not None:
        raise ChronosError(
            f"this world renamed {t.name}'s column {held.stored} to {held.name}, which is still "
            f"stored under the old name until the rename merges: add the new column under "
            f"another name, or merge the rename first",
            errors.REFUSED,
        )


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


# --- indexes, views, triggers -------------------------------------------------------------


def _object_kind(words: list[str]) -> str | None:
    """'index', 'view' or 'trigger' for CREATE [UNIQUE] INDEX, CREATE VIEW, CREATE TRIGGER and
    their DROP statements."""
    if words[:1] == ["CREATE"]:
        rest = [w for w in words[1:3] if w != "UNIQUE"]
        return rest[0].lower() if rest and rest[0] in ("INDEX", "VIEW", "TRIGGER") else None
    if words[:1] == ["DROP"] and words[1:2] in (["INDEX"], ["VIEW"], ["TRIGGER"]):
        return words[1].lower()
    return None


def _objects(scratch: apsw.Connection, kind: str) -> dict[str, tuple[str, str, str]]:
    """The scratch schema's objects of a kind: lower name -> (name, table, sql)."""
    return {
        name.lower(): (name, table, sql)
        for name, table, sql in scratch.execute(
            "select name, tbl_name, sql from sqlite_schema where type = ? and sql is not null",
            (kind,),
        )
    }


def is_world_change(session: Session, stmt: str) -> bool:
    """Whether a schema statement on a world's connection changes the world's schema, or is the
    connection's own business (a TEMP object, made or named so, or the user's TEMP object
    dropped), run as it is under the guard."""
    words = keywords(stmt, 3)
    if words[1:2] in (["TEMP"], ["TEMPORARY"]):
        return False
    found = sqltext.tokens(stmt)
    for i in range(len(found) - 1):
        if found[i][0].lower() == "temp" and found[i][1] in ("word", "name"):
            if found[i + 1][0] == ".":
                return False
    if words[:1] == ["DROP"] and _object_kind(keywords(stmt, 8)) is not None:
        names = {t[0].lower() for t in name_tokens(stmt)}
        for (name,) in session.conn.execute("select name from temp.sqlite_schema"):
            if name.lower() in names and name not in session.own_temp:
                return False
    return True


def _statement(db: Database, session: Session, stmt: str, kind: str) -> str:
    """CREATE or DROP of an index, a view or a trigger on a world: SQLite's own check on the
    world's schema, then kept as the world's op; '' when it did nothing (IF [NOT] EXISTS)."""
    conn, world = session.conn, session.world
    assert world is not None  # (run's session)
    if any(t[0].lower().startswith(PREFIX) for t in name_tokens(stmt)):
        raise ChronosError(errors.OWN_TABLES, errors.REFUSED)
    scratch = worldschema.scratch(conn, worldschema.visible_ops(conn, world.id))
    try:
        before = _objects(scratch, kind)
        try:
            scratch.execute(stmt)
        except apsw.Error as exc:
            raise errors.from_sqlite(exc) from None
        after = _objects(scratch, kind)
        made = [after[k] for k in after.keys() - before.keys()]
        gone = [before[k] for k in before.keys() - after.keys()]
        if not made and not gone:
            return ""
        name, table, sql = (made or gone)[0]
        if name.lower().startswith(PREFIX):
            raise ChronosError(errors.OWN_TABLES, errors.REFUSED)
        if made and kind == "index" and sql.split(None, 2)[1].upper() == "UNIQUE":
            _holds(db, session, scratch, name, table)
    finally:
        scratch.close()
    tables = db.tables_for(world, conn)
    found = find_table(tables, table) if kind != "view" else None
    n = found[1] if found else 0
    if made:
        _record(db, conn, world.id, kind, n, name, {"sql": sql, "table": table})
        return sqltext.statement_tag(stmt)
    mine = [
        op for op in own_ops(conn, world.id) if op.kind == kind and op.name.lower() == name.lower()
    ]
    if mine and not worlds.children(conn, world):  # its own: as if never made
        conn.execute("delete from main._chronos_schema where id = ?", (mine[-1].id,))
        return sqltext.statement_tag(stmt)
    dropped = f"DROP {kind.upper()} {quote_ident(name)}"
    _record(db, conn, world.id, f"drop_{kind}", n, name, {"sql": dropped, "table": table})
    return sqltext.statement_tag(stmt)


def _holds(
    db: Database, session: Session, scratch: apsw.Connection, index: str, table: str
) -> None:
    """A UNIQUE index made on a world holds on the world's rows at once, as on main."""
    sql = one_row(scratch.execute("select sql from sqlite_schema where name = ?", (table,)))[0]
    rule = next(
        r
        for r in read_rules(scratch, "main", table, sql).uniques
        if r.name.lower() == index.lower()
    )
    terms = ", ".join(
        f"{term} COLLATE {coll}" if coll else term
        for term, coll in zip(rule.terms, rule.collations)
    )
    present = " AND ".join(f"({term}) IS NOT NULL" for term in rule.terms)
    where = f" AND ({rule.where})" if rule.where else ""
    duplicated = session.conn.execute(
        f"select 1 from {quote_ident(table)} where {present}{where} "
        f"group by {terms} having count(*) > 1 limit 1"
    ).fetchone()
    if duplicated:
        raise ChronosError(rule.message, errors.UNIQUE_VIOLATION)
