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
from ..storage.schema.catalog import TableInfo
from ..storage.world.rules import Link, link


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
