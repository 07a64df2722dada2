"""Keeping history for the retention window, and no longer: the pruner.

History older than the window is deleted in small batches, each its own short transaction, so
writers wait at most one batch. What is kept whatever its age: each table's newest history row
(a table's seq never goes back), and main's history after the fork point of every open world
(a world reads main as of its fork). Worlds' own history older than the window is never read
again (no moment before the window can be asked for) and goes too.
"""

from __future__ import annotations

import time

from ..storage import moments
from ..storage.db import Database
from ..storage.fetch import all_rows
from ..storage.schema import catalog
from ..storage.shadow import SEQ, TIME, history_table, world_history_table

BATCH = 2000
EVERY = 3600.0  # seconds between automatic runs


def prune(db: Database, now: float | None = None) -> int:
    """Delete expired history; the number of history rows deleted."""
    conn = db.main.conn
    cutoff = (time.time() if now is None else now) - moments.retention(conn)
    kept_for_worlds: dict[int, int] = {}
    for world in db.worlds():
        for n, seq in world.base.items():
            kept_for_worlds[n] = min(kept_for_worlds.get(n, seq), seq)
    deleted = 0
    for (n,) in all_rows(conn.execute("select id from _chronos_tables")):
        if catalog.has_table(conn, history_table(n)):
            floor = kept_for_worlds.get(n)
            deleted += _batches(
                db,
                f"delete from {history_table(n)} where {SEQ} in (select {SEQ} from "
                f"{history_table(n)} where {TIME} < ? and {SEQ} < (select max({SEQ}) from "
                f"{history_table(n)})"
                + (f" and {SEQ} <= {floor}" if floor is not None else "")
                + f" order by {SEQ} limit {BATCH})",
                cutoff,
            )
        if catalog.has_table(conn, world_history_table(n)):
            deleted += _batches(
                db,
                f"delete from {world_history_table(n)} where rowid in (select rowid from "
                f"{world_history_table(n)} where {TIME} < ? limit {BATCH})",
                cutoff,
            )
    # events, merges' rows and the audit as old: what they tell of is gone from history too
    _batches(
        db,
        f"delete from _chronos_events where id in (select id from _chronos_events where "
        f"time < ? limit {BATCH})",
        cutoff,
    )
    _batches(
        db,
        f"delete from _chronos_audit where id in (select id from _chronos_audit where "
        f"time < ? limit {BATCH})",
        cutoff,
    )
    with db.write(conn):
        conn.execute(
            "delete from _chronos_merge_rows where event < coalesce((select min(id) from "
            "_chronos_events), 1 << 62)"
        )
        conn.execute("insert or replace into _chronos_meta values ('pruned_at', ?)", (time.time(),))
    return deleted


def _batches(db: Database, statement: str, cutoff: float) -> int:
    conn, total = db.main.conn, 0
    while True:
        with db.write(conn):
            conn.execute(statement, (cutoff,))
            done = conn.changes()
        total += done
        if done < BATCH:
            return total


def prune_if_due(db: Database) -> None:
    """Prune when the last run is older than an hour (a read otherwise)."""
    row = db.main.conn.execute("select value from _chronos_meta where key = 'pruned_at'").fetchone()
    if row is None or time.time() - float(row[0]) > EVERY:
        prune(db)
