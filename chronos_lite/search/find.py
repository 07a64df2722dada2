"""Finding a branch's rows (the ``find`` operation), on any branch, a branch as it was included.

``where``: each field given must hold the value given, compared as SQLite compares a column
with a value (its affinity and collation); it applies before any ranking, so a find returns the
best rows among those that match it. Then, by what the caller gives:

* neither ``text`` nor ``vector``: the matching rows in key order;
* ``text``: the rows whose string fields hold any of the words, best BM25 first (``text``);
* ``vector`` (with ``vector_field``): the rows with a vector, largest dot product first
  (``vectors``);
* both: one ranking of the rows either finds, by reciprocal rank fusion: a row's fused score is
  ``1/(60 + its text rank) + 1/(60 + its vector rank)`` (a list that doesn't have the row adds
  nothing). Ranks, not scores, are fused because BM25 and dot products aren't on one scale;
  60 is the constant of the method's paper (Cormack et al., 2009).

Ties are broken by key (a table whose key isn't an integer: by its order of keys). The rows
are counted, and a page of them read, in one snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from ..errors import BAD_ARGUMENT, ChronosError
from ..sqltext import quote_ident
from ..storage.codec import affinity, db_value
from ..storage.db import Database, Session, Where
from ..storage.fetch import one_row
from ..storage.rows import relation
from ..storage.schema.catalog import ROWID_COL, Column, TableInfo
from . import docs as docsmod
from . import text as textmod
from . import vectors
from .ranking import Ranking, Scores


@dataclass
class Found:
    """A page of the rows a find matched: ``matches`` of them in all."""

    table: str
    branch: str
    matches: int
    columns: list[str]
    rows: list[dict[str, Any]]
    offset: int
    ranked_by: str = "key"  # key, text, vector or text+vector
    scores: list[Scores] | None = None  # each row's, by ranking
    notes: list[str] | None = None  # an index made again, and why


def find(
    db: Database,
    branch: Where,
    table: str,
    where: dict[str, Any],
    page: tuple[int, int],
    label: str = "main",
    text: str | None = None,
    vector: tuple[Any, Any] = (None, None),
) -> Found:
    """The rows of ``table`` on ``branch`` (``label``: its name as the caller gave it) holding
    every value ``where`` gives, counted, and a ``page`` of them (limit, offset): in key order,
    or ranked by ``text`` and ``vector`` (the vector, and the field of stored ones)."""
    session = db.session(branch)
    n, t = db.table(table, session.world)
    asked = vectors.ask(t, *vector)
    words = None if text is None else textmod.query(text)
    if words is None and asked is None:
        return _in_key_order(session, n, t, where, page, label)
    d = docsmod.docs(session, n, t)
    notes: list[str] = []
    conditions, params = _conditions(t, where, "s.")
    for attempt in (1, 2):
        fts = _text_index(db, session, d, notes) if words is not None else ""
        join = docsmod.joined(session, d)
        ranking = Ranking(session, d, join, " AND ".join(conditions), params, words, fts)
        try:
            matches, best, rows = _ranked(ranking, asked, page)
            break
        except apsw.Error as exc:  # (a damaged index: made again, once)
            if attempt == 2 or not fts or not textmod.damaged(exc):
                raise
            notes.append(f"the text index of {t.name} was damaged ({exc}): made again")
            textmod.forget(db, session, d, fts)
    how = "text+vector" if words and asked else "text" if words else "vector"
    return Found(
        t.name,
        label,
        matches,
        list(t.column_names),
        [rows[docid] for docid, _s in best],
        page[1],
        how,
        [scores for _docid, scores in best],
        notes,
    )


def _ranked(
    ranking: Ranking, asked: vectors.Ask | None, page: tuple[int, int]
) -> tuple[int, list[tuple[int, Scores]], dict[int, dict[str, Any]]]:
    conn = ranking.session.conn
    conn.execute("SAVEPOINT _chronos_find")  # (the count and the page: one snapshot)
    try:
        matches, best = ranking.best(asked, page)
        return matches, best, _rows(conn, ranking.d, ranking.join, [docid for docid, _ in best])
    finally:
        conn.execute("RELEASE _chronos_find")


def _in_key_order(
    session: Session,
    n: int,
    t: TableInfo,
    where: dict[str, Any],
    page: tuple[int, int],
    label: str,
) -> Found:
    limit, offset = page
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


def no_text_fields(table: str) -> ChronosError:
    return ChronosError(
        f"table {table} has no text fields to search (columns declared TEXT, VARCHAR, CHAR or "
        "CLOB): find its rows with where, or rank them with vector",
        BAD_ARGUMENT,
    )


def _text_index(db: Database, session: Session, d: docsmod.Docs, notes: list[str]) -> str:
    if not textmod.text_fields(d.t):
        raise no_text_fields(d.t.name)
    return textmod.branch_index(db, session, d, notes)


def _rows(
    conn: apsw.Connection, d: docsmod.Docs, join: str, docids: list[int]
) -> dict[int, dict[str, Any]]:
    """The rows of ``docids``, by docid."""
    names = ", ".join(f"s.{quote_ident(c)}" for c in d.t.column_names)
    out: dict[int, dict[str, Any]] = {}
    of = docsmod.docid_of(d)
    for start in range(0, len(docids), 500):
        part = docids[start : start + 500]
        for docid, *values in conn.execute(
            f"SELECT {of}, {names} FROM {join} WHERE {of} IN ({', '.join('?' * len(part))})",
            part,
        ):
            out[docid] = dict(zip(d.t.column_names, values))
    return out


def _conditions(
    t: TableInfo, where: dict[str, Any], prefix: str = ""
) -> tuple[list[str], list[Any]]:
    """Each field of ``where`` as a condition on the table's column of that name (``prefix``:
    the rows' alias and a dot)."""
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
        name = prefix + quote_ident(column.name)
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
