"""find ranked by words (BM25) and vectors (dot product), on main, on worlds and as they were:
the same rows in the same order, with the same scores, as the same search on a plain SQLite
copy of the branch's rows."""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
import time
from datetime import UTC, datetime

import apsw
import hypothesis.strategies as st
import pytest
from hypothesis import given
from strategies import example_settings

import chronos_lite
from chronos_lite import ChronosError
from chronos_lite.search.text import TOKENIZE, query

WORDS = ["tea", "green", "jasmine", "black", "mug", "café", "cafe", "oolong", "Tea"]
TEXT_FIELDS = ["cat", "title", "body"]


def _vector(values: list[int], as_blob: bool) -> object:
    return struct.pack(f"<{len(values)}f", *values) if as_blob else str(values)


def _numbers(value: object) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return list(struct.unpack(f"<{len(value) // 4}f", value))
    return [float(x) for x in eval(str(value))]  # (a JSON array of small ints)


def reference(rows: list[dict], where: dict, text: str | None, vector: list[int] | None):
    """The search on a plain SQLite copy: (docid, scores) best first, ties by key. The text
    index holds every row (BM25's statistics are the table's); ``where`` picks among them."""
    kept = {r["id"] for r in rows if all(r[k] == v for k, v in where.items())}
    texts: list[tuple[int, float]] = []
    if text is not None:
        conn = apsw.Connection(":memory:")
        conn.execute(f"create virtual table f using fts5(cat, title, body, tokenize='{TOKENIZE}')")
        for r in rows:
            conn.execute(
                "insert into f(rowid, cat, title, body) values (?, ?, ?, ?)",
                (r["id"], r["cat"], r["title"], r["body"]),
            )
        texts = [
            (docid, -score)
            for docid, score in conn.execute(
                "select rowid, bm25(f) from f where f match ? order by 2, 1", (query(text),)
            )
            if docid in kept
        ]
    vectors: list[tuple[int, float]] = []
    if vector is not None:
        for r in rows:
            v = _numbers(r["vec"])
            if v is not None and r["id"] in kept:
                vectors.append((r["id"], math.fsum(a * b for a, b in zip(v, vector))))
        vectors.sort(key=lambda item: (-item[1], item[0]))
    if vector is None:
        return [(docid, {"text": score}) for docid, score in texts]
    if text is None:
        return [(docid, {"vector": score}) for docid, score in vectors]
    tr = {docid: i for i, (docid, _s) in enumerate(texts, start=1)}
    vr = {docid: i for i, (docid, _s) in enumerate(vectors, start=1)}
    fused = {
        d: (1 / (60 + tr[d]) if d in tr else 0.0) + (1 / (60 + vr[d]) if d in vr else 0.0)
        for d in {*tr, *vr}
    }
    ts, vs = dict(texts), dict(vectors)
    order = sorted(fused, key=lambda d: (-fused[d], d))
    return [(d, {"text": ts.get(d), "vector": vs.get(d), "fused": fused[d]}) for d in order]


def same(found, expected, limit: int) -> None:
    got = [(row["id"], scores) for row, scores in zip(found.rows, found.scores)]
    assert found.matches == len(expected)
    assert [d for d, _s in got] == [d for d, _s in expected[:limit]]
    for (_d, mine), (_e, theirs) in zip(got, expected):
        assert mine.keys() == theirs.keys()
        for key, value in theirs.items():
            assert (mine[key] is None) == (value is None)
            if value is not None:
                assert mine[key] == pytest.approx(value, abs=1e-9, rel=0)


text_values = st.lists(st.sampled_from(WORDS), min_size=0, max_size=4).map(" ".join)
row_values = st.fixed_dictionaries(
    {
        "cat": st.sampled_from(["tea", "ware"]),
        "title": text_values,
        "body": text_values,
        "vec": st.one_of(
            st.none(),
            st.tuples(st.lists(st.integers(-3, 3), min_size=3, max_size=3), st.booleans()).map(
                lambda pair: _vector(*pair)
            ),
        ),
    }
)
ops = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "delete", "direct", "fork", "world"]),
        st.integers(1, 12),
        row_values,
    ),
    max_size=14,
)
finds = st.lists(
    st.tuples(
        st.one_of(
            st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
        ),
        st.one_of(st.none(), st.lists(st.integers(-3, 3), min_size=3, max_size=3)),
        st.sampled_from([{}, {"cat": "tea"}]),
        st.integers(1, 6),
    ).filter(lambda f: f[0] is not None or f[1] is not None),
    min_size=1,
    max_size=4,
)


def direct(path, sql: str, values: tuple = ()) -> None:
    """A write by an app of its own, in a process of its own (two SQLite libraries in one
    process would release each other's file locks)."""
    script = (
        "import sqlite3, sys, json; c = sqlite3.connect(sys.argv[1]); "
        "v = [bytes.fromhex(x[1:]) if isinstance(x, str) and x[:1] == '#' else x "
        "for x in json.loads(sys.argv[3])]; c.execute(sys.argv[2], v); c.commit()"
    )
    encoded = json.dumps(["#" + v.hex() if isinstance(v, bytes) else v for v in values])
    subprocess.run([sys.executable, "-c", script, str(path), sql, encoded], check=True, timeout=60)


def _write(db, branch: str, op: str, key: int, row: dict, path) -> None:
    values = (key, row["cat"], row["title"], row["body"], row["vec"])
    if op == "direct":  # (an app's own write: a plain sqlite3 connection, no sqlite-vec)
        direct(path, "insert or replace into items values (?, ?, ?, ?, ?)", values)
        return
    params = list(values)
    if op == "delete":
        db.sql("delete from items where id = $1", key, branch=branch)
    elif op == "update":
        db.sql(
            "update items set cat = $2, title = $3, body = $4, vec = $5 where id = $1",
            *params,
            branch=branch,
        )
    else:
        db.sql("insert or replace into items values ($1, $2, $3, $4, $5)", *params, branch=branch)


@given(ops=ops, searches=finds)
@example_settings(25, fixture=True)
def test_ranked_finds_match_a_plain_sqlite_copy(tmp_path_factory, ops, searches):
    folder = tmp_path_factory.mktemp("ranked") / "db"
    with chronos_lite.init(folder) as db:
        db.sql(
            "create table items(id integer primary key, cat text, title text, "
            "body varchar(40), vec blob)"
        )
        forked, moment = False, None
        for op, key, row in ops:
            if op == "fork":
                if not forked:
                    db.fork("w")
                    forked = True
                    time.sleep(0.01)
                    moment = datetime.fromtimestamp(time.time(), UTC).isoformat()
                    time.sleep(0.01)
                continue
            branch = "w" if op == "world" and forked else "main"
            _write(db, branch, "insert" if op == "world" else op, key, row, folder / "chronos.db")
            for text, vector, where, limit in searches[:1]:  # (indexes kept up as writes go)
                _check(db, branch, text, vector, where, limit)
        for branch in ["main", "w", f"main@{moment}", f"w@{moment}"] if forked else ["main"]:
            for text, vector, where, limit in searches:
                _check(db, branch, text, vector, where, limit)


def _check(db, branch, text, vector, where, limit) -> None:
    rows = db.find("items", limit=1000, branch=branch).rows
    expected = reference(rows, where, text, vector)
    found = db.find(
        "items",
        where or None,
        limit=limit,
        branch=branch,
        text=text,
        vector=vector,
        vector_field="vec" if vector is not None else None,
    )
    same(found, expected, limit)


# --- bad input ------------------------------------------------------------------------------


@pytest.fixture
def db(tmp_path):
    with chronos_lite.init(tmp_path / "db") as db:
        db.sql("create table items(id integer primary key, title text, n int, vec blob)")
        db.sql("insert into items values (1, 'green tea', 1, '[1, 2]'), (2, 'mug', 2, null)")
        yield db


@pytest.mark.parametrize(
    ("given_args", "message"),
    [
        ({"vector": [1, 2]}, "give both 'vector' and 'vector_field'"),
        ({"vector_field": "vec"}, "give both 'vector' and 'vector_field'"),
        (
            {"vector": [1, 2, 3], "vector_field": "vec"},
            "vector has 3 numbers, but vec of row 1 holds 2",
        ),
        ({"vector": [1, 2], "vector_field": "nope"}, "no field 'nope' to rank by"),
        ({"vector": [1, "x"], "vector_field": "vec"}, "vector"),
        ({"text": "  -- "}, "has no words to find"),
        ({"text": "tea", "where": {"nope": 1}}, "no field 'nope' to find by"),
        ({"text": "tea", "ef": 5000}, "4096"),
        ({"text": "tea", "limit": 1001}, "sql tool"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(db, given_args, message):
    before = db.query("select count(*) as n from sqlite_schema")
    with pytest.raises(ChronosError, match=message.replace("(", r"\(")):
        db.call("find", table="items", **given_args)
    assert db.query("select count(*) as n from sqlite_schema") == before


def test_nan_and_infinity_are_refused(db):
    for bad in (math.nan, math.inf):
        with pytest.raises(ChronosError, match="finite number"):
            db.find("items", vector=[bad, 1], vector_field="vec")


def test_a_table_without_text_fields_says_so(db):
    db.sql("create table nums(id integer primary key, n int)")
    with pytest.raises(ChronosError, match="no text fields to search"):
        db.find("nums", text="x")
