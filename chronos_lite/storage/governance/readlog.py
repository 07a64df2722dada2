"""The reads a ``check_reads`` world ran and this process hasn't written yet.

A read matters once a write may rest on it: a new read is kept here, in memory, and written
into ``_chronos_reads`` in the transaction of the world's next write (``events.record``, which
every write of a world calls), before a check of the world's reads (``merge/reads.py``), or by
the world's connection at its next read once the oldest waiting is a second old. A read costs a
lookup, not a commit; a crash loses only reads that no write rests on. Another process sees a
world's reads once it wrote, or within a second of its next call.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import apsw

INSERT = (
    "INSERT OR IGNORE INTO main._chronos_reads(world, query, params, first) VALUES (?, ?, ?, ?)"
)
WAIT = 1.0  # seconds the oldest read waits before its connection's next read writes it

_lock = threading.Lock()
# database file -> (world, query, its parameters, when run): first run first
_waiting: dict[str, list[tuple[int, str, Any, float]]] = {}


def params_text(params: Any) -> str:
    """A query's parameters as ``_chronos_reads`` keeps them (blobs as hex: JSON has none)."""
    return json.dumps(params or [], default=lambda v: {"$blob": bytes(v).hex()})


def add(conn: apsw.Connection, world: int, queries: list[str], params: Any) -> bool:
    """Keep ``queries`` of ``world`` (run with ``params``) until written; whether the oldest
    waiting is past ``WAIT`` (the caller writes them all then: ``write_all``)."""
    now = time.time()
    name = conn.filename
    with _lock:
        waiting = _waiting.get(name)
        if waiting is None:
            waiting = _waiting[name] = []
        waiting.extend((world, query, params, now) for query in queries)
        return now - waiting[0][3] > WAIT


def write_world(conn: apsw.Connection, world: int) -> None:
    """Write the reads waiting for ``world`` (inside the caller's write transaction)."""
    name = conn.filename
    with _lock:
        waiting = _waiting.get(name)
        if not waiting:
            return
        rows = [row for row in waiting if row[0] == world]
        if rows:
            _waiting[name] = [row for row in waiting if row[0] != world]
    if rows:
        _insert(conn, name, rows)


def write_all(conn: apsw.Connection) -> None:
    """Write every read waiting for ``conn``'s database: in the caller's transaction, or in a
    transaction of its own."""
    name = conn.filename
    with _lock:
        rows = _waiting.pop(name, [])
    if not rows:
        return
    if not conn.get_autocommit():
        _insert(conn, name, rows)
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        _insert(conn, name, rows)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def write_closing(conn: apsw.Connection) -> None:
    """The database closes: its waiting reads written if they can be (a read-only file, a
    writer that holds on: they go, as no write rests on them)."""
    try:
        name = conn.filename
    except apsw.ConnectionClosedError:
        return  # (closed twice)
    try:
        write_all(conn)
    except apsw.Error:
        with _lock:
            _waiting.pop(name, None)


def forget(conn: apsw.Connection, world: int) -> None:
    """A world ended: its waiting reads go with it."""
    name = conn.filename
    with _lock:
        if name in _waiting:
            _waiting[name] = [row for row in _waiting[name] if row[0] != world]


def _insert(conn: apsw.Connection, name: str, rows: list[tuple[int, str, Any, float]]) -> None:
    try:
        conn.executemany(INSERT, [(w, q, params_text(p), at) for w, q, p, at in rows])
    except BaseException:
        with _lock:  # (not written: they wait for the next write, first as they were)
            _waiting[name] = rows + _waiting.get(name, [])
        raise
