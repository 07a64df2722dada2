"""Result rows typed as the code reads them.

apsw types a row fetched by iteration as ``Any``, but ``fetchall()``'s rows as tuples of any
SQLite value and ``fetchone()``'s as maybe ``None``. The query, not apsw, knows each column's
type, so these give every row as ``Any`` values; ``one_row`` is for statements that always give
a row (an aggregate, a pragma, a row known to be there).
"""

from __future__ import annotations

from typing import Any

import apsw


def all_rows(cursor: apsw.Cursor) -> list[tuple[Any, ...]]:
    """``cursor.fetchall()``: every row, the statement run to its end."""
    return cursor.fetchall()


def one_row(cursor: apsw.Cursor) -> Any:
    """``cursor.fetchone()`` of a statement that always gives a row."""
    row = cursor.fetchone()
    assert row is not None
    return row
