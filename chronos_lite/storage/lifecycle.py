"""A world's life: fork (instant: no rows copied from main), notes (``set_meta``), and its end
(discarded, or merged: the merge calls ``finish``). The catalog rows are ``worlds``'; the
overlay copies and the cleanup of a world's rows are here."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import apsw

from .. import hints, names
from ..errors import IN_USE, ChronosError
from ..sqltext import quote_ident
from . import events, moments, worlds
from .branchref import BranchRef
from .fetch import all_rows
from .governance import holds as worldholds
from .governance import reads as worldreads
from .governance import reviews
from .schema import catalog
from .shadow import SEQ, WORLD, history_table, overlay_table, world_history_table
from .world import schema as worldschema
from .worlds import World

if TYPE_CHECKING:
    from .db import Database


def fork(
    db: Database,
    name: str,
    source: str | None = None,
    meta: dict | None = None,
    owner: str | None = None,
) -> World:
    """Create a world from main or from another world (``source``; ``name@when``: as it was
    then). Instant: no rows are copied from main; forking a world copies only that world's own
    changes."""
    if name == "main":
        raise ChronosError("'main' is taken by the database itself; pick another branch name")
    if "@" in name:
        raise ChronosError(f"branch names can't contain '@' (it reads as name@when): '{name}'")
    names.check(name, "a branch's name")
    meta_text = worlds.encode_meta(meta or {})
    tables = db.tables()
    with db.write() as conn:
        if worlds.is_open(conn, name):
            raise ChronosError(
                f"branch '{name}' already exists: pick another name, or discard it first",
                IN_USE,
            )
        names.lookalike(name, ["main", *worlds.open_names(conn)])
        src = BranchRef.parse(source)
        past = src.past and src.is_main  # main as it was at a moment
        then = None  # forking a world as it was at a moment
        parent: World | None
        if src.past and not past:
            then = moments.checked_moment(db, src.when or "")
            parent = worlds.find(conn, src.name)
            moments.check_world_moment(db.main.conn, parent, then, str(src))
        else:
            parent = None if src.is_main else db.resolve(src)
        clock = events.tick(conn)  # writes stamped before the fork are not the new world's
        if then is not None:  # the parent's clock just before its first write after then
            assert parent is not None  # (then is set only with a world to fork from)
            clock = _clock_at(db, conn, parent, then, clock)
        if past:  # main as it was at a moment: each table as of its last change before
            when = moments.checked_moment(db, src.when or "")
            horizon = {n: moments.seq_at(conn, n, when) for n, _t in tables.values()}
        else:
            horizon = parent.base if parent else horizons(conn, tables)
        owner = owner or events.current().name
        new_id = worlds.add(conn, name, parent, horizon, clock, owner, meta_text)
        worldholds.keep_scope(conn, new_id, worldholds.scope_of(meta or {}))
        db.record(conn, new_id, "fork", detail={"from": source or "main"})
        db.record(conn, parent.id if parent else 0, "forked", detail={"branch": name})
        if parent:
            for n, _t in db.tables_for(parent, conn).values():
                # The world's working copy, and a frozen one (world -id): the parent as the
                # world saw it at the fork, the base of its diff and merge.
                if then is not None:  # the parent's entries as they were then
                    _copy_overlay_then(conn, n, new_id, parent.id, then, clock)
                    continue
                conn.execute(_copy_overlay_sql(conn, n), (new_id, parent.id))
                conn.execute(_copy_overlay_sql(conn, n), (-new_id, parent.id))
    return db.world(name)


def horizons(conn: apsw.Connection, tables: dict) -> dict[int, int]:
    """Main as it is now: each table's last history seq (one index lookup per table)."""
    return {
        n: all_rows(conn.execute(f"select coalesce(max({SEQ}), 0) from {history_table(n)}"))[0][0]
        for n, _t in tables.values()
    }


def _clock_at(db: Database, conn: apsw.Connection, parent: World, then: float, now: int) -> int:
    """A world forked from ``parent`` as it was at ``then`` counts as forked just before the
    parent's first write after then: the parent's writes since are the parent's changes."""
    first = now
    for n, _t in db.tables_for(parent, conn).values():
        row = all_rows(
            conn.execute(
                f"select min({SEQ}) from {world_history_table(n)} where {WORLD} = ? "
                f"and _chronos_time > ?",
                (parent.id, then),
            )
        )[0]
        if row[0] is not None:
            first = min(first, row[0] - 1)
    return first


def _copy_overlay_then(
    conn: apsw.Connection, n: int, new_id: int, parent: int, then: float, seq: int
) -> None:
    """A world's working and frozen copies of its parent's overlay entries as they were at
    ``then``: each key's first history record after it, else its entry now (stamped at most
    ``seq``, the fork: they are what the world starts from, not its changes)."""
    o, wh = overlay_table(n), world_history_table(n)
    info = list(conn.execute(f"pragma table_info({o})"))
    cols = [r[1] for r in info]
    keys = [r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5])][1:]  # (world,)
    rest = [c for c in cols if c not in (WORLD, SEQ, "_chronos_dead")]
    same = " and ".join(f"x.{quote_ident(k)} = e.{quote_ident(k)}" for k in keys)
    same_xy = " and ".join(f"y.{quote_ident(k)} = x.{quote_ident(k)}" for k in keys)
    picked = ", ".join(quote_ident(c) for c in rest)
    for ident in (new_id, -new_id):
        conn.execute(
            f"insert into {o}({WORLD}, {SEQ}, _chronos_dead, {picked}) "
            f"select {ident}, min(e.{SEQ}, {seq}), e._chronos_dead, "
            + ", ".join(f"e.{quote_ident(c)}" for c in rest)
            + f" from {o} e where e.{WORLD} = ? and not exists (select 1 from {wh} x "
            f"where x.{WORLD} = ? and {same} and x._chronos_time > ?) "
            f"union all select {ident}, {seq}, x._chronos_dead, "
            + ", ".join(f"x.{quote_ident(c)}" for c in rest)
            + f" from {wh} x where x.{WORLD} = ? and x._chronos_time > ? and x._chronos_op = 1 "
            f"and not exists (select 1 from {wh} y where y.{WORLD} = ? and {same_xy} "
            f"and y._chronos_time > ? and (y._chronos_time < x._chronos_time or "
            f"(y._chronos_time = x._chronos_time and y.rowid < x.rowid)))",
            (parent, parent, then, parent, then, parent, then),
        )


def _copy_overlay_sql(conn: apsw.Connection, n: int) -> str:
    o = overlay_table(n)
    cols = [r[1] for r in conn.execute(f"pragma table_info({o})")]
    rest = ", ".join(quote_ident(c) for c in cols if c != WORLD)
    return f"insert into {o}({WORLD}, {rest}) select ?, {rest} from {o} where {WORLD} = ?"


def discard(db: Database, world: World, cascade: bool = False) -> list[World]:
    """Throw a world (and with ``cascade`` its descendants) away. Returns what was discarded."""
    name = world.name
    with db.write() as conn:
        world = worlds.again(conn, world)
        below = worlds.children(conn, world)
        if below and not cascade:
            names = ", ".join(w.name for w in below)
            raise ChronosError(
                f"branch '{name}' has branches forked from it ({names}): discard those "
                f"first, or pass {hints.arg('cascade')} (in SQL DISCARD WORLD {name} CASCADE) "
                f"to discard them too",
                IN_USE,
            )
        gone = [*reversed(below), world]
        for w in gone:
            finish(conn, w.id)
            db.record(conn, w.parent_id or 0, "discarded", detail={"branch": w.name})
    for w in gone:
        db.close_session(w.id)
    return gone


def finish(conn: apsw.Connection, world_id: int, state: str = "discarded") -> None:
    """A world ends (in the caller's transaction): its rows and schema changes go (a merge has
    taken what it merged), its catalog row stays with its state."""
    worldschema.discard_ops(conn, world_id)
    for (n,) in all_rows(conn.execute("select id from _chronos_tables")):
        conn.execute(
            f"delete from {overlay_table(n)} where {WORLD} in (?, ?)", (world_id, -world_id)
        )
        if catalog.has_table(conn, world_history_table(n)):  # (not for tables dropped before)
            conn.execute(f"delete from {world_history_table(n)} where {WORLD} = ?", (world_id,))
    reviews.clear(conn, world_id)
    worldholds.forget(conn, world_id)
    worldreads.forget(conn, world_id)
    worlds.end(conn, world_id, state)


def meta_after(meta: dict, changes: dict) -> dict:
    """``meta`` with ``changes`` merged in (a None value removes its key)."""
    out = dict(meta)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def set_meta(db: Database, world: World | None, changes: dict, rescope: bool = True) -> World:
    """Merge ``changes`` into a world's metadata (None: main, which has none); a None value
    removes a key. ``rescope``: the scope its merge holds to becomes the one the new meta
    declares (a person's set_meta; an agent's leaves its fork's scope standing)."""
    if world is None:
        raise ChronosError("main has no metadata: set_meta works on a branch you forked")
    with db.write() as conn:
        world = worlds.again(conn, world)
        meta = meta_after(world.meta, changes)
        worlds.set_meta(conn, world, meta)
        if rescope and any(k in changes for k in worldholds.SCOPE_KEYS):
            worldholds.keep_scope(conn, world.id, worldholds.scope_of(meta))
    return dataclasses.replace(world, meta=meta)
