"""check_reads: whether what a world read changed under it since its fork (or last rebase).

Each query the world kept (``storage/governance/reads.py``) runs again on the world's parent
twice: as the parent was at the fork (main at the world's fork seqs, a parent world as it was
at that moment) and as it is now. A query whose rows differ read something that changed: a row
it read changed or went, or a row its range or filter would take in came, an empty result
included. The world's own view doesn't take part (its changes are its own), and nothing is
written. The queries run read-only under the guard, as a past branch's do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import apsw

from ..errors import REFUSED, ChronosError
from ..storage import faults, guard, worlds
from ..storage.db import Database, Session
from ..storage.governance import reads as kept_reads
from ..storage.worlds import World

READ_ONLY = guard.Access(write=False, settings=False)
MOST_SHOWN = 20  # changed reads a refusal names


@dataclass
class Changed:
    query: str
    params: Any
    then: int  # rows at the fork
    now: int  # rows now
    why: str
    read_at: float = 0.0  # when the world first ran it

    def shown(self) -> str:
        given = f" with {json.dumps(self.params)}" if self.params else ""
        return f"{' '.join(self.query.split())}{given}: {self.why}"


@dataclass
class Checked:
    world: World
    against: str  # what the reads were compared with: the parent as it is now
    reads: int  # the queries kept
    changed: list[Changed]


def check(db: Database, world: World) -> Checked:
    """The world's kept reads, each compared between its parent at the fork and now."""
    queries = kept_reads.kept(db.main.conn, world.id)
    against = f"{world.parent} as it is now"
    if not queries:
        return Checked(world, against, 0, [])
    then = _at_fork(db, world)
    now = db.session(world.parent if world.parent_id is not None else "main")
    try:
        changed = [c for q, p, at in queries if (c := _compared(then, now, q, p, at)) is not None]
    finally:
        db.end_call(now)
    return Checked(world, against, len(queries), changed)


def refuse_stale(db: Database, world: World, doing: str) -> None:
    """``doing`` (rebasing) is refused while something the world read changed since and the
    world wrote after reading it: its changes may rest on what it read. A world that only
    read rebases (then reads again: the way on that check_reads tells)."""
    wrote = last_write(db, world) if kept_reads.keeps(world.meta) else None
    if wrote is None:
        return  # (nothing it wrote can rest on what it read)
    found = [c for c in check(db, world).changed if wrote > c.read_at]
    if found:
        listed = "; ".join(c.shown() for c in found[:MOST_SHOWN])
        more = f" (and {len(found) - MOST_SHOWN} more)" if len(found) > MOST_SHOWN else ""
        raise ChronosError(
            f"{doing} {world.name} is refused: {len(found)} of the reads it kept changed in "
            f"{world.parent} since it forked, and it wrote after reading them ({listed}{more}): "
            f"its changes may rest on what it read. Discard it and start again from "
            f"{world.parent} as it is now, or a person merges it as it is (nothing changed)",
            REFUSED,
            {"changed": [c.shown() for c in found]},
        )


def last_write(db: Database, world: World) -> float | None:
    """When the world last changed its rows or schema (None: never)."""
    row = db.main.conn.execute(
        "SELECT max(time) FROM main._chronos_events WHERE world = ? "
        "AND kind IN ('write', 'schema', 'restore', 'rollback')",
        (world.id,),
    ).fetchone()
    return row[0] if row else None


def _at_fork(db: Database, world: World) -> Session:
    """The parent as the world saw it at its fork (or last rebase)."""
    label = f"{world.parent} at the fork of {world.name}"
    if world.parent_id is None:
        seqs = {n: world.base.get(n, 0) for n, _t in db.tables().values()}
        return db.past_session("main", world.created, label, seqs)
    since = worlds.readable_since(db.main.conn, world)
    return db.past_session(world.parent, since, label)


def _compared(
    then: Session, now: Session, query: str, params: Any, read_at: float
) -> Changed | None:
    before, after = _rows(then, query, params), _rows(now, query, params)
    if before == after:
        return None
    if isinstance(before, str) or isinstance(after, str):
        why = f"it ran at the fork ({before})" if isinstance(before, str) else ""
        why = why or f"it doesn't run now ({after})"
        return Changed(query, params, -1, -1, why, read_at)
    (n_then, _), (n_now, _) = before, after
    rows = f"{n_now} row{'s' if n_now != 1 else ''}"
    why = f"{n_then} then, {rows} now" if n_then != n_now else f"{rows}, different now"
    return Changed(query, params, n_then, n_now, why, read_at)


def _rows(session: Session, query: str, params: Any) -> tuple[int, int] | str:
    """The query's result as (rows, an order-free digest of them), or why it failed."""
    conn = session.conn
    began = conn.get_autocommit()  # (in a rebase's write transaction: read inside it)
    if began:
        conn.execute("BEGIN")
    checked = guard.checking(conn, READ_ONLY)
    count, digest = 0, 0
    try:
        for row in conn.execute(READ_ONLY.mark + query, params or None):
            count += 1
            digest = (digest + hash(repr(row))) & 0xFFFFFFFFFFFFFFFF
    except faults.FAULTS:
        raise
    except apsw.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        checked.done()
        if began and not conn.get_autocommit():
            conn.execute("ROLLBACK")
    return count, digest
