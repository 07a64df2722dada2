"""A merge writes as replication does: the world's rows are applied as data.

The world's own writes already fired the app's triggers and its foreign-key actions there, and
what they did is among the world's rows. So a merge must not fire them again on the parent
(Postgres' ``session_replication_role = replica`` is the model; SQLite has no such switch):

* on main, the app's triggers are taken off inside the merge's transaction and put back, as
  they were, before it commits (nobody else ever sees them gone); foreign keys are off while it
  writes (SQLite takes that setting only outside a transaction), so no action runs;
* on a world, its triggers are told (``replica`` in the statement context) to write the rows
  and nothing else.

Then the foreign keys are checked on the merged result, for the rows the merge wrote only:
a key that only the combination breaks refuses the merge (23503).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import apsw

from .. import errors
from ..errors import ChronosError
from ..sqltext import quote_ident
from ..storage.db import Database, Session
from ..storage.fetch import all_rows
from ..storage.schema import virtual
from ..storage.schema.catalog import TableInfo
from ..storage.world import fts as worldfts
from ..storage.world.rules import Link, link
from ..storage.world.sql import CTX


class Change(Protocol):  # (merge.changes.Change, as the check reads it)
    @property
    def table(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def t(self) -> TableInfo: ...
    @property
    def theirs(self) -> dict[str, Any] | None: ...
    @property
    def where(self) -> str: ...


class Written(Protocol):  # (an outcome of the merge's plan that it writes)
    @property
    def change(self) -> Change: ...
    @property
    def result(self) -> dict[str, Any] | None: ...


@contextmanager
def keys_off(session: Session) -> Iterator[None]:
    """Main's foreign keys off for the merge (set outside its transaction, as SQLite needs)."""
    conn = session.conn
    if session.world is not None or not conn.get_autocommit():
        yield
        return
    conn.execute("pragma foreign_keys = off")
    try:
        yield
    finally:
        conn.execute("pragma foreign_keys = on")


@contextmanager
def quiet(session: Session) -> Iterator[None]:
    """Inside the merge's transaction: the parent's triggers don't fire while it writes. (A
    failure rolls the transaction back, and with it the triggers' removal.)"""
    conn = session.conn
    if session.world is not None:
        conn.execute(f"UPDATE {CTX} SET replica = 1")
        try:
            yield
        finally:
            conn.execute(f"UPDATE {CTX} SET replica = 0")
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


def reindex(
    session: Session, merged: list[tuple[TableInfo, tuple | None, dict | None, dict | None]]
) -> None:
    """The indexes of main's external-content FTS5 tables, for the rows a merge wrote to their
    content tables (``merged``: each row's table, key there, row before and after), as the
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


def check_keys(
    db: Database, session: Session, writes: Iterable[Written], world: str, parent: str
) -> None:
    """Every foreign key the merge's rows hold or are held by, checked on the merged result
    (the merge of ``world`` into ``parent``, whose session is ``session``)."""
    schema = db.schema_for(session.world, session.conn)
    place = "main" if session.world is None else "temp"
    links = [
        link(fk, schema.tables, place)
        for _name, (_n, t) in schema.tables.items()
        for fk in t.rules.foreign_keys
    ]
    problems: list[dict[str, Any]] = []
    for o in writes:
        for lk in links:
            problem = _broken(session.conn, lk, o)
            if problem:
                problems.append(problem)
    if problems:
        shown = "; ".join(x["detail"] for x in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise ChronosError(
            f"merging {world} into {parent} would break a foreign key: "
            f"{shown}{more}; both sides were valid alone, not together; nothing was merged",
            errors.FOREIGN_KEY_VIOLATION,
            problems,
        )


def _broken(conn: apsw.Connection, lk: Link, o: Written) -> dict[str, Any] | None:
    c = o.change
    row = o.result
    name = c.t.name.lower()
    if lk.fk.child.lower() == name and row is not None:
        values = [row.get(col) for col in lk.fk.columns]
        if all(v is not None for v in values) and not _exists(
            conn, lk.parent_view, lk.parent_key, values
        ):
            return {
                "table": c.table,
                "id": c.id,
                "references": lk.fk.parent,
                "detail": f"{c.where} references {lk.fk.parent} "
                f"({', '.join(map(repr, values))}), which the merged result doesn't have",
            }
    if lk.fk.parent.lower() == name and c.theirs is not None:
        old = [c.theirs.get(col) for col in lk.parent_key]
        new = None if row is None else [row.get(col) for col in lk.parent_key]
        gone = old != new and not _exists(conn, lk.parent_view, lk.parent_key, old)
        if gone and _exists(conn, lk.child_view, lk.fk.columns, old):
            return {
                "table": c.table,
                "id": c.id,
                "referenced_by": lk.fk.child,
                "detail": f"rows of {lk.fk.child} reference {c.where}, which the merge "
                f"{'deletes' if row is None else 'changes'}",
            }
    return None


def _exists(conn: apsw.Connection, source: str, columns: tuple[str, ...], values: list) -> bool:
    where = " AND ".join(f"{quote_ident(col)} = ?" for col in columns)
    return (
        conn.execute(f"select 1 from {source} where {where} limit 1", values).fetchone() is not None
    )
