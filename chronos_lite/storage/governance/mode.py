"""The database's mode: development (agents with write_main and merge_own reach main, under
their merge policy if they have one) or production (they don't: every agent's world with
changes waits for a person). Kept in ``_chronos_meta``; development by default."""

from __future__ import annotations

import apsw

from ... import errors
from ...errors import ChronosError

MODES = ("development", "production")


def mode(conn: apsw.Connection) -> str:
    row = conn.execute("select value from main._chronos_meta where key = 'mode'").fetchone()
    return row[0] if row and row[0] in MODES else "development"


def set_mode(conn: apsw.Connection, value: str) -> None:
    """(In the caller's write transaction.)"""
    if value not in MODES:
        raise ChronosError(
            f"the mode is development or production, not {value!r}", errors.BAD_ARGUMENT
        )
    conn.execute("insert or replace into main._chronos_meta values ('mode', ?)", (value,))
