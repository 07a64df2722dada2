"""Putting a connection on a branch, and what a call leaves on it.

A world's connection (or a branch's as it was) holds TEMP objects made from the branch's schema
(``worldschema.BranchSchema``): the views and triggers of ``worldsql``, the app's views and
their INSTEAD OF triggers, placeholders for what the branch dropped. Each call is a session of
its own: TEMP objects a call makes go when it ends.
"""

from __future__ import annotations

import re

import apsw

from ..sqltext import quote_ident
from . import guard, worldschema
from .catalog import PREFIX
from .fetch import all_rows, one_row
from .session import Session
from .worldschema import BranchSchema
from .worldsql import CTX, app_view_triggers, app_views, placeholders, world_objects


def place(
    session: Session,
    schema: BranchSchema,
    trusted: frozenset[str],
    writable: bool = True,
    at: float | None = None,
) -> None:
    """Put the session's connection on its world (``trusted``: main's history triggers, which
    its guard trusts beside the world's own)."""
    conn, world = session.conn, session.world
    assert world is not None  # only a world's session (or a past one's) is placed
    kept = _users_views(session)
    _clear(conn)
    made, own = world_objects(schema, world.id, world.base, writable, at)
    for stmt in made:
        conn.execute(stmt)
    for stmt in placeholders(schema, worldschema.DROPPED):
        conn.execute(stmt)
    _make_all(conn, app_views(schema))
    if writable:
        _make_all(conn, app_view_triggers(schema))
    ours = {r[0] for r in conn.execute("select name from temp.sqlite_schema")}
    _make_all(conn, kept)  # (a TEMP view of the user's that lasts: made again on them)
    session.schema = schema
    session.own_temp = ours
    session.temp_version = one_row(conn.execute("pragma temp.schema_version"))[0]
    guard.install(conn).trusted = trusted | frozenset(own)
    guard_own_temp(session)


def _users_views(session: Session) -> list[str]:
    """The user's own TEMP views and their triggers (placing the connection again drops every
    TEMP view): to make again after, as TEMP objects (SQLite stores their text without TEMP).
    Chronos' own go by their names, which no user's object can take."""
    out = []
    for kind, name, sql in session.conn.execute(
        "select type, name, sql from temp.sqlite_schema where type in ('view', 'trigger') "
        "and sql is not null order by type desc, rowid"
    ):
        if name in session.own_temp or name.lower().startswith(PREFIX):
            continue
        head = _VIEW_HEAD if kind == "view" else _TRIGGER_HEAD
        out.append(head.sub(f"CREATE TEMP {kind.upper()} ", sql, count=1))
    return out


_VIEW_HEAD = re.compile(r"^\s*CREATE\s+(TEMP\s+|TEMPORARY\s+)?VIEW\s+", re.IGNORECASE)
_TRIGGER_HEAD = re.compile(r"^\s*CREATE\s+(TEMP\s+|TEMPORARY\s+)?TRIGGER\s+", re.IGNORECASE)


def _clear(conn: apsw.Connection) -> None:
    """The objects of an earlier placement go (a view's triggers with it; the event tables,
    with theirs); the context tables stay."""
    for (name,) in all_rows(
        conn.execute("select name from temp.sqlite_schema where type = 'view'")
    ):
        conn.execute(f"drop view temp.{quote_ident(name)}")
    for (name,) in all_rows(
        conn.execute(
            "select name from temp.sqlite_schema where type = 'table' "
            "and name like '\\_chronos\\_e%' escape '\\'"
        )
    ):
        conn.execute(f"drop table temp.{quote_ident(name)}")


def _make_all(conn: apsw.Connection, statements: list[str]) -> None:
    """Make what can be made, in dependency order (a view on a view made later is retried);
    what can't (a view on a table the branch doesn't have) is left out, as SQLite leaves a
    broken view in the schema to fail when read."""
    pending = statements
    while pending:
        failed = []
        for stmt in pending:
            try:
                conn.execute(stmt)
            except apsw.SQLError:
                failed.append(stmt)
        if len(failed) == len(pending):
            break
        pending = failed


def guard_own_temp(session: Session) -> None:
    """Tell the connection's guard which TEMP objects are chronos' (no statement drops them)."""
    guard.install(session.conn).own_temp = frozenset(n.lower() for n in session.own_temp)


def keep_view(session: Session, name: str, most: int = 32) -> None:
    """Keep a TEMP view past the call (AS OF main at a seq reads the same every time, and
    dropping a view makes SQLite prepare every statement again)."""
    session.own_temp.add(name)
    guard_own_temp(session)
    session.kept.append(name)
    while len(session.kept) > most:
        old = session.kept.pop(0)
        session.own_temp.discard(old)
        session.conn.execute(f"drop view if exists temp.{quote_ident(old)}")


def end_call(session: Session, keep_temp: bool = False) -> None:
    """A call ended: TEMP objects it created go (each call its own session), unless they
    last as long as the connection (``keep_temp``)."""
    conn = session.conn
    if session.world is not None:
        conn.execute(f"UPDATE {CTX} SET seq = NULL, mode = 0")
        conn.execute("DELETE FROM temp._chronos_given")
    if keep_temp or one_row(conn.execute("pragma temp.schema_version"))[0] == session.temp_version:
        return
    for name, kind in all_rows(
        conn.execute(
            "select name, type from temp.sqlite_schema where type in ('table', 'view', "
            "'trigger', 'index')"
        )
    ):
        if name not in session.own_temp and kind in ("table", "view", "trigger"):
            try:
                conn.execute(f"drop {kind} if exists temp.{quote_ident(name)}")
            except apsw.Error:
                pass
    session.temp_version = one_row(conn.execute("pragma temp.schema_version"))[0]
