"""The TEMP objects search keeps on a connection between calls (a branch's indexes)."""

from __future__ import annotations

import apsw

from ..storage.db import Session
from ..storage.fetch import all_rows, one_row
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
    """Keep the TEMP tables named by ``prefixes`` past the call (a call's own TEMP objects go at
    its end), and let the connection's guard know no statement may drop them."""
    conn = session.conn
    for prefix in prefixes:
        session.own_temp.update(temp_names(conn, prefix))
    placement.guard_own_temp(session)
    session.temp_version = one_row(conn.execute("pragma temp.schema_version"))[0]
