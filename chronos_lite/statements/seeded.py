"""A world's ``random()`` seeded: on a simulation's connections SQLite's ``random()`` is
replaced by one that, while a world's script and score run (``seeded``), draws from a generator
seeded by the world's seed, so the same seed makes the same numbers in the same order, and
otherwise draws from the system's random source as SQLite's own does. (SQLite's ``random()``
can't be seeded, and once an app's function has replaced it on a connection SQLite can't give
it back there: so only connections of the simulation's own get it, closed at its end.)"""

from __future__ import annotations

import contextlib
import hashlib
import random as pyrandom
import weakref
from collections.abc import Iterator

import apsw

_HALF = 2**63
_SYSTEM = pyrandom.SystemRandom()


class _Source:
    """What a connection's ``random()`` draws from now."""

    def __init__(self) -> None:
        self.rng: pyrandom.Random = _SYSTEM

    def draw(self, *_args: object) -> int:
        return self.rng.getrandbits(64) - _HALF  # a signed 64-bit integer, as SQLite's


_SOURCES: weakref.WeakKeyDictionary[apsw.Connection, _Source] = weakref.WeakKeyDictionary()


def world_seed(seed: int, index: int) -> int:
    """World ``index``'s seed in a simulation seeded ``seed`` (``$2`` of its script): a 63-bit
    number, the same for the same pair on any machine."""
    digest = hashlib.sha256(f"chronos-simulate:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def install(conn: apsw.Connection) -> None:
    """``random()`` on ``conn`` replaced by one ``seeded`` can seed (a new connection's)."""
    source = _Source()
    _SOURCES[conn] = source
    conn.create_scalar_function("random", source.draw, 0)  # (an app's comes before SQLite's)


@contextlib.contextmanager
def seeded(conn: apsw.Connection, seed: int) -> Iterator[None]:
    """``random()`` on ``conn`` (``install``-ed) seeded by ``seed`` for the block."""
    source = _SOURCES.get(conn)
    if source is None:
        raise RuntimeError("seeded() on a connection without install()")  # (a bug of chronos)
    source.rng = pyrandom.Random(seed)
    try:
        yield
    finally:
        source.rng = _SYSTEM
