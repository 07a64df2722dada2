"""A session: a connection placed on one branch, and what its placement left on it."""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from ..worlds import World
from .schema import BranchSchema


@dataclass
class Session:
    """A connection placed on one branch: main, or a world through TEMP views."""

    conn: apsw.Connection
    world: World | None = None
    past: bool = False  # main as it was at a moment (name@when): read only
    built_for: tuple | None = None
    temp_version: int = 0
    own_temp: set[str] = field(default_factory=set)
    kept: list[str] = field(default_factory=list)  # AS OF views kept between calls, oldest first
    # AS OF statements rewritten to name kept views: (text, schema, world) -> (sql, valid until)
    rewrites: dict[tuple, tuple[str, float]] = field(default_factory=dict)
    schema: BranchSchema | None = None  # what a world's connection is placed on
    # What a world's connection derives from the file (materialized tables, FTS5 copies)
    # holds the world as this connection last saw it: the world's version then (another
    # connection's write makes it stale: placed again), main's history per table, the
    # file's data_version (unchanged: nobody else wrote since)
    seen: int | None = None
    materialized: set[int] = field(default_factory=set)
    synced: dict[int, int] = field(default_factory=dict)
    data_version: int | None = None
    # The token placement last wrote with the TEMP objects it made (``placement.intact``)
    placed: int | None = None

    @property
    def branch(self) -> str:
        return self.world.name if self.world else "main"
