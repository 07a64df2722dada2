"""What a world forked with ``check_reads`` read (``_chronos_reads``): each distinct query it
ran on itself, with its parameters, kept once (a repeat costs nothing). Its rows, key ranges
and filtered scans are in the queries themselves: ``merge/reads.py`` runs each again on the
world's parent as it was at the fork and as it is now, and what differs changed under it.

A world keeps them when its meta says ``check_reads`` (its fork said so, or its agent's merge
policy has the rule). They are written by the world's own connection right after the read
(synchronous=normal, as the world's writes are), and forgotten with the world.
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Iterable
from typing import Any

import apsw

from ...errors import REFUSED, ChronosError
from ..fetch import all_rows
from . import policies

_SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # per connection: kept already

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_reads(
    world INTEGER NOT NULL,      -- _chronos_worlds.id
    query TEXT NOT NULL,         -- the statement as it ran on the world
    params TEXT NOT NULL,        -- its parameters, as JSON ([] for none)
    first REAL NOT NULL,         -- when the world first ran it
    PRIMARY KEY (world, query, params)
) WITHOUT ROWID;
"""


_INSERT = (
    "INSERT OR IGNORE INTO main._chronos_reads(world, query, params, first) VALUES (?, ?, ?, ?)"
)


def keeps(meta: dict) -> bool:
    """Whether a world with this meta keeps what it reads."""
    return meta.get("check_reads") is True


def fork_meta(conn: apsw.Connection, meta: dict | None, policy: str | None) -> dict | None:
    """The meta a world is forked with: ``check_reads`` on when the forking agent keeps to a
    merge policy with the rule."""
    found = policies.find(conn, policy) if policy is not None else None
    if found is not None and found.rules.get("check_reads"):
        return {**(meta or {}), "check_reads": True}
    return meta


def check_change(world_name: str, meta: dict, changes: dict, person: bool) -> None:
    """Only a person stops a world keeping what it reads (an agent's check would go blind)."""
    if person or not keeps(meta) or "check_reads" not in changes:
        return
    if changes["check_reads"] is not True:
        raise ChronosError(
            f"{world_name} keeps what it reads (check_reads): only a person turns that off "
            "(chronos <folder> set-meta ...); leave check_reads out of the meta",
            REFUSED,
        )


def params_text(params: Any) -> str:
    """A query's parameters as the key keeps them (blobs as hex: JSON has none)."""
    return json.dumps(params or [], default=lambda v: {"$blob": bytes(v).hex()})


def keep(db: Any, session: Any, queries: list[str], binds: dict) -> None:
    """After a call on a world that keeps its reads: the queries it ran (``binds``: the
    call's parameters) kept, by the world's own connection. A query this connection kept
    already costs a lookup (kept reads are never taken back while the world lives)."""
    if not queries or session.world is None:
        return
    conn, world = session.conn, session.world.id
    seen = _SEEN.setdefault(conn, set())
    given = repr(binds)  # (a repeat is told by this, without making the JSON)
    fresh = [q for q in dict.fromkeys(queries) if (world, q, given) not in seen]
    if not fresh:
        return
    params = params_text(binds)
    new = [(q, params) for q in fresh]
    if len(new) == 1:  # (one statement: its own transaction, no BEGIN ... COMMIT round)
        conn.execute(_INSERT, (world, new[0][0], params, time.time()))
    else:
        with db.write(conn):
            record(conn, world, new)
    seen.update((world, q, given) for q in fresh)
    if len(seen) > 100_000:
        seen.clear()


def record(conn: apsw.Connection, world: int, reads: Iterable[tuple[str, str]]) -> None:
    """Keep ``reads`` (query, params as ``params_text``) of ``world`` (those kept already stay
    as they were)."""
    now = time.time()
    rows = [(world, query, params, now) for query, params in reads]
    if rows:
        conn.executemany(_INSERT, rows)


def kept(conn: apsw.Connection, world: int) -> list[tuple[str, Any, float]]:
    """The world's reads, first read first: (query, params, when)."""
    rows = all_rows(
        conn.execute(
            "SELECT query, params, first FROM main._chronos_reads WHERE world = ? "
            "ORDER BY first, query",
            (world,),
        )
    )
    return [(query, _params(params), first) for query, params, first in rows]


def forget(conn: apsw.Connection, world: int) -> None:
    conn.execute("DELETE FROM main._chronos_reads WHERE world = ?", (world,))


def _params(text: str) -> Any:
    """The parameters as kept: by name (``{"1": ...}``, as $1 binds) or by position."""
    values = json.loads(text)

    def value(v: Any) -> Any:
        return bytes.fromhex(v["$blob"]) if isinstance(v, dict) and set(v) == {"$blob"} else v

    if isinstance(values, dict):
        return {k: value(v) for k, v in values.items()}
    return [value(v) for v in values]
