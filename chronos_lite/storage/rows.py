"""One row at a time: get, put and delete by ``table/id``, on main or a world.

A row's id is its primary key (a table without one: its rowid), spelled as ``spelling.py``
says: ``7``, ``red``, ``17,3``, or a JSON array of the key's values (``["a,b",3]``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import apsw

from ..errors import (
    BAD_ARGUMENT,
    FOREIGN_KEY_VIOLATION,
    NOT_FOUND,
    REFUSED,
    ChronosError,
    from_sqlite,
)
from ..sqltext import at_most, quote_ident
from . import events, faults, guard, worlds
from .branchref import BranchRef
from .codec import db_row, parse_id, row_key
from .db import Database, Session, Where
from .fetch import all_rows
from .schema import virtual
from .schema.catalog import ROWID_COL, TableInfo
from .shadow import DEAD, OP, SEQ, WORLD, history_table, overlay_table
from .world import fts as worldfts
from .world import placement
from .world import sql as worldsql
from .world.views import key_view
from .worlds import World


def relation(session: Session, n: int, t: TableInfo, write: bool = False) -> tuple[str, str]:
    """The relation to read (or ``write``) the table through, and the name of its key column
    there: a world's table it reads as main's own is main's, until a write makes it the
    world's."""
    if session.world is None:
        return f"main.{quote_ident(t.name)}", "rowid"
    if n not in session.materialized and not session.past:  # (a past is all views)
        if not write:
            return f"main.{quote_ident(t.stored)}", "rowid"
        placement.materialize(session, n)
    if t.key_kind == "rowid":
        return f"temp.{key_view(n)}", quote_ident(ROWID_COL)
    return f"temp.{quote_ident(t.name)}", ""


def _key_condition(t: TableInfo, rowid_col: str) -> str:
    if t.key_kind == "rowid":
        return f"{rowid_col} = ?"
    return " AND ".join(f"{quote_ident(c)} = ?" for c in t.pk)


def write_row(
    session: Session,
    n: int,
    t: TableInfo,
    key: tuple,
    row: dict | None,
    fresh_rowid: bool = False,
    abort: bool = False,
) -> tuple | None:
    """Make the branch's row at ``key`` be ``row`` (None: no row), in the caller's transaction:
    an UPDATE where the row is there (ON DELETE CASCADE and delete triggers must not see it go),
    else an INSERT under its key. ``fresh_rowid``: a new row of a table without a primary key
    takes a rowid of its own (the one it had may name an unrelated row here). Returns the row's
    key on the branch (None: a fresh rowid on a world, not known). ``abort``: a broken rule
    fails the statement alone, whatever the table's own ON CONFLICT says (the caller may try
    it again after the rest)."""
    conn = session.conn
    verb = " or abort" if abort else ""
    source, rowid_col = relation(session, n, t, write=True)
    where = _key_condition(t, rowid_col)
    if row is None:
        conn.execute(f"delete from {source} where {where}", key)
        return key
    values = {k: v for k, v in row.items() if k not in t.generated}
    if not fresh_rowid and conn.execute(f"select 1 from {source} where {where}", key).fetchone():
        sets = ", ".join(f"{quote_ident(k)} = ?" for k in values)
        conn.execute(f"update{verb} {source} set {sets} where {where}", [*values.values(), *key])
        return key
    cols = [quote_ident(k) for k in values]
    args = list(values.values())
    if t.key_kind == "rowid" and not fresh_rowid:  # the row keeps its hidden key
        cols.append(rowid_col)
        args.append(key[0])
    marks = ", ".join("?" for _ in cols)
    conn.execute(f"insert{verb} into {source}({', '.join(cols)}) values ({marks})", args)
    if fresh_rowid:
        return (conn.last_insert_rowid(),) if session.world is None else None
    return key


def get(db: Database, branch: Where, table: str, id_text: str) -> tuple[TableInfo, dict | None]:
    t, row, _cut = get_within(db, branch, table, id_text)
    return t, row


def get_within(
    db: Database, branch: Where, table: str, id_text: str, longest: int | None = None
) -> tuple[TableInfo, dict | None, list[str]]:
    """One row; ``longest``: values longer than that many characters (bytes of a blob) are read
    only that far, and named in the list returned (a reply holds only so much)."""
    session = db.session(branch)
    n, t = db.table(table, session.world)
    key = parse_id(t, id_text)
    source, rowid_col = relation(session, n, t)
    names = [quote_ident(c) for c in t.column_names]
    if longest is not None:
        names = [at_most(c, longest) for c in names]
    row = session.conn.execute(
        f"select {', '.join(names)} from {source} where {_key_condition(t, rowid_col)}", key
    ).fetchone()
    if row is None:
        return t, None, []
    values = dict(zip(t.column_names, row))
    cut = [
        c
        for c, v in values.items()
        if longest is not None and isinstance(v, str | bytes) and len(v) > longest
    ]
    for c in cut:
        values[c] = values[c][:longest]
    return t, values, cut


def _check_record(t: TableInfo, record: dict, key: list[Any], id_text: str) -> dict:
    unknown = [k for k in record if k not in t.column_names]
    if unknown:
        named = ", ".join(repr(k[:60]) for k in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ChronosError(
            f"table {t.name} has no column {named}{more}; its columns: {', '.join(t.column_names)}"
        )
    row = db_row(t, record, "'record'")
    for col, value in zip(t.pk, key):
        if col in row and str(row[col]) != str(value):
            raise ChronosError(
                f"'record' says {col} = {row[col]!r} but 'id' '{id_text}' names {col} = "
                f"{value!r}: leave the key out of the record, or make them agree",
                BAD_ARGUMENT,
            )
        row[col] = value
    return {k: v for k, v in row.items() if k not in t.generated}


def put(db: Database, branch: Where, table: str, id_text: str, record: dict) -> bool:
    """Create or replace a whole row. Returns True if it was created.

    Replaced in place, by key, as an upsert would (Postgres' ``ON CONFLICT ... DO UPDATE``): an
    UPDATE of every column (those the record leaves out take their default), so the row's
    children and its delete triggers never see it go, and a unique value another row holds is
    refused (23505), never that row deleted as ``INSERT OR REPLACE`` would."""
    session = db.session(branch)
    n, t = db.table(table, session.world)
    key = parse_id(t, id_text)
    row = _check_record(t, record, key, id_text)
    source, rowid_col = relation(session, n, t, write=True)
    where = _key_condition(t, rowid_col)
    cols = list(row)
    values = list(row.values())
    if t.key_kind == "rowid":
        cols.append(rowid_col)
        values.append(key[0])
    names = ", ".join(c if c in ("rowid", quote_ident(ROWID_COL)) else quote_ident(c) for c in cols)
    marks = ", ".join("?" for _ in cols)
    sets, args = [], []
    for c in t.writable:
        if c.name in t.pk:
            continue
        if c.name in row:
            sets.append(f"{quote_ident(c.name)} = ?")
            args.append(row[c.name])
        else:
            sets.append(f"{quote_ident(c.name)} = {c.default if c.default is not None else 'NULL'}")

    def run(conn: apsw.Connection) -> bool:
        if conn.execute(f"select 1 from {source} where {where}", key).fetchone() is None:
            conn.execute(f"insert into {source}({names}) values ({marks})", values)
            return True
        if sets:
            conn.execute(f"update {source} set {', '.join(sets)} where {where}", [*args, *key])
        return False

    mask = worldsql.named_mask(t.column_names, list(row))
    return _write(db, session, run, {"put": row_key(t, key)}, (n, mask))


def delete(db: Database, branch: Where, table: str, id_text: str) -> None:
    session = db.session(branch)
    n, t = db.table(table, session.world)
    key = parse_id(t, id_text)
    source, rowid_col = relation(session, n, t, write=True)

    def run(conn: apsw.Connection) -> None:
        cur = conn.execute(f"delete from {source} where {_key_condition(t, rowid_col)}", key)
        cur.fetchall()
        if not worldsql.rows_written(session):
            raise ChronosError(f"no row {row_key(t, key)} on {session.branch}", NOT_FOUND)

    _write(db, session, run, {"delete": row_key(t, key)})


def _write(
    db: Database,
    session: Session,
    action: Callable[[apsw.Connection], Any],
    what: dict,
    named: tuple[int, int] | None = None,
) -> Any:
    """Run one row write as its own transaction (recorded as an event of the branch); on a
    world it moves the version on, and its foreign keys are checked at its end, as SQLite checks
    main's. ``named``: on a world, (table, mask) of the columns an INSERT names (the others take
    their defaults). A world's table the write reaches through a trigger or a foreign-key
    action that the world still reads as main's own is made the world's first, then the write
    runs again (it had run nothing)."""
    conn = session.conn
    if session.past:
        db.end_call(session)
        raise BranchRef.parse(session.branch).read_only()
    promoted: set[str] = set()
    try:
        while True:
            checked = guard.install(conn)
            checked.denied = None
            try:
                return _write_once(db, session, action, what, named)
            except apsw.AuthError:
                denied = checked.denied
                if session.world is None or denied is None or denied.kind != "main":
                    raise
                if denied.name in promoted:
                    raise ChronosError(guard.main_table_message(denied.name), REFUSED) from None
                promoted.add(denied.name)
                why = placement.promote(session, denied.name)
                if why is not None:
                    raise ChronosError(why, REFUSED) from None
    except faults.FAULTS as exc:  # the disk, the file, the lock: each its own error
        raise faults.describe(exc, db) or exc from None
    except apsw.Error as exc:
        raise from_sqlite(exc) from None
    finally:
        db.end_call(session)


def _write_once(
    db: Database,
    session: Session,
    action: Callable[[apsw.Connection], Any],
    what: dict,
    named: tuple[int, int] | None,
) -> Any:
    conn = session.conn
    with db.write(conn):
        if session.world is not None:
            tick = events.clock(conn) + 1
            worldsql.begin_world_write(conn, None)
            if named is not None:
                worldsql.given_columns(conn, *named)
        else:
            before = events.positions(conn, db.tables())
        result = action(conn)
        if session.world is not None:
            if worldsql.broken_keys(conn) or worldsql.broken_keys(conn, transaction=True):
                raise ChronosError(worldsql.FK_FAILED, FOREIGN_KEY_VIOLATION)
            worlds.bump_version(conn, session.world)
            db.record(conn, session.world.id, "write", 1, {**what, "clock": [tick, tick]})
        else:
            seqs = events.ranges(before, events.positions(conn, db.tables()))
            db.record(conn, 0, "write", 1, {**what, "seqs": seqs})
    return result


# --- row readers: a key's row on main, as it was, in an overlay, as a branch sees it ------------


def key_where(t: TableInfo, prefix: str = "") -> str:
    """The key columns (history and overlay spell them alike) equal to ? each."""
    return " AND ".join(f"{prefix}{t.col(c)} = ?" for c in t.key_cols)


def main_key_where(t: TableInfo) -> str:
    """Main's row of a key: its rowid, or its primary key columns."""
    if t.key_kind == "rowid":
        return "rowid = ?"
    return " AND ".join(f"{t.col(c)} = ?" for c in t.pk)


def as_row(t: TableInfo, values: tuple) -> dict[str, Any]:
    return dict(zip(t.column_names, values))


def main_row(conn: apsw.Connection, t: TableInfo, key: tuple) -> dict | None:
    """Main's row of a key now."""
    row = conn.execute(
        f"select {t.main_columns()} from main.{quote_ident(t.stored)} where {main_key_where(t)}",
        key,
    ).fetchone()
    return as_row(t, row) if row is not None else None


def main_as_of(conn: apsw.Connection, n: int, t: TableInfo, key: tuple, seq: int) -> dict | None:
    """Main's row as it was when the table's history stood at ``seq``."""
    cols = t.stored_list()
    past = conn.execute(
        f"select {OP}, {cols} from main.{history_table(n)} where {key_where(t)} "
        f"and {SEQ} > ? order by {SEQ} limit 1",
        (*key, seq),
    ).fetchone()
    if past is None:
        return main_row(conn, t, key)
    return as_row(t, past[1:]) if past[0] == 1 else None


def main_changed_since(conn: apsw.Connection, n: int, t: TableInfo, key: tuple, seq: int) -> bool:
    return (
        conn.execute(
            f"select 1 from main.{history_table(n)} where {key_where(t)} and {SEQ} > ? limit 1",
            (*key, seq),
        ).fetchone()
        is not None
    )


def overlay_entry(
    conn: apsw.Connection, n: int, t: TableInfo, world: int, key: tuple
) -> tuple[bool, dict | None, int] | None:
    """(found, row or None for a tombstone, seq) of a world's overlay entry for a key."""
    cols = t.stored_list()
    row = conn.execute(
        f"select {DEAD}, {SEQ}, {cols} from main.{overlay_table(n)} "
        f"where {WORLD} = ? and {key_where(t)}",
        (world, *key),
    ).fetchone()
    if row is None:
        return None
    return True, (None if row[0] else as_row(t, row[2:])), row[1]


def view_row(session: Session, n: int, t: TableInfo, key: tuple) -> dict | None:
    """A row as the session's branch sees it."""
    if session.world is None or (not session.past and n not in session.materialized):
        return main_row(session.conn, t, key)
    cols = ", ".join(quote_ident(c) for c in t.column_names)
    if t.key_kind == "rowid":
        source, where = f"temp.{key_view(n)}", f"{quote_ident(ROWID_COL)} = ?"
    else:
        source, where = f"temp.{quote_ident(t.name)}", _key_condition(t, "")
    row = session.conn.execute(f"select {cols} from {source} where {where}", key).fetchone()
    return as_row(t, row) if row is not None else None


def base_row(
    conn: apsw.Connection, n: int, t: TableInfo, world: World, key: tuple
) -> tuple[dict | None, int | None]:
    """The row as the world saw it when it forked, and the parent's seq that base stands at
    (None: the fork's own: the world's horizon in main, or its fork on the world clock).

    The frozen copy (world -id) holds the parent's rows as the world forked from a world saw
    them, and the rows a partial merge already gave the parent (stamped with the parent's seq
    after that merge, so the merge itself doesn't count as the parent changing them).
    """
    frozen = overlay_entry(conn, n, t, -world.id, key)
    if frozen is not None:
        return frozen[1], frozen[2]
    return main_as_of(conn, n, t, key, world.base.get(n, 0)), None


# --- rows written as data ---------------------------------------------------------------------

# A row written as data: its table, its key there, the row before and after (None: no row)
Written = tuple[TableInfo, tuple | None, dict | None, dict | None]


@contextmanager
def as_data(session: Session) -> Iterator[None]:
    """Inside the caller's write transaction: rows written as data, as replication writes them
    (a merge, a restore, a rollback, an undo): on main the app's triggers are taken off and put
    back, as they were, before it commits (nobody else sees them gone; a failure rolls their
    removal back too); on a world its triggers are told (``replica``) to write the rows alone,
    and its native copies' foreign keys are checked at the commit."""
    conn = session.conn
    if session.world is not None:
        # (a native copy's keys, SQLite's own: checked at the commit, whatever the rows' order;
        # it is off again after the commit)
        conn.execute("pragma defer_foreign_keys = on")
        conn.execute(f"UPDATE {worldsql.CTX} SET replica = 1")
        try:
            yield
        finally:
            conn.execute(f"UPDATE {worldsql.CTX} SET replica = 0")
        return
    triggers = all_rows(
        conn.execute(
            "select name, sql from main.sqlite_schema where type = 'trigger' "
            "and name not like '\\_chronos\\_%' escape '\\' order by rowid"
        )
    )
    for name, _sql in triggers:
        conn.execute(f"DROP TRIGGER main.{quote_ident(name)}")
    yield
    for _name, sql in triggers:  # (in their order: SQLite fires the newest first)
        conn.execute(sql)


def reindex_fts(session: Session, merged: list[Written]) -> None:
    """The indexes of main's external-content FTS5 tables, for the rows written as data to
    their content tables (``merged``: each row's table, key there, row before and after), as the
    app's triggers would have kept them. A world's own FTS5 copies are made anew instead."""
    if session.world is not None:
        session.built_for = None  # (placed again at its next call: its copies rebuilt)
        return
    conn = session.conn
    for fts in virtual.fts_tables(conn):
        if fts.kind != "external":
            continue
        rows = [m for m in merged if m[0].name.lower() == (fts.content or "").lower()]
        if not rows:
            continue
        t = rows[0][0]
        by_key = fts.content_rowid.lower() == "rowid" and t.key_kind not in ("int", "rowid")
        if by_key or any(key is None for _t, key, _b, _a in rows):  # (no rowid to go by)
            q = quote_ident(fts.name)
            conn.execute(f"INSERT INTO main.{q}({q}) VALUES ('rebuild')")
            continue
        column = next((c for c in t.column_names if c.lower() == fts.content_rowid.lower()), None)
        for _t, key, before, after in rows:
            assert key is not None  # (checked above)
            old = before.get(column) if column and before else key[0]
            new = after.get(column) if column and after else key[0]
            worldfts.index_merged(conn, fts, before, after, old, new)
