"""The context a world's triggers run in: one row of a TEMP table per connection (``CTX``),
set for each statement by the code that runs it, and a few TEMP tables the triggers keep.

``mode``      the statement's own conflict clause (0: none; 1 ROLLBACK .. 5 REPLACE)
``n``         rows the statement itself wrote (not its triggers' or foreign keys' rows)
``seq``       the world-clock stamp of the statement's writes
``fk, dfk``   foreign-key counters: the statement's, and the transaction's (deferred keys)
``defer``     PRAGMA defer_foreign_keys, as it stands for the statement
``depth``     how deep in writes a trigger set off the current row is (0: the statement's own)
``skip``      the current row is skipped (an OR IGNORE, a BEFORE trigger's RAISE(IGNORE))
``setmask``   the columns (bits) an UPDATE statement sets that UPDATE OF triggers ask about
``replacing`` a REPLACE is deleting the rows a new one collides with: their DELETE triggers
              don't fire (as on main, where PRAGMA recursive_triggers is off)
``replica``   a merge is writing: rows only, as data (no app triggers, no key actions)
``k, k2``     scratch values of one step to the next
"""

from __future__ import annotations

from typing import Protocol

import apsw

from .. import events
from ..fetch import one_row

CTX = "temp._chronos_ctx"
CTX_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_ctx(id INTEGER PRIMARY KEY CHECK (id = 1), "
    "mode INTEGER NOT NULL DEFAULT 0, n INTEGER NOT NULL DEFAULT 0, k, k2, seq INTEGER, "
    "fk INTEGER NOT NULL DEFAULT 0, dfk INTEGER NOT NULL DEFAULT 0, "
    "defer INTEGER NOT NULL DEFAULT 0, depth INTEGER NOT NULL DEFAULT 0, "
    "skip INTEGER NOT NULL DEFAULT 0, setmask INTEGER NOT NULL DEFAULT 0, "
    "replacing INTEGER NOT NULL DEFAULT 0, replica INTEGER NOT NULL DEFAULT 0);"
    "INSERT OR IGNORE INTO temp._chronos_ctx(id) VALUES (1);"
    # Keys an INSERT wrote, in order, for its RETURNING clause (see sqlrun).
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_inserted(ord INTEGER PRIMARY KEY, k);"
    # The columns (bits) the INSERT being run names, per table: the others take defaults.
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_given(n INTEGER PRIMARY KEY, mask INTEGER);"
    # The app's triggers running now (a trigger doesn't fire itself again, as on main).
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_active(id INTEGER, frame INTEGER);"
    # Rows of events whose BEFORE triggers all ran (a RAISE(IGNORE) stops them short).
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_done(events TEXT, frame INTEGER);"
    # Keys main changed since a world's fork, being pinned as they were then (world.state).
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_pins(k TEXT PRIMARY KEY) WITHOUT ROWID;"
    # What the connection's TEMP objects were last made as (placement's token): a rollback
    # that takes them back takes the token back with them.
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_placed(id INTEGER PRIMARY KEY CHECK (id = 1), "
    "token INTEGER);"
    "INSERT OR IGNORE INTO temp._chronos_placed(id) VALUES (1)"
)
SKIPPING = f"(SELECT skip FROM {CTX})"
DEPTH_UP = f"UPDATE {CTX} SET depth = depth + 1"
DEPTH_DOWN = f"UPDATE {CTX} SET depth = depth - 1"
COUNT = f"UPDATE {CTX} SET n = n + 1 WHERE depth = 0"
MODES = {"rollback": 1, "abort": 2, "fail": 3, "ignore": 4, "replace": 5}
# World writes are stamped with the world clock (``_chronos_clock``), moved on once per
# statement by the caller and kept in the context row: no clock update per row. A write made
# on the connection outside a call is stamped one past the clock.
CLOCK = f"coalesce((SELECT seq FROM {CTX}), (SELECT seq + 1 FROM main._chronos_clock))"
FK_FAILED = "FOREIGN KEY constraint failed"


class Placed(Protocol):
    """What the count reads of a connection placed on a branch (``placement.Session``, which
    imports this module through ``sql``)."""

    @property
    def world(self) -> object | None: ...

    @property
    def conn(self) -> apsw.Connection: ...


def begin_world_write(
    conn: apsw.Connection,
    mode: str | None,
    tick: bool = True,
    defer: bool = False,
    on_view: bool = False,
    fresh: bool = False,
) -> int | None:
    """Before a write statement on a world: its conflict clause (None: it has none), its
    counters reset, and (for a statement that writes) a new stamp of the world clock, which
    it returns. ``on_view``: it writes an app's view (whose triggers' rows SQLite doesn't
    count); ``fresh``: the first in a new transaction (its deferred foreign keys from zero)."""
    seq = events.tick(conn) if tick else None
    conn.execute(
        f"update {CTX} set mode = ?, n = 0, fk = 0, depth = ?, skip = 0, setmask = 0, "
        f"seq = ?, defer = ?{', dfk = 0' if fresh else ''}",
        (MODES[mode] if mode else 0, int(on_view), seq, int(defer)),
    )
    _used.setdefault(id(conn), set()).add("ctx")
    _since[id(conn)] = conn.total_changes()  # (what the statement writes moves it on)
    return seq


# What each connection's statements left in the context since it was last reset (``reset``),
# and its count of changes when the last write statement began (``rows_written``): kept here,
# by connection, so that neither costs a statement
_used: dict[int, set[str]] = {}
_since: dict[int, int] = {}


def reset(conn: apsw.Connection) -> None:
    """After a call: the context as no statement set it (a write outside a call is stamped one
    past the clock), and no INSERT's columns named; only what a statement set."""
    used = _used.pop(id(conn), set())
    if "ctx" in used:
        conn.execute(f"UPDATE {CTX} SET seq = NULL, mode = 0")
    if "given" in used:
        conn.execute("DELETE FROM temp._chronos_given")


def named_mask(columns: list[str], named: list[str]) -> int:
    """The bits of the columns ``named`` (any case) by their position in ``columns`` (the first
    62: past them, a NULL takes the default)."""
    names = [c.lower() for c in columns]
    wanted = {c.lower() for c in named}
    return sum(1 << i for i, c in enumerate(names) if i < 62 and c in wanted)


def given_columns(conn: apsw.Connection, n: int, mask: int | None) -> None:
    """The columns an INSERT into table ``n`` names (bits by position; None: not known, a
    NULL then takes the column's default)."""
    conn.execute("insert or replace into temp._chronos_given values (?, ?)", (n, mask))
    _used.setdefault(id(conn), set()).add("given")


def new_transaction(conn: apsw.Connection) -> None:
    """A transaction began: its deferred foreign-key counter starts at zero."""
    conn.execute(f"update {CTX} set dfk = 0")


def broken_keys(conn: apsw.Connection, transaction: bool = False) -> bool:
    """Whether the statement (or the transaction) left rows without their parent row."""
    column = "dfk" if transaction else "fk"
    return bool(one_row(conn.execute(f"select {column} > 0 from {CTX}"))[0])


def rows_written(session: Placed) -> int:
    """Rows the last statement wrote: on a world its INSTEAD OF triggers count them (SQLite's
    changes() is 0 for a view); a world's copy of an FTS5 table, SQLite itself (changes(), when
    the statement changed anything at all since begin_world_write)."""
    conn = session.conn
    if session.world is not None:  # (the clock's stamp and the mode go with the statement)
        since = _since.get(id(conn))
        direct = conn.changes() if since is None or conn.total_changes() != since else 0
        counted = one_row(conn.execute(f"UPDATE {CTX} SET seq = NULL, mode = 0 RETURNING n"))[0]
        _used.get(id(conn), set()).discard("ctx")  # (reset just now)
        return counted or direct
    return conn.changes()
