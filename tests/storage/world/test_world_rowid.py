"""``rowid`` (and ``oid``, ``_rowid_``) on a world reads and writes as on main: for a table the
world reads as main's own, and for one it changed (a view, swapped for the statement for a
virtual table that has a rowid); an INSERT that gives the rowid keeps it; what can't be done
is refused saying what to do, and changes nothing."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

import chronos_lite
from chronos_lite import ChronosError

APP = """
create table t(id integer primary key, a text);
create table n(x, y);
create table s(k text primary key, v);
create table log(m text);
create trigger n_gone after delete on n begin insert into log values ('gone ' || old.x); end;
insert into t(a) values ('one'), ('two'), ('three');
insert into n values (1, 2), (3, 4), (5, 6);
insert into s values ('a', 1), ('b', 2);
"""

CHANGES = "update t set a = 'uno' where id = 1; update n set y = 20 where x = 1; " + (
    "update s set v = 10 where k = 'a'"
)


@pytest.fixture
def db(tmp_path):
    with chronos_lite.init(tmp_path / "p") as db:
        db.sql(APP)
        db.fork("w")
        db.sql(CHANGES, branch="w")
        db.sql(CHANGES)  # (main the same: each statement below must give the same there)
        yield db


def rows(db, sql: str, branch: str) -> list[tuple]:
    return sorted(db.sql(sql, branch=branch).results[-1].rows, key=repr)


READS = [
    "select rowid, * from t",
    "select oid, a from t where rowid = 2",
    "select _rowid_, * from n",
    "select rowid, x from n where rowid >= 2",
    "select t.rowid, n.oid from t join n on n.rowid = t.id",
    "select rowid, * from s",
    "select count(*) from n where rowid in (select rowid from t)",
]


@pytest.mark.parametrize("sql", READS)
def test_a_changed_table_reads_its_rowid_as_main_does(db, sql):
    assert rows(db, sql, "w") == rows(db, sql, "main")


def test_an_untouched_table_is_main_s_own_rowid_and_all(db):
    db.sql("create table u(x); insert into u values ('p'), ('q')")
    db.fork("v")
    assert rows(db, "select rowid, x from u", "v") == [(1, "p"), (2, "q")]


WRITES = [
    "delete from n where rowid = 2",
    "update n set y = y + 1 where rowid in (1, 3)",
    "update t set a = 'x' || rowid where oid > 1",
    "delete from t where _rowid_ = 3",
    "insert into t(rowid, a) values (9, 'nine')",
    "insert into n(oid, x, y) values (7, 7, 7)",
    "insert or replace into t(_rowid_, a) values (1, 'replaced')",
]


@pytest.mark.parametrize("sql", WRITES)
def test_a_write_by_rowid_does_on_a_world_what_it_does_on_main(db, sql):
    on_world = db.sql(sql, branch="w").results[-1].tag
    on_main = db.sql(sql).results[-1].tag
    assert on_world == on_main
    for table in ("t", "n", "log"):
        read = f"select rowid, * from {table}"
        assert rows(db, read, "w") == rows(db, read, "main"), table
    # and the views are back as they were: a plain write goes through the world's triggers
    db.sql("insert into n values (100, 100)", branch="w")
    assert (100, 100) in rows(db, "select * from n", "w")
    assert (100, 100) not in rows(db, "select * from n", "main")


def test_an_insert_giving_the_rowid_twice_fails_as_on_main(db):
    db.sql("insert into t(rowid, a) values (9, 'nine')", branch="w")
    with pytest.raises(ChronosError, match=r"UNIQUE constraint failed: t\.id"):
        db.sql("insert into t(rowid, a) values (9, 'again')", branch="w")
    assert rows(db, "select * from t where id = 9", "w") == [(9, "nine")]


def test_a_row_only_the_world_has_in_a_text_keyed_table_says_it_has_no_rowid_yet(db):
    db.sql("insert into s values ('new', 3)", branch="w")
    with pytest.raises(ChronosError, match="has no rowid yet.*read it by its primary key"):
        db.sql("select rowid, * from s", branch="w")
    assert rows(db, "select * from s where k = 'new'", "w") == [("new", 3)]


def test_an_insert_giving_the_rowid_with_returning_runs_on_a_native_copy(db, copies):
    """A table copied whole is a real table (``world.native``): SQLite runs the statement as
    on main. Read apart, its view can't take it: refused, saying what to do, nothing changed."""
    before = rows(db, "select * from t", "w")
    sql = "insert into t(rowid, a) values (10, 'ten') returning id"
    if copies == "whole":
        assert rows(db, sql, "w") == [(10,)]
        assert rows(db, "select * from t", "w") == sorted([*before, (10, "ten")], key=repr)
        return
    with pytest.raises(ChronosError, match=r"give the key as its column \(id\)"):
        db.sql(sql, branch="w")
    assert rows(db, "select * from t", "w") == before


def test_a_past_moment_reads_rowid_too(db):
    db.sql("insert into t(a) values ('later')", branch="w")
    moment = datetime.fromtimestamp(time.time(), UTC).isoformat()
    time.sleep(0.05)
    db.sql("delete from t where a = 'later'", branch="w")
    then = rows(db, "select rowid, a from t", f"w@{moment}")
    assert (4, "later") in then and (1, "uno") in then
