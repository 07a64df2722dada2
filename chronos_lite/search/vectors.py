"""Vector search: rows ranked by the dot product of a stored vector with the one asked for.

Vectors are stored in a user column, as a JSON array of numbers or as a float32 BLOB (what
sqlite-vec writes). Scores are exact: each row shown is scored in Python, in double precision
(``math.fsum`` of the products), and the order is the exact one (ties: by key).

sqlite-vec finds the candidates. It has L2, cosine and L1 distances but no dot product, so the
vectors go into its ``vec0`` index transformed: ``v`` becomes ``[v, sqrt(M² - |v|²)]`` (``M``:
the largest norm), the query ``q`` becomes ``[q, 0]``, and ``|v' - q'|² = M² + |q|² - 2 v·q``
ranks by the dot product. That index lives on the connection (a plain ``sqlite3`` client has
no ``vec0``, so nothing of it is in the file): made on a connection's second unfiltered find of
a table (one find alone scans the vectors instead: faster than making it), brought up to main's
rows by their history before each find, made again for a branch whose rows changed. A find
with ``where`` scans the vectors of the rows the filter leaves (through its index, if it has
one), so it ranks those and nothing else: never fewer rows than asked while more match.

sqlite-vec computes in float32; the candidates it gives are widened until the error that can
do (a bound from the vectors' norms) can't have left a better row out.
"""

from __future__ import annotations

import json
import math
import operator
import struct
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import apsw
import sqlite_vec

from ..errors import BAD_ARGUMENT, ChronosError
from ..sqltext import quote_ident
from ..storage.db import Session
from ..storage.fetch import all_rows, one_row
from ..storage.schema.catalog import ROWID_COL, TableInfo
from ..storage.shadow import SEQ, history_table
from .docs import Docs, docid_of, joined
from .temp import keep_temp, temp_names

KNN_MOST = 4096  # sqlite-vec's largest k
MOST_DIMENSIONS = 8192


@dataclass
class Ask:
    """A vector query: the vector, and the field holding the stored ones."""

    vector: list[float]
    field: str  # the column (quoted)
    name: str  # the column's name

    @property
    def blob(self) -> bytes:
        return struct.pack(f"<{len(self.vector)}f", *self.vector)

    @cached_property
    def norm2(self) -> float:
        return math.fsum(map(operator.mul, self.vector, self.vector))


def ask(t: TableInfo, vector: Any, field: Any) -> Ask | None:
    """The query's vector and field, checked (None: no vector asked for)."""
    if vector is None and field is None:
        return None
    if vector is None or field is None:
        raise ChronosError(
            "give both 'vector' and 'vector_field' (the numbers to rank by, and the field "
            "holding the stored vectors), or neither",
            BAD_ARGUMENT,
        )
    if not isinstance(vector, list) or not vector:
        raise ChronosError("vector must be a non-empty array of numbers", BAD_ARGUMENT)
    if len(vector) > MOST_DIMENSIONS:
        raise ChronosError(
            f"vector has {len(vector)} numbers; at most {MOST_DIMENSIONS}", BAD_ARGUMENT
        )
    for i, x in enumerate(vector):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise ChronosError(
                f"vector[{i}] is {json.dumps(x) if _jsonable(x) else repr(x)}: every element "
                "must be a finite number",
                BAD_ARGUMENT,
            )
    column = next((c.name for c in t.columns if c.name.lower() == str(field).lower()), None)
    if column is None:
        raise ChronosError(
            f"table {t.name} has no field {field!r} to rank by; its fields: "
            f"{', '.join(t.column_names)}",
            BAD_ARGUMENT,
        )
    return Ask([float(x) for x in vector], quote_ident(column), column)


def _jsonable(x: Any) -> bool:
    try:
        json.dumps(x, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def load(conn: apsw.Connection) -> None:
    """sqlite-vec's functions on the connection (loaded once; loading is off again after)."""
    try:
        conn.execute("SELECT vec_version()").fetchall()
        return
    except apsw.SQLError:
        pass
    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec.loadable_path())
    finally:
        conn.enable_load_extension(False)


# --- exact scores ----------------------------------------------------------------------------


def decode(value: Any, dims: int, name: str, key: Any) -> list[float]:
    """A stored vector's numbers (a JSON array, or a float32 BLOB)."""
    try:
        if isinstance(value, bytes):
            numbers = list(struct.unpack(f"<{len(value) // 4}f", value[: len(value) // 4 * 4]))
            if len(value) % 4:
                raise ValueError
        else:
            numbers = [float(x) for x in json.loads(value)]
    except (ValueError, TypeError, struct.error):
        raise ChronosError(
            f"{name} of row {key} holds no vector (a JSON array of numbers, or float32s as a "
            "BLOB): fix the row, or filter it out with where",
            BAD_ARGUMENT,
        ) from None
    if len(numbers) != dims:
        raise _mismatch(name, key, len(numbers), dims)
    return numbers


def _mismatch(name: str, key: Any, stored: int, asked: int) -> ChronosError:
    return ChronosError(
        f"vector has {asked} numbers, but {name} of row {key} holds {stored}: give a vector "
        f"of {stored}",
        BAD_ARGUMENT,
    )


def exact(conn: apsw.Connection, d: Docs, q: Ask, docids: list[int], join: str) -> dict[int, float]:
    """The dot products of the rows ``docids`` with the query, exactly."""
    out: dict[int, float] = {}
    for start in range(0, len(docids), 500):
        part = docids[start : start + 500]
        marks = ", ".join("?" * len(part))
        for docid, value in all_rows(
            conn.execute(
                f"SELECT {docid_of(d)}, s.{q.field} FROM {join} WHERE {docid_of(d)} IN ({marks})",
                part,
            )
        ):
            v = decode(value, len(q.vector), q.name, docid)
            out[docid] = math.fsum(map(operator.mul, v, q.vector))  # (lengths: decode's check)
    return out


def error_bound(dims: int, most_norm2: float, q: Ask) -> float:
    """How far a float32 score from sqlite-vec can be from the exact one (generously)."""
    return (dims + 8) * 2.0**-21 * (most_norm2 + q.norm2 + 1e-30)


# --- candidates ------------------------------------------------------------------------------


def ranked(
    session: Session, d: Docs, q: Ask, join: str, where: str, params: list[Any], need: int
) -> tuple[list[tuple[int, float]], int]:
    """The best ``need`` rows (docid, exact score; best first, ties by docid) among those
    ``where`` leaves, and how many rows have a vector there."""
    conn = session.conn
    load(conn)
    cond = f"s.{q.field} IS NOT NULL" + (f" AND {where}" if where else "")
    total = _count(session, d, q, join, cond, params, bool(where))
    if not total or not need:
        return [], total
    try:
        index = None if where else _index(session, d, q)
    except apsw.SQLError as exc:  # (sqlite-vec refused a stored vector)
        raise _stored_error(conn, d, q, join, exc) from None
    k = min(need + max(8, need // 4), total)
    while True:
        if index is not None and k <= KNN_MOST:
            approx, bound = _knn(conn, index, q, k)
        else:
            approx, bound = _scan(conn, d, q, join, cond, params, k)
        best = _settled(conn, d, q, join, approx, need)
        # no row left out can beat the last one kept: its float32 score is at most the last
        # candidate's, its exact one within the bound of that
        if len(approx) >= total or (len(best) == need and approx[-1][1] + 2 * bound < best[-1][1]):
            return best, total
        k = min(k * 4, total)


def _count(
    session: Session, d: Docs, q: Ask, join: str, cond: str, params: list[Any], filtered: bool
) -> int:
    """How many rows have a vector (that the filter leaves): counted once while the branch's
    rows stay as they are, for a find without a filter."""
    kept = session.search.get(("vector count", d.n))
    if not filtered and isinstance(kept, tuple) and kept[:2] == (q.name, d.state):
        return int(kept[2])
    total = one_row(session.conn.execute(f"SELECT count(*) FROM {join} WHERE {cond}", params))[0]
    if not filtered:
        session.search[("vector count", d.n)] = (q.name, d.state, total)
    return int(total)


def _settled(
    conn: apsw.Connection, d: Docs, q: Ask, join: str, approx: list[tuple[int, float]], need: int
) -> list[tuple[int, float]]:
    scores = exact(conn, d, q, [docid for docid, _a in approx], join)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:need]


def _scan(
    conn: apsw.Connection, d: Docs, q: Ask, join: str, cond: str, params: list[Any], k: int
) -> tuple[list[tuple[int, float]], float]:
    """Candidates by a scan of the rows' vectors: (docid, approximate score), best first, and
    the error bound their scores are within."""
    zero = bytes(4 * len(q.vector))
    v = f"s.{q.field}"
    try:
        rows = all_rows(
            conn.execute(
                f"SELECT docid, n2 - d2, max(n2) OVER () FROM (SELECT {docid_of(d)} AS docid, "
                f"pow(vec_distance_l2({v}, ?), 2) AS n2, pow(vec_distance_l2({v}, ?), 2) AS d2 "
                f"FROM {join} WHERE {cond}) ORDER BY 2 DESC, 1 LIMIT ?",
                [zero, q.blob, *params, k],
            )
        )
    except apsw.SQLError as exc:
        raise _stored_error(conn, d, q, join, exc) from None
    most = rows[0][2] if rows else 0.0
    return [(docid, (a + q.norm2) / 2) for docid, a, _m in rows], error_bound(
        len(q.vector), most, q
    )


def _stored_error(
    conn: apsw.Connection, d: Docs, q: Ask, join: str, exc: apsw.SQLError
) -> ChronosError:
    """sqlite-vec refused a stored vector: which row, and why, as a caller can act on it."""
    for docid, value in conn.execute(
        f"SELECT {docid_of(d)}, s.{q.field} FROM {join} WHERE s.{q.field} IS NOT NULL"
    ):
        decode(value, len(q.vector), q.name, docid)  # (raises for the first bad one)
    return ChronosError(f"{q.name}: {exc}", BAD_ARGUMENT)


# --- the index on the connection -------------------------------------------------------------


def _name(n: int) -> str:
    return f"_chronos_vv{n}"


def _index(session: Session, d: Docs, q: Ask) -> tuple[str, float] | None:
    """The connection's vec0 index of the branch's vectors in ``q``'s field, current (None: not
    made yet; a connection's first unfiltered find of the table scans instead), and the
    largest squared norm it was made for."""
    conn, n = session.conn, d.n
    kept = session.search.get(("vectors", n))
    uses = session.search.get(("vector finds", n), 0)
    session.search[("vector finds", n)] = uses + 1  # type: ignore[operator]
    if not isinstance(kept, tuple) or kept[0] != (q.name, len(q.vector)):
        if not uses:
            return None
        return _made(session, d, q)
    shape, state, most = kept
    if not temp_names(conn, _name(n)):
        return _made(session, d, q)
    if state == d.state:
        return f"temp.{_name(n)}", most
    if d.own and not d.mapped and str(state).startswith("main:") and d.state.startswith("main:"):
        since = int(str(state).split(":")[1])
        grown = _catch_up(conn, d, q, since, most)
        if grown:
            session.search[("vectors", n)] = (shape, d.state, most)
            return f"temp.{_name(n)}", most
    return _made(session, d, q)


def _made(session: Session, d: Docs, q: Ask) -> tuple[str, float]:
    conn, n = session.conn, d.n
    join = joined(session, d)
    zero = bytes(4 * len(q.vector))
    cond = f"s.{q.field} IS NOT NULL"
    try:
        most = one_row(
            conn.execute(
                f"SELECT max(pow(vec_distance_l2(s.{q.field}, ?), 2)) FROM {join} WHERE {cond}",
                (zero,),
            )
        )[0]
    except apsw.SQLError as exc:
        raise _stored_error(conn, d, q, join, exc) from None
    most = (most or 0.0) * 1.25 + 1e-12  # (room for longer vectors before it's made again)
    conn.execute(f"DROP TABLE IF EXISTS temp.{_name(n)}")
    conn.execute(f"CREATE VIRTUAL TABLE temp.{_name(n)} USING vec0(v float[{len(q.vector) + 1}])")
    conn.execute(
        f"INSERT INTO temp.{_name(n)}(rowid, v) SELECT {docid_of(d)}, "
        f"{_transformed('s.' + q.field)} FROM {join} WHERE {cond}",
        (most, zero),
    )
    keep_temp(session, _name(n))
    session.search[("vectors", n)] = ((q.name, len(q.vector)), d.state, most)
    return f"temp.{_name(n)}", most


def _transformed(v: str) -> str:
    """The SQL of ``[v, sqrt(M² - |v|²)]`` as float32s (``?1``: M², ``?2``: a zero vector)."""
    extra = f"vec_f32('[' || sqrt(max(?1 - pow(vec_distance_l2({v}, ?2), 2), 0)) || ']')"
    return f"CAST(vec_f32({v}) || {extra} AS BLOB)"  # (|| of BLOBs: TEXT of their bytes)


def _catch_up(conn: apsw.Connection, d: Docs, q: Ask, since: int, most: float) -> bool:
    """Main's rows changed after history position ``since`` put right in the index. False: a
    vector is longer than the index was made for, or so many changed that making it again
    costs less (vec0 deletes a row in ~35 us; it indexes one in ~7)."""
    t, n = d.t, d.n
    key = quote_ident(ROWID_COL) if t.key_kind == "rowid" else quote_ident(t.pk[0])
    changed = f"SELECT {key} FROM main.{history_table(n)} WHERE {SEQ} > {since}"
    main = f"main.{quote_ident(t.stored)}"
    zero = bytes(4 * len(q.vector))
    cond = f"rowid IN ({changed}) AND {q.field} IS NOT NULL"
    count, longest = one_row(
        conn.execute(
            f"SELECT count(*), max(pow(vec_distance_l2({q.field}, ?), 2)) FROM {main} WHERE {cond}",
            (zero,),
        )
    )
    indexed = one_row(conn.execute(f"SELECT count(*) FROM temp.{_name(n)}_rowids"))[0]
    if (longest or 0.0) > most or count > indexed // 10:
        return False
    conn.execute(f"DELETE FROM temp.{_name(n)} WHERE rowid IN ({changed})")
    conn.execute(
        f"INSERT INTO temp.{_name(n)}(rowid, v) SELECT rowid, {_transformed(q.field)} "
        f"FROM {main} WHERE {cond}",
        (most, zero),
    )
    return True


def _knn(
    conn: apsw.Connection, index: tuple[str, float], q: Ask, k: int
) -> tuple[list[tuple[int, float]], float]:
    name, most = index
    blob = struct.pack(f"<{len(q.vector) + 1}f", *q.vector, 0.0)
    rows = all_rows(
        conn.execute(f"SELECT rowid, distance FROM {name} WHERE v MATCH ? AND k = ?", (blob, k))
    )
    approx = [(docid, (most + q.norm2 - dist * dist) / 2) for docid, dist in rows]
    approx.sort(key=lambda item: (-item[1], item[0]))
    return approx, error_bound(len(q.vector) + 1, most, q)


def all_ranked(
    session: Session, d: Docs, q: Ask, join: str, where: str, params: list[Any]
) -> dict[int, int]:
    """Every row with a vector that ``where`` leaves, by its place in the exact order (1: the
    best): what a fused ranking needs of each row."""
    conn = session.conn
    load(conn)
    cond = f"s.{q.field} IS NOT NULL" + (f" AND {where}" if where else "")
    approx, bound = _scan(conn, d, q, join, cond, params, -1)
    order = _near_ties_settled(conn, d, q, join, approx, bound)
    return {docid: place for place, docid in enumerate(order, start=1)}


def _near_ties_settled(
    conn: apsw.Connection,
    d: Docs,
    q: Ask,
    join: str,
    approx: list[tuple[int, float]],
    bound: float,
) -> list[int]:
    """The rows in their exact order: rows whose float32 scores are within the error bound of
    a neighbour's are scored exactly and put in order among themselves (no other row can
    come between: the rest differ by more than the bound)."""
    out: list[int] = []
    i = 0
    while i < len(approx):
        j = i + 1
        while j < len(approx) and approx[j - 1][1] - approx[j][1] <= 2 * bound:
            j += 1
        run = [docid for docid, _a in approx[i:j]]
        if len(run) > 1:
            scores = exact(conn, d, q, run, join)
            run.sort(key=lambda docid: (-scores[docid], docid))
        out += run
        i = j
    return out
