"""Reviews: the merges a merge policy (or production mode) held for a person
(``_chronos_reviews``).

A held world waits here, one row per world, with the reasons its merge broke, who asked, when,
and the version it was at then; a policy's reviewer may record a verdict first (approve, reject,
pass, with its reason). The row goes when the world is merged or discarded; a world no longer
open is never listed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import apsw

from ..fetch import all_rows

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_reviews(
    world INTEGER PRIMARY KEY,          -- _chronos_worlds.id
    agent TEXT NOT NULL,                -- who asked for the merge
    policy TEXT,                        -- the merge policy that held it (NULL: production)
    reasons TEXT NOT NULL,              -- JSON: each broken rule, as the refusal said it
    asked REAL NOT NULL,
    version INTEGER NOT NULL,           -- the world's version when its agent asked
    verdict TEXT,                       -- a reviewer's: approve | reject | pass
    reviewer TEXT,
    reason TEXT,
    decided REAL
);
"""

VERDICTS = ("approve", "reject", "pass")


@dataclass(frozen=True)
class Review:
    world: int
    agent: str
    policy: str | None
    reasons: list[str]
    asked: float
    version: int
    verdict: str | None
    reviewer: str | None
    reason: str | None
    decided: float | None


_COLUMNS = "r.world, r.agent, r.policy, r.reasons, r.asked, r.version, r.verdict, r.reviewer, "
_COLUMNS += "r.reason, r.decided"


def _row(r: tuple) -> Review:
    return Review(r[0], r[1], r[2], json.loads(r[3]), *r[4:])


def queue(
    conn: apsw.Connection,
    world: int,
    agent: str,
    policy: str | None,
    reasons: list[str],
    version: int,
) -> Review:
    """Hold the world for a person (in the caller's write transaction); asked again, its
    reasons and version are the latest ask's, and a verdict given before goes."""
    conn.execute(
        "insert or replace into main._chronos_reviews(world, agent, policy, reasons, asked, "
        "version) values (?, ?, ?, ?, ?, ?)",
        (world, agent, policy, json.dumps(reasons, ensure_ascii=False), time.time(), version),
    )
    found = find(conn, world)
    assert found is not None
    return found


def find(conn: apsw.Connection, world: int) -> Review | None:
    rows = all_rows(
        conn.execute(f"select {_COLUMNS} from main._chronos_reviews r where r.world = ?", (world,))
    )
    return _row(rows[0]) if rows else None


def listing(conn: apsw.Connection) -> list[Review]:
    """The held merges of open worlds, oldest first."""
    rows = all_rows(
        conn.execute(
            f"select {_COLUMNS} from main._chronos_reviews r join main._chronos_worlds w "
            f"on w.id = r.world where w.state = 'open' order by r.asked, r.world"
        )
    )
    return [_row(r) for r in rows]


def decide(conn: apsw.Connection, world: int, verdict: str, reviewer: str, reason: str) -> None:
    conn.execute(
        "update main._chronos_reviews set verdict = ?, reviewer = ?, reason = ?, decided = ? "
        "where world = ?",
        (verdict, reviewer, reason, time.time(), world),
    )


def clear(conn: apsw.Connection, world: int) -> None:
    """The world merged or was discarded: it waits no more."""
    conn.execute("delete from main._chronos_reviews where world = ?", (world,))
