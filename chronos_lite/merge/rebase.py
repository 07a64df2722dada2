"""Rebase: move a world's fork point up to its parent as it is now, keeping its own changes.

Rows the world changed that the parent changed too since the fork conflict, as in a merge, and
are settled the same way (resolve, by_columns, rows) or refused with nothing changed. The
parent is never written.
"""

from __future__ import annotations

from .. import errors
from ..errors import ChronosError
from ..storage import events, lifecycle, worlds
from ..storage.db import Database
from ..storage.governance import holds
from ..storage.shadow import SEQ, WORLD, history_table, overlay_table
from ..storage.worlds import World
from . import reads
from .apply import check_version, conflict_error, plan
from .request import Options
from .schema import conflict_error as schema_conflict_error


def rebase(db: Database, world: World, opts: Options) -> int:
    """Rebase a world as ``opts`` asks (how conflicts settle, the version it must be at);
    returns how many of the parent's rows it took in."""
    check_version(world, opts.version)
    if worlds.children(db.main.conn, world):
        raise ChronosError(
            f"{world.name} has branches forked from it: merge or discard those first, then rebase",
            errors.IN_USE,
        )
    conn = db.main.conn
    with db.write(conn):
        world = worlds.again(conn, world)  # (as the file has it, now nothing moves under it)
        check_version(world, opts.version)
        reads.refuse_stale(db, world, "rebasing")  # (what it read must still hold)
        p = plan(db, world, opts, "rebasing")
        clashes = [s for s in p.schema if s.conflict]
        if clashes:  # the world's schema changes must still fit the parent as it is now
            raise schema_conflict_error(world, p.parent_name, clashes, "rebasing")
        if p.conflicts:
            raise conflict_error(p, "rebasing")
        _mark_taken_over(conn, world.id, p.outcomes)
        taken = _parent_rows_since_fork(db, world)
        parent = db.world(world.parent) if world.parent_id is not None else None
        # every table the world has now or will see after: its own and the parent's
        tables = {**db.tables_for(parent), **db.tables_for(world)}
        fork_seq = events.tick(conn)
        stamp = events.tick(conn)  # the world's own rows stay newer than its new fork
        keep = {(o.change.table, o.change.key): o for o in p.outcomes}
        for n, t in {n: t for n, t in tables.values()}.items():
            _rebuild_overlay(
                conn,
                n,
                t,
                world.id,
                parent.id if parent else None,
                {k: o for (tbl, k), o in keep.items() if tbl == t.name},
                stamp,
            )
        db.invalidate(world.id)  # (its rows were rewritten under its connection)
        base = parent.base if parent else lifecycle.horizons(conn, db.tables())
        worlds.rebased(conn, world, base, fork_seq)
        # the parent's rows taken in: all but those the world's own version replaced whole
        own = {
            (o.change.table, o.change.key) for o in p.outcomes if o.outcome in ("apply", "by hand")
        }
        db.record(conn, world.id, "rebase", len(taken - own), {"onto": p.parent_name})
    return len(taken - own)


def _mark_taken_over(conn, world: int, outcomes: list) -> None:
    """The rows kept over the parent's change since the fork are marked: the new fork is past
    that change, and its merge must still count them as overwriting it (``policy.counts``). A
    row settled theirs is the parent's again: no mark."""
    kept = [o for o in outcomes if o.change.parent_changed and o.outcome in ("apply", "by hand")]
    holds.release(
        conn, world, [(o.change.n, o.change.id) for o in outcomes if o.outcome == "theirs"]
    )
    holds.take_over(conn, world, [(o.change.n, o.change.id) for o in kept])


def _rebuild_overlay(
    conn, n: int, t, world: int, parent: int | None, own: dict, stamp: int
) -> None:
    o = overlay_table(n)
    keys = [t.col(c) for c in t.key_cols]
    cols = [t.col(c) for c in t.column_names if c not in t.key_cols]
    every = ", ".join(keys + cols)
    conn.execute(f"delete from {o} where {WORLD} = ?", (-world,))
    # inherited copies go; the world's own changes are rewritten below
    conn.execute(f"delete from {o} where {WORLD} = ?", (world,))
    if parent is not None:  # as a new fork from the parent would: working and frozen copies
        for ident in (world, -world):
            conn.execute(
                f"insert into {o}({WORLD}, {SEQ}, _chronos_dead, {every}) "
                f"select ?, {SEQ}, _chronos_dead, {every} from {o} where {WORLD} = ?",
                (ident, parent),
            )
    for key, outcome in own.items():
        if outcome.outcome == "theirs":
            continue  # the parent's row stands: nothing of the world's left for it
        row = outcome.result
        _write_entry(conn, o, t, world, key, row, stamp, keys, cols)


def _write_entry(
    conn,
    o: str,
    t,
    world: int,
    key: tuple,
    row: dict | None,
    stamp: int,
    keys: list[str],
    cols: list[str],
) -> None:
    values = [None if row is None else row.get(c) for c in t.column_names if c not in t.key_cols]
    conn.execute(
        f"insert or replace into {o}({WORLD}, {SEQ}, _chronos_dead, {', '.join(keys + cols)}) "
        f"values (?, ?, ?, {', '.join('?' for _ in keys + cols)})",
        [world, stamp, int(row is None), *key, *values],
    )


def _parent_rows_since_fork(db: Database, world) -> set[tuple]:
    """(table, key) of the parent's rows that changed since the world's fork, less the rows
    the world itself gave the parent in a partial merge (its frozen copy stands after them)."""
    conn = db.main.conn
    out: set[tuple] = set()
    parent = db.world(world.parent) if world.parent_id is not None else None
    for name, (n, t) in db.tables_for(parent).items():
        keys = t.stored_list(columns=list(t.key_cols))
        same = " AND ".join(f"f.{t.col(c)} = x.{t.col(c)}" for c in t.key_cols)
        if world.parent_id is None:
            changed = f"select {keys}, {SEQ} from {history_table(n)} where {SEQ} > ?"
            arg = world.base.get(n, 0)
        else:
            changed = f"select {keys}, {SEQ} from {overlay_table(n)} where {WORLD} = ? "
            changed += f"and {SEQ} > {world.fork_seq}"
            arg = world.parent_id
        rows = conn.execute(
            f"select distinct {t.stored_list('x.', list(t.key_cols))} "
            f"from ({changed}) as x where not exists (select 1 from {overlay_table(n)} as f "
            f"where f.{WORLD} = ? and {same} and f.{SEQ} >= x.{SEQ})",
            (arg, -world.id),
        )
        out.update((name, tuple(r)) for r in rows)
    return out
