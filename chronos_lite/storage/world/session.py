"""A connection placed on a branch, and what it holds of it (``placement`` puts it there)."""

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
    whole: set[int] = field(default_factory=set)  # materialized as a whole copy (world.state)
    native: set[int] = field(default_factory=set)  # of them, copied natively (world.native)
    # tables copied whole whatever their size, and what reads of the others cost (``demand``)
    bigger: set[int] = field(default_factory=set)
    # tables whose rows broke a foreign key as they were copied natively: kept apart here
    loose: set[int] = field(default_factory=set)
    reads: dict[str, tuple[frozenset[int], frozenset[int]]] = field(default_factory=dict)
    read_whole: dict[int, int] = field(default_factory=dict)
    scan_time: dict[int, float] = field(default_factory=dict)
    main_rows: dict[int, int] = field(default_factory=dict)
    synced: dict[int, int] = field(default_factory=dict)
    data_version: int | None = None
    # The token placement last wrote with the TEMP objects it made (``placement.intact``)
    placed: int | None = None
    # The world's version the call's own commit left (None: read it at the call's end, if the
    # connection changed anything), and the connection's count of changes when a call ended
    settled: int | None = None
    changes: int = 0
    # What search keeps on the connection (its TEMP indexes), by what they index
    search: dict[tuple[str, int], object] = field(default_factory=dict)

    @property
    def branch(self) -> str:
        return self.world.name if self.world else "main"
