"""After a partial merge the world stays open: what it merged becomes its base, so those rows
are no longer its changes (``only_tables``, ``only_keys``)."""

from __future__ import annotations

import apsw

from ..storage import events
from ..storage.db import Database
from ..storage.fetch import one_row
from ..storage.governance import holds as worldholds
from ..storage.schema.catalog import TableInfo
from ..storage.shadow import DEAD, SEQ, WORLD, history_table, overlay_table
from ..storage.world.sql import CTX, remember_entry
from .changes import Change
from .plan import Plan


def remember_merged(db: Database, p: Plan) -> None:
    """After a partial merge the world stays open. For each merged row, what the parent now
    holds becomes the row's base (frozen copy, world -id), stamped with the parent's position
    after the merge so the merge itself never reads as the parent changing it; and the world's
    own row becomes the same (a combined or kept-as-theirs row settles the world too), so it is
    no longer a change. When that changes the world's row, the entry gets a new stamp on the
    world clock: for worlds forked from this one, their parent did write the row. A merged
    row's mark of being kept over the parent's change goes with it
    (``storage.governance.holds``)."""
    conn = p.parent.conn
    worldholds.release(
        conn, p.world.id, [(o.change.n, o.change.id) for o in p.outcomes if o.outcome != "conflict"]
    )
    world_stamp = events.tick(conn)
    # (the tables as the merge left them: a column it renamed on main is stored so now)
    now = {n: t for n, t in db.tables_for(p.world, conn).values()}
    for o in p.outcomes:
        c = o.change
        if o.outcome == "conflict":
            continue
        t = now.get(c.n, c.t)
        if p.parent.world is None:
            last = f"select coalesce(max({SEQ}), 0) from main.{history_table(c.n)}"
            stamp = one_row(conn.execute(last))[0]
        else:
            stamp = one_row(conn.execute(f"select seq from {CTX}"))[0]
        merged = o.result if o.write else c.theirs
        _put_entry(conn, c, t, -p.world.id, merged, stamp)
        if merged != c.ours:  # the world's row changes: it did write it, for its children
            _put_entry(conn, c, t, p.world.id, merged, world_stamp)
            db.invalidate(p.world.id)


def _put_entry(
    conn: apsw.Connection, c: Change, t: TableInfo, world: int, row: dict | None, seq: int
) -> None:
    if world > 0:  # the world's own row changes: its history keeps what it was
        remember_entry(conn, t, c.n, world, c.key, seq)
    o = f"main.{overlay_table(c.n)}"
    keys = [t.col(k) for k in t.key_cols]
    cols = [t.col(k) for k in t.column_names if k not in t.key_cols]
    values = [None if row is None else row.get(k) for k in t.column_names if k not in t.key_cols]
    conn.execute(
        f"insert or replace into {o}({WORLD}, {SEQ}, {DEAD}, {', '.join(keys + cols)}) "
        f"values (?, ?, ?, {', '.join('?' for _ in keys + cols)})",
        [world, seq, int(row is None), *c.key, *values],
    )
