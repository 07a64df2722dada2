"""SQLite's own parameter forms (?, ?NNN, :name, @name, $name) beside chronos' $1: bound by
position as SQLite numbers them (Python's sqlite3 binding the same sequence is the reference),
on main and on a world, through the CLI too."""

from __future__ import annotations

import sqlite3

import pytest
from helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronos_lite import ChronosError

FORMS = st.sampled_from(["?", "?1", "?2", "?3", ":a", "@b", ":a", "$c"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(forms=st.lists(FORMS, min_size=1, max_size=5))
def test_parameters_bind_as_sqlite_numbers_them(db_factory, forms):
    sql = "select " + ", ".join(f"{form} as c{i}" for i, form in enumerate(forms))
    values = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    ref = sqlite3.connect(":memory:")
    try:
        expected = list(ref.execute(sql, values[: _count(ref, sql)]).fetchone())
    finally:
        ref.close()
    db = db_factory()
    got = db.query(sql, *values)  # (more values than numbers: the rest unused)
    assert [got[0][f"c{i}"] for i in range(len(forms))] == expected


def _count(conn: sqlite3.Connection, sql: str) -> int:
    """How many values SQLite numbers in ``sql`` (the largest parameter number)."""
    for n in range(0, 10):
        try:
            conn.execute(sql, [0] * n)
            return n
        except sqlite3.ProgrammingError:
            continue
    raise AssertionError(sql)


@pytest.fixture
def db_factory(db):
    return lambda: db


def test_named_forms_bind_by_position_on_a_world(db):
    db.sql("create table t(id integer primary key, name text, tags text)")
    db.fork("w")
    values = [7, "Ada", ["a", "b"]]
    db.call("sql", sql="insert into t values (:id, @name, $tags)", params=values, branch="w")
    rows = db.call("sql", sql="select * from t where id = ?", params=[7], branch="w")
    assert rows.data["results"][0]["rows"] == [[7, "Ada", '["a", "b"]']]
    assert db.query("select count(*) as n from t") == [{"n": 0}]  # (the world's own)


def test_a_missing_value_names_the_parameter_and_the_forms(db):
    cases = [
        ("select ?, ?", [1], "the SQL uses the parameter $2 (or ?2, or the 2nd ?)"),
        ("select :x, :y", [1], "the SQL uses the parameter :y"),
        ("select $1", [], "the SQL uses parameters: give their values in 'params'"),
    ]
    for sql, params, said in cases:
        with pytest.raises(ChronosError) as info:
            db.call("sql", sql=sql, params=params)
        assert said in str(info.value) and "by position" in str(info.value)


def test_the_cli_takes_sqlite_s_forms(db, folder):
    db.close()
    out = run_cli(folder, "sql", "select ? as a, :b as b, ?1 as c", "--params", "[1, 2]").stdout
    assert out.splitlines()[2].split("|") == [" 1 ", " 2 ", " 1"]
    named = run_cli(folder, "sql", "select :who as who, @who as again", "--params", '["Ada"]')
    assert named.stdout.splitlines()[2].split("|") == [" Ada ", " Ada"]
    by_name = run_cli(folder, "sql", "select :who as who", "--params", '{"who": "Bo"}', "--csv")
    assert by_name.stdout == "who\nBo\n"


def test_named_parameters_bind_from_an_object(shop):
    rows = shop.query("select :a as a, @b as b, $c as c", {"a": 1, "b": "two", ":c": [3]})
    assert rows == [{"a": 1, "b": "two", "c": "[3]"}]
    out = shop.call("sql", sql="select :name as n", params={"name": "Ada"})
    assert out.data["results"][0]["rows"] == [["Ada"]]
    with pytest.raises(ChronosError, match=r"an object's by name"):
        shop.call("sql", sql="select :a, :b", params={"a": 1})
    with pytest.raises(ChronosError, match=r"'params' has no value"):
        shop.call("sql", sql="select ?", params={"a": 1})
