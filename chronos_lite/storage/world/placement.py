"""Putting a connection on a branch, and what a call leaves on it.

A world's connection (or a branch's as it was) holds TEMP objects made from the branch's schema
(``world.schema.BranchSchema``): the views and triggers of ``world.sql``, the app's views and
their INSTEAD OF triggers, placeholders for what the branch dropped. Each call is a session of
its own: TEMP objects a call makes go when it ends.
"""

from __future__ import annotations

import itertools
import re

import apsw

from ...errors import CONFLICT, ChronosError
from ...sqltext import quote_ident
from .. import guard, worlds
from ..fetch import all_rows, one_row
from ..schema import virtual as ftsinfo
from ..schema.catalog import PREFIX, ROWID_COL, TableInfo
from ..shadow import SEQ, WORLD, history_table, overlay_table
from ..worlds import World
from . import context as worldcontext
from . import fts as worldfts
from . import groups as worldgroups
from . import native as worldnative
from . import schema as worldschema
from . import state as worldstate
from .schema import BranchSchema
from .session import Session
from .sql import (
    app_view_triggers,
    app_views,
    native_after_fill,
    native_tables,
    placeholders,
    table_objects,
    world_objects,
    world_tables,
)
from .views import key_view
from .writes import WorldTable

PLACED = "temp._chronos_placed"
_ROWID = {"rowid", "oid", "_rowid_"}
# The token placement last wrote, and whether another connection committed since (Database)
QUIET = f"SELECT token, (SELECT data_version FROM pragma_data_version) FROM {PLACED}"
_TOKENS = itertools.count(1)  # (one process: tokens of every connection's placements differ)


def _unfit(world: World, exc: apsw.SQLError) -> ChronosError:
    said = str(exc).removeprefix("SQLError: ")
    return ChronosError(
        f"branch {world.name} can't be opened: its schema changes no longer fit main's, which "
        f"changed since the fork (SQLite: {said}); nothing was changed. rebase or "
        f"merge_preview names the clash; change main's schema back, or discard {world.name}",
        CONFLICT,
    )


def place(
    session: Session,
    schema: BranchSchema,
    trusted: frozenset[str],
    writable: bool = True,
    at: float | None = None,
    main_tables: dict | None = None,
) -> None:
    """Put the session's connection on its world (``trusted``: main's history triggers, which
    its guard trusts beside the world's own; ``main_tables``: main's, to tell the tables whose
    shape the world changed). Tables copied natively together whose rows break a foreign key
    between them (main written without the keys checked) are placed again apart."""
    while True:
        session.conn.execute("SAVEPOINT _chronos_place")
        try:
            _place(session, schema, trusted, writable, at, main_tables)
        except _Loose as loose:
            session.conn.execute("ROLLBACK TO _chronos_place")
            session.conn.execute("RELEASE _chronos_place")
            session.loose |= loose.tables
            continue
        except BaseException:
            if session.conn.in_transaction:
                session.conn.execute("RELEASE _chronos_place")
            raise
        session.conn.execute("RELEASE _chronos_place")
        return


class _Loose(Exception):
    """Rows copied natively broke a foreign key between ``tables``."""

    def __init__(self, tables: set[int]) -> None:
        self.tables = tables


def _place(
    session: Session,
    schema: BranchSchema,
    trusted: frozenset[str],
    writable: bool,
    at: float | None,
    main_tables: dict | None,
) -> None:
    conn, world = session.conn, session.world
    assert world is not None  # only a world's session (or a past one's) is placed
    kept = _users_views(session)
    _clear(conn)
    session.materialized = _materialized(conn, schema, world, main_tables) if writable else set()
    writers = world_tables(schema, world.id) if session.materialized else {}
    # (copied natively with the tables their keys link: whole copies all, checked so)
    grouped = worldgroups.grouped(session, writers)
    session.materialized |= set(grouped)
    session.whole = set(grouped) | {
        n
        for _name, (n, t) in schema.tables.items()
        if n in session.materialized
        and n not in grouped
        and worldstate.copies_whole(conn, t, n, n in session.bigger)
    }
    session.native = native_tables(writers, session.whole) | set(grouped)
    made, own = world_objects(
        schema,
        world.id,
        world.base,
        writable,
        at,
        session.materialized,
        session.whole,
        session.native,
        writers or None,
    )
    try:
        for stmt in made:
            conn.execute(stmt)
    except apsw.SQLError as exc:  # (the world's schema changes and main's since no longer fit)
        raise _unfit(world, exc) from None
    session.synced = {}
    try:
        for n, t in worldgroups.fill_order(schema, session.materialized, grouped):
            session.synced[n] = worldstate.fill(
                conn,
                t,
                n,
                world.id,
                world.base.get(n, 0),
                _whole_indexes(session, schema, n, t, writers.get(n)),
                n in session.native,
            )
    except apsw.ConstraintError:  # (rows whose foreign keys don't hold: as main may have)
        if not grouped:
            raise
        raise _Loose(set(grouped)) from None
    for stmt in placeholders(schema, worldschema.DROPPED):
        conn.execute(stmt)
    copies = set()
    guard.install(conn).shadows = _shadows(conn)
    for fts in ftsinfo.fts_tables(conn):  # (an index of rows the world has as main has them
        table = fts.content if fts.kind == "external" else fts.name  # is main's: read there)
        if fts.kind != "contentless" and _differs(conn, schema, world, table or ""):
            copies |= _copy(conn, schema, fts)  # (a past's too: indexed as its rows were)
    _make_all(conn, app_views(schema))
    if writable:
        _make_all(conn, app_view_triggers(schema))
    ours = {r[0] for r in conn.execute("select name from temp.sqlite_schema")}
    _make_all(conn, kept)  # (a TEMP view of the user's that lasts: made again on them)
    session.schema = schema
    session.own_temp = ours
    session.kept, session.rewrites = [], {}  # (AS OF views went with the others)
    session.reads, session.main_rows = {}, {}  # (of the tables as placed now)
    session.seen = world.version
    session.data_version = one_row(conn.execute("pragma data_version"))[0]
    session.temp_version = one_row(conn.execute("pragma temp.schema_version"))[0]
    guard.install(conn).trusted = trusted | frozenset(own) | frozenset(copies)
    guard_own_temp(session)
    _stamp(session)


def quiet(session: Session) -> bool:
    """Whether the world's connection holds what it held when its session was last checked,
    with nothing to check again: no other connection committed to the file since (its
    data_version, which its own commits don't move), no rollback took back what it made (its
    token), no statement that changes the TEMP schema was prepared on it (its guard sees each),
    and nothing said its rows were rewritten (``built_for``: see ``Database.invalidate``)."""
    conn = session.conn
    if session.built_for is None or session.placed is None or not conn.get_autocommit():
        return False  # (inside a transaction: what it reads may yet roll back)
    if guard.install(conn).temp_changed:
        return False
    token, version = one_row(conn.execute(QUIET))
    return token == session.placed and version == session.data_version


def _stamp(session: Session) -> None:
    """What the session says its connection holds (its materialized tables, FTS5 copies, the
    guard's trusted names) is what it holds now: a new token, written in the TEMP schema in the
    transaction that made the objects, so that a rollback (of the call, or to a savepoint)
    taking them back takes the token back too (see ``intact``)."""
    token = next(_TOKENS)
    session.conn.execute(f"UPDATE {PLACED} SET token = ?", (token,))
    session.placed = token


def intact(session: Session) -> bool:
    """Whether the connection still holds what the session says (no rollback took back TEMP
    objects made for it within a transaction: a table the world first wrote, say). If not,
    the session must be placed again."""
    token = one_row(session.conn.execute(f"SELECT token FROM {PLACED}"))[0]
    return session.placed is not None and token == session.placed


def _materialized(
    conn: apsw.Connection, schema: BranchSchema, world: World, main_tables: dict | None
) -> set[int]:
    """The tables a world can't read as main's own: it changed their shape (created, renamed,
    added or dropped a column), holds rows of them, or main changed them since the fork."""
    mains = {n: t for n, t in (main_tables or {}).values()}
    out = set()
    for _name, (n, t) in schema.tables.items():
        main = mains.get(n)
        shaped = (
            main is None
            or t.stored != main.stored
            or t.name != main.name
            or t.column_names != main.column_names
        )
        if shaped or worldstate.differs(conn, n, world.id, world.base.get(n, 0)):
            out.add(n)
    return out


def _whole_indexes(
    session: Session, schema: BranchSchema, n: int, t: TableInfo, wt: WorldTable | None
) -> list[str] | None:
    """A whole copy's indexes (a native one's triggers too: ``wt``, its table's writers), for
    ``fill`` to make once its rows are in (None: not whole)."""
    if n not in session.whole:
        return None
    if n in session.native:
        assert wt is not None  # (a native copy's writers are known: its eligibility read them)
        return native_after_fill(schema, wt)
    return worldstate.index_ddl(t, n, schema.indexes_on(t.name), whole=True)


def materialize(session: Session, n: int) -> None:
    """A table the world read as main's own gets its TEMP tables, views and triggers (a
    statement is about to write it, or main changed it since the fork); copied natively with
    the tables foreign keys link it to, where they all can be (``world.native.group``)."""
    assert session.schema is not None and session.world is not None  # (a placed world)
    writers = world_tables(session.schema, session.world.id)
    members = worldgroups.group_of(session, writers, n, fresh=False)
    if members is None:
        _materialize(session, writers[n])
        return
    kept = (set(session.materialized), set(session.whole), set(session.native))
    session.conn.execute("SAVEPOINT _chronos_group")
    try:
        for m in members:
            if m not in session.materialized:
                _materialize(session, writers[m], native=True)
    except apsw.ConstraintError:  # (rows whose foreign keys don't hold: as main may have)
        session.conn.execute("ROLLBACK TO _chronos_group")
        session.conn.execute("RELEASE _chronos_group")
        session.materialized, session.whole, session.native = kept
        session.loose |= set(members)
        _materialize(session, writers[n])
        return
    session.conn.execute("RELEASE _chronos_group")


def _materialize(session: Session, wt: WorldTable, native: bool | None = None) -> None:
    """One table made the world's own (``native``: copied natively, its group decided)."""
    assert session.schema is not None and session.world is not None  # (a placed world)
    conn, schema, world = session.conn, session.schema, session.world
    t, n = wt.t, wt.n
    whole = bool(native) or worldstate.copies_whole(conn, t, n, n in session.bigger)
    if native is None:
        native = whole and worldnative.eligible(wt)
    made, names = table_objects(schema, wt, whole, native)
    for stmt in made:
        conn.execute(stmt)
    if whole:
        session.whole.add(n)
    if native:
        session.native.add(n)
    indexes = _whole_indexes(session, schema, n, t, wt)
    session.synced[n] = worldstate.fill(conn, t, n, world.id, world.base.get(n, 0), indexes, native)
    session.materialized.add(n)
    for fts in ftsinfo.fts_tables(conn):  # (an index of the table's rows: the world's own now)
        if fts.kind == "external" and (fts.content or "").lower() == t.name.lower():
            _copy(conn, schema, fts)
    guard.install(conn).trusted |= frozenset(names)
    _own_now(session)


def sync(session: Session) -> None:
    """At the start of a call: main's rows changed since this connection last looked (by any
    connection) are pinned as they were at the fork, and a table main changed is read
    materialized from now on. Nothing to do when nobody else wrote the file since."""
    conn, schema, world = session.conn, session.schema, session.world
    if schema is None or world is None or session.past:
        return
    version = one_row(conn.execute("pragma data_version"))[0]
    if version == session.data_version:
        return
    session.data_version = version
    for _name, (n, t) in schema.tables.items():
        if n in session.materialized:
            session.synced[n] = worldstate.pin(
                conn, t, n, world.base.get(n, 0), session.synced.get(n, 0), n in session.whole
            )
        elif worldstate.differs(conn, n, world.id, world.base.get(n, 0)):
            materialize(session, n)


def _own_now(session: Session) -> None:
    conn = session.conn
    session.own_temp |= {r[0] for r in conn.execute("select name from temp.sqlite_schema")}
    session.temp_version = one_row(conn.execute("pragma temp.schema_version"))[0]
    guard_own_temp(session)
    _stamp(session)


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


def _differs(conn: apsw.Connection, schema: BranchSchema, world: World, table: str) -> bool:
    """Whether the branch's rows of a table aren't main's rows now: the world (or a world it
    forked from) changed them, or main did since the fork."""
    found = worldschema.find_table(schema.tables, table)
    if found is None:
        return False
    _name, n, _t = found
    seq = one_row(conn.execute(f"select coalesce(max({SEQ}), 0) from main.{history_table(n)}"))
    if seq[0] > world.base.get(n, 0):
        return True
    if world.id == 0:  # (main as it was: only main's changes since then differ)
        return False
    return bool(
        conn.execute(
            f"select 1 from main.{overlay_table(n)} where {WORLD} = ? limit 1", (world.id,)
        ).fetchall()
    )


def _copy(conn: apsw.Connection, schema: BranchSchema, fts: ftsinfo.Fts) -> set[str]:
    """The world's own copy of an FTS5 table; the names of the triggers it keeps (chronos')."""
    if fts.kind == "external":
        content = worldschema.find_table(schema.tables, fts.content or "")
        if content is None:
            return set()
        _name, n, t = content
        rows, rowid = f"temp.{quote_ident(t.name)}", quote_ident(fts.content_rowid)
        if fts.content_rowid.lower() in _ROWID and t.key_kind == "int":
            rowid = quote_ident(t.pk[0])
        elif fts.content_rowid.lower() in _ROWID and t.key_kind == "rowid":
            rows, rowid = f"temp.{key_view(n)}", quote_ident(ROWID_COL)
        elif fts.content_rowid.lower() in _ROWID:
            raise ChronosError(worldfts.unkeyed(fts, t.name), CONFLICT)
        worldfts.temp_copy(conn, fts, rows, rowid, n)
        return set()
    found = worldschema.find_table(schema.tables, fts.name)
    assert found is not None  # (an FTS5 table with its own content is one of the tables)
    _name, n, _t = found
    return set(worldfts.own_copy(conn, fts.sql, fts.name, f"temp.{key_view(n)}", n))


def promote(session: Session, name: str) -> str | None:
    """A statement on a world is about to write one of main's virtual tables: give the world its
    own copy (None), or say why it can't (an FTS5 table the world's rows don't feed)."""
    conn = session.conn
    found = worldschema.find_table(session.schema.tables, name) if session.schema else None
    if found is not None and found[1] not in session.materialized and not found[2].fts_content:
        materialize(session, found[1])
        return None
    modules = ftsinfo.virtual_tables(conn)
    if name not in modules:  # (a virtual table's own table: its module's write)
        owner = [v for v in modules if name.lower().startswith(v.lower() + "_")]
        if not owner:
            return guard.main_table_message(name)
        # A module prepares its writes as it connects (rtree does, even to be read): connected
        # here, unchecked, the statement runs again without them; one that writes the table
        # itself is refused then
        conn.execute(f"SELECT 1 FROM main.{quote_ident(max(owner, key=len))} LIMIT 0").fetchall()
        return None
    fts = next((f for f in ftsinfo.fts_tables(conn) if f.name == name), None)
    if fts is None or fts.kind == "contentless" or session.schema is None:
        return ftsinfo.refusal(name, modules[name], fts)
    table = fts.content if fts.kind == "external" else fts.name
    content = worldschema.find_table(session.schema.tables, table or "")
    if content is None:
        return ftsinfo.refusal(name, modules[name], fts)
    if content[1] not in session.materialized:  # (the copy reads the world's rows of it, in
        materialize(session, content[1])  # its view: the world's own, made here if not yet;
        if fts.kind == "external":  # an external index's copy made with it)
            return None
    made = _copy(conn, session.schema, fts)
    guard.install(conn).trusted |= frozenset(made)
    _own_now(session)
    return None


def damaged_copies(sessions: list[Session]) -> list[tuple[str, str]]:
    """The worlds' TEMP copies of FTS5 tables whose index FTS5's integrity-check finds damaged
    (or out of step with the world's rows), as (branch, name); their sessions are placed again
    at their next call (``_clear`` drops the copies, ``_copy`` builds them anew)."""
    found = []
    for session in sessions:
        if session.world is None or session.past:
            continue
        names = [name for name in _copies(session.conn) if not _index_whole(session.conn, name)]
        if names:
            session.built_for = None
            found += [(session.world.name, name) for name in names]
    return found


def _copies(conn: apsw.Connection) -> list[str]:
    return [
        name
        for (name,) in all_rows(
            conn.execute(
                "select name from temp.sqlite_schema where type = 'table' "
                "and sql like 'create virtual table%'"
            )
        )
    ]


def _index_whole(conn: apsw.Connection, name: str) -> bool:
    q = quote_ident(name)
    try:
        conn.execute(f"INSERT INTO temp.{q}({q}) VALUES ('integrity-check')")
    except apsw.CorruptError:
        return False
    return True


def _shadows(conn: apsw.Connection) -> frozenset[str]:
    """Main's virtual tables' own tables (lower case)."""
    return frozenset(
        r[0].lower()
        for r in conn.execute(
            "select name from pragma_table_list where schema = 'main' and type = 'shadow'"
        )
    )


def _clear(conn: apsw.Connection) -> None:
    """The objects of an earlier placement go (a view's triggers with it; the event tables,
    with theirs); the context tables stay."""
    for (name,) in all_rows(
        conn.execute("select name from temp.sqlite_schema where type = 'view'")
    ):
        conn.execute(f"drop view temp.{quote_ident(name)}")
    copies = {name.lower() for name in ftsinfo.virtual_tables(conn)}
    worldgroups.drop_native(conn)
    for (name,) in all_rows(
        conn.execute("select name from temp.sqlite_schema where type = 'table' and sql is not null")
    ):
        if name.lower().startswith(("_chronos_e", "_chronos_x", "_chronos_l")) or (
            name.lower() in copies
        ):
            conn.execute(f"drop table temp.{quote_ident(name)}")  # (an FTS5 copy: made anew)


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


def keep_own(session: Session, names: list[str]) -> None:
    """Keep chronos' TEMP objects ``names`` past the call; no statement may drop them."""
    session.own_temp.update(names)
    guard_own_temp(session)
    session.temp_version = one_row(session.conn.execute("pragma temp.schema_version"))[0]


def keep_view(session: Session, name: str, most: int = 32) -> None:
    """Keep a TEMP view past the call (AS OF main at a seq reads the same every time, and
    dropping a view makes SQLite prepare every statement again)."""
    session.kept.append(name)
    while len(session.kept) > most:
        old = session.kept.pop(0)
        session.own_temp.discard(old)
        session.conn.execute(f"drop view if exists temp.{quote_ident(old)}")
    keep_own(session, [name])


def end_call(session: Session, keep_temp: bool = False) -> None:
    """A call ended: TEMP objects it created go (each call its own session), unless they
    last as long as the connection (``keep_temp``)."""
    conn = session.conn
    if session.world is not None:
        worldcontext.reset(conn)
        if session.settled is not None:  # (the call's own commit said the world's version)
            session.seen = session.settled
        elif session.world.id and conn.total_changes() != session.changes:
            # (it wrote: what this connection wrote, what it derives has)
            session.seen = worlds.version_of(conn, session.world.id)
        session.settled, session.changes = None, conn.total_changes()
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
