"""A whole table's ``count(*)`` on a world is computed apart (main's b-tree count, less the rows
the world hides, plus its own): the same answer as counting the world's rows, for every key
shape, after the world's writes and main's since the fork."""

from __future__ import annotations

import pytest

import chronos_lite
from chronos_lite.statements import worldrun

TABLES = {
    "int key": "create table {q}(id integer primary key, v)",
    "no key": "create table {q}(v)",
    "text key": "create table {q}(id text primary key, v)",
    "composite": "create table {q}(a int, b text, v, primary key (a, b)) without rowid",
}


def _values(shape: str, i: int) -> str:
    if shape == "int key":
        return f"({i}, {i})"
    if shape == "no key":
        return f"({i})"
    if shape == "text key":
        return f"('k{i}', {i})"
    return f"({i}, 'b{i % 3}', {i})"


@pytest.mark.parametrize("shape", list(TABLES))
@pytest.mark.parametrize("name", ["t", "my table"])
def test_a_worlds_count_is_its_rows_count(tmp_path, shape, name):
    q = f'"{name}"'
    db = chronos_lite.init(tmp_path / "db")
    db.sql(TABLES[shape].format(q=q))
    db.sql(f"insert into {q} values " + ", ".join(_values(shape, i) for i in range(1, 41)))
    db.fork("w")
    where_v = "v"
    db.sql(f"delete from {q} where {where_v} <= 5", branch="w")
    db.sql(f"update {q} set v = v + 100 where {where_v} between 6 and 10", branch="w")
    db.sql(f"insert into {q} values " + ", ".join(_values(shape, i) for i in (50, 51)), branch="w")
    db.sql(f"delete from {q} where v > 35")  # main, since the fork: the world still has them
    db.sql(f"insert into {q} values {_values(shape, 60)}")  # (and not this one)
    for sql in (f"select count(*) from {q}", f"SELECT COUNT( * ) FROM {q};"):
        out = db.sql(sql, branch="w").results[-1]
        assert out.rows == [(37,)], sql  # 40 - 5 + 2
        assert out.columns == [sql.split(" FROM")[0].split(" from")[0][7:]]
    counted = db.sql(f"select count(*) from {q} where 1", branch="w").results[-1].rows
    assert counted == [(37,)]
    assert db.sql(f"select count(*) from {q}").results[-1].rows == [(36,)]  # 40 - 5 + 1
    # main deletes a row the world changed after the world counted: what the count kept of
    # that key is known no longer
    db.sql(f"delete from {q} where v = 8")
    assert db.sql(f"select count(*) from {q}", branch="w").results[-1].rows == [(37,)]
    db.sql(f"delete from {q} where v = 108", branch="w")
    assert db.sql(f"select count(*) from {q}", branch="w").results[-1].rows == [(36,)]
    db.sql(f"insert into {q} values {_values(shape, 60)}", branch="w")  # (main's since: not seen)
    assert db.sql(f"select count(*) from {q}", branch="w").results[-1].rows == [(37,)]
    plain = db.sql(f"select count(*) from {q} where 1", branch="w").results[-1].rows
    assert plain == [(37,)]
    db.close()


def test_only_a_whole_tables_count_on_a_changed_table_is_rewritten(tmp_path, copies):
    db = chronos_lite.init(tmp_path / "db")
    db.sql("create table t(id integer primary key, v); create table u(v)")
    db.sql("create table e(id integer primary key, code text)")
    db.sql("create trigger e_t after insert on e begin select 1; end")  # (emulated: a trigger)
    db.sql("insert into t(v) values (1); insert into e(code) values ('a')")
    db.fork("w")
    db.sql("insert into t(v) values (2); insert into e(code) values ('b')", branch="w")
    session = db.database.session("w")
    rewritten = worldrun.counted(session, "select count(*) from t")
    emulated = worldrun.counted(session, "select count(*) from e")
    if copies == "whole":  # (a native copy: a table, SQLite's b-tree count of it as written)
        assert rewritten == "select count(*) from t"
        assert emulated == 'SELECT count(*) AS "count(*)" FROM temp._chronos_l3'
    else:  # (main's count, less what the world hides, plus its own rows)
        assert rewritten.startswith("SELECT (SELECT count(*) FROM main.")
        assert emulated.startswith("SELECT (SELECT count(*) FROM main.")
    assert db.sql("select count(*) from e", branch="w").results[-1].rows == [(2,)]
    for kept in (
        "select count(*) from u",  # untouched: main's own table already
        "select count(*) from main.t",
        "select count(*) from t where v > 1",
        "select count(v) from t",
        "select count(*) from t; select 1",
        "select count(*) from nope",
    ):
        assert worldrun.counted(session, kept) == kept
    assert db.sql("select 1; select count(*) from t", branch="w").results[-1].sql == (
        "select count(*) from t"
    )
    db.close()
