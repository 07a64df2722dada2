"""What a world forked with ``check_reads`` read (``_chronos_reads``): each distinct query it
ran on itself, with its parameters, kept once (a repeat costs a lookup). Its rows, key ranges
and filtered scans are in the queries themselves: ``merge/reads.py`` runs each again on the
world's parent as it was at the fork and as it is now, and what differs changed under it.

A world keeps them when its meta says ``check_reads`` (its fork said so, or its agent's merge
policy has the rule). A new read waits in memory until the world's next write, which writes
it in its own transaction (``readlog``); they are forgotten with the world.
"""

from __future__ import annotations

import json
import weakref
from typing import Any

import apsw

from ...errors import REFUSED, ChronosError
from ..fetch import all_rows
from . import policies, readlog

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


def keep(session: Any, queries: list[str], binds: dict) -> None:
    """After a call on a world that keeps its reads: the queries it ran (``binds``: the
    call's parameters) kept until the world's next write (``readlog``). A query this
    connection kept already costs a lookup (kept reads are never taken back while the world
    lives)."""
    if not queries or session.world is None:
        return
    conn, world = session.conn, session.world.id
    seen = _SEEN.setdefault(conn, set())
    given = repr(binds)  # (a repeat is told by this, without making the JSON)
    fresh = [q for q in dict.fromkeys(queries) if (world, q, given) not in seen]
    if not fresh:
        return
    if readlog.add(conn, world, fresh, binds):
        readlog.write_all(conn)  # (the oldest waited a second: written now)
    seen.update((world, q, given) for q in fresh)
    if len(seen) > 100_000:
        seen.clear()


def unsure(conn: apsw.Connection) -> None:
    """A write on ``conn`` failed: the reads its transaction held may be gone with it, so
    each is kept again when next run."""
    _SEEN.pop(conn, None)


def kept(conn: apsw.Connection, world: int) -> list[tuple[str, Any, float]]:
    """The world's reads, first read first: (query, params, when); those this process
    hasn't written yet are written first (by ``conn``)."""
    readlog.write_all(conn)
    rows = all_rows(
        conn.execute(
            "SELECT query, params, first FROM main._chronos_reads WHERE world = ? "
            "ORDER BY first, query",
            (world,),
        )
    )
    return [(query, _params(params), first) for query, params, first in rows]


def forget(conn: apsw.Connection, world: int) -> None:
    readlog.forget(conn, world)
    conn.execute("DELETE FROM main._chronos_reads WHERE world = ?", (world,))


def _params(text: str) -> Any:
    """The parameters as kept: by name (``{"1": ...}``, as $1 binds) or by position."""
    values = json.loads(text)

    def value(v: Any) -> Any:
        return bytes.fromhex(v["$blob"]) if isinstance(v, dict) and set(v) == {"$blob"} else v

    if isinstance(values, dict):
        return {k: value(v) for k, v in values.items()}
    return [value(v) for v in values]
