"""Finding a branch's rows by exact filters (the ``find`` operation): each field given must
hold the value given, compared as SQLite compares a column with a value (its affinity and
collation), on any branch, a branch as it was included. The matching rows are counted, and a
page of them read in key order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import BAD_ARGUMENT, ChronosError
from ..sqltext import quote_ident
from ..storage.codec import affinity, db_value
from ..storage.db import Database, Where
from ..storage.fetch import one_row
from ..storage.rows import relation
from ..storage.schema.catalog import ROWID_COL, Column, TableInfo


@dataclass
class Found:
    """A page of the rows a find matched: ``matches`` of them in all."""

    table: str
    branch: str
    matches: int
    columns: list[str]
    rows: list[dict[str, Any]]
    offset: int


def find(
    db: Database,
    branch: Where,
    table: str,
    where: dict[str, Any],
    page: tuple[int, int],
    label: str = "main",
) -> Found:
    """The rows of ``table`` on ``branch`` (``label``: its name as the caller gave it) holding
    every value ``where`` gives, counted, and a ``page`` of them (limit, offset) in key
    order."""
    limit, offset = page
    session = db.session(branch)
    n, t = db.table(table, session.world)
    conditions, params = _conditions(t, where)
    source, rowid_col = relation(session, n, t)
    clause = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    conn = session.conn
    keys = [quote_ident(c) for c in t.pk]
    order = rowid_col if t.key_kind == "rowid" else ", ".join(keys)
    names = ", ".join(quote_ident(c) for c in t.column_names)
    conn.execute("SAVEPOINT _chronos_find")  # (the count and the page: one snapshot)
    try:
        matches = one_row(conn.execute(f"SELECT count(*) FROM {source}{clause}", params))[0]
        got = conn.execute(
            f"SELECT {names} FROM {source}{clause} ORDER BY {order} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
    finally:
        conn.execute("RELEASE _chronos_find")
    rows = [dict(zip(t.column_names, row)) for row in got]
    return Found(t.name, label, matches, list(t.column_names), rows, offset)


def _conditions(t: TableInfo, where: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """Each field of ``where`` as a condition on the table's column of that name."""
    by_lower = {c.name.lower(): c for c in t.columns}
    conditions, params = [], []
    for field, value in where.items():
        column = by_lower.get(field.lower())
        if column is None or field == ROWID_COL:
            raise ChronosError(
                f"table {t.name} has no field {field!r} to find by; its fields: "
                f"{', '.join(t.column_names)}",
                BAD_ARGUMENT,
            )
        name = quote_ident(column.name)
        if value is None:
            conditions.append(f"{name} IS NULL")
            continue
        conditions.append(f"{name} = ?")
        params.append(_value(column, field, value))
    return conditions, params


def _value(column: Column, field: str, value: Any) -> Any:
    """A filter's value as SQLite compares it with the column: true and false 1 and 0, a
    {"$blob": hex} its bytes; a list or another object, or text in a numeric column that
    reads as no number, is refused (it can match no row as meant)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list) or (isinstance(value, dict) and "$blob" not in value):
        raise ChronosError(
            f"where[{field!r}] takes one value (text, a number, true or false, null or "
            f'{{"$blob": "<hex>"}}), not {"a list" if isinstance(value, list) else "an object"}; '
            f"to match one of several values, use the sql tool (... where {field} in (...))",
            BAD_ARGUMENT,
        )
    if isinstance(value, str) and affinity(column.decltype) in ("INTEGER", "REAL", "NUMERIC"):
        try:
            float(value)
        except ValueError:
            raise ChronosError(
                f"where[{field!r}] is {value!r}, but {column.name} holds numbers "
                f"({column.decltype}): give a number",
                BAD_ARGUMENT,
            ) from None
    return db_value(value, column, f"where[{field!r}]")
