"""The TEMP objects search keeps on a connection between calls (a branch's indexes)."""

from __future__ import annotations

import apsw

from ..storage.db import Session
from ..storage.fetch import all_rows
from ..storage.world import placement


def temp_names(conn: apsw.Connection, prefix: str) -> list[str]:
    """The TEMP tables named ``prefix`` or ``prefix_...`` (a virtual table and its own)."""
    return [
        name
        for (name,) in all_rows(
            conn.execute(
                "SELECT name FROM temp.sqlite_schema WHERE type = 'table' "
                "AND (name = ?1 OR substr(name, 1, length(?1) + 1) = ?1 || '_')",
                (prefix,),
            )
        )
    ]


def keep_temp(session: Session, *prefixes: str) -> None:
    """Keep the TEMP tables named by ``prefixes`` (a virtual table's own included) past the
    call."""
    placement.keep_own(session, [n for p in prefixes for n in temp_names(session.conn, p)])
