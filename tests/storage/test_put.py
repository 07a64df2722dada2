"""``put`` replaces a row in place, by its key, as an upsert does (Postgres' ``ON CONFLICT ... DO
UPDATE``): the row's children and its delete triggers never see it go, a unique value another
row holds is refused (never that row deleted), the columns the record leaves out take their
defaults, and foreign keys hold, on main and on a world alike (a world's table reached by a
cascade included, while the world still reads it as main's own)."""

from __future__ import annotations

import pytest

import chronos_lite
from chronos_lite import ChronosError

SCHEMA = (
    "create table p(id integer primary key, email text unique, plan text default 'free', "
    "n int default 5); "
    "create table c(id integer primary key, pid int references p(id) on delete cascade); "
    "create table log(what text); "
    "create trigger p_gone after delete on p begin insert into log values ('gone ' || old.id); "
    "end; "
    "insert into p(email, plan) values ('a', 'pro'), ('b', 'pro'); "
    "insert into c(pid) values (1), (2)"
)


@pytest.fixture(params=["main", "w"])
def branch(request, tmp_path):
    db = chronos_lite.init(tmp_path / "db")
    db.sql(SCHEMA)
    if request.param == "w":
        db.fork("w")
    yield db, request.param
    db.close()


def test_put_replaces_a_row_in_place(branch):
    db, b = branch
    assert db.put("p", "1", {"email": "a2"}, branch=b) is False
    assert db.query("select * from p where id = 1", branch=b) == [
        {"id": 1, "email": "a2", "plan": "free", "n": 5}  # (left out: the defaults)
    ]
    assert db.query("select pid from c order by id", branch=b) == [{"pid": 1}, {"pid": 2}]
    assert db.query("select * from log", branch=b) == []
    assert db.put("p", "9", {"email": "z", "n": None}, branch=b) is True
    assert db.query("select n, plan from p where id = 9", branch=b) == [{"n": None, "plan": "free"}]


def test_put_never_deletes_another_row_for_a_unique_value(branch):
    db, b = branch
    with pytest.raises(ChronosError, match="UNIQUE constraint failed: p.email") as err:
        db.put("p", "1", {"email": "b"}, branch=b)
    assert err.value.code == "23505"
    assert db.query("select id, email from p order by id", branch=b) == [
        {"id": 1, "email": "a"},
        {"id": 2, "email": "b"},
    ]
    with pytest.raises(ChronosError, match="UNIQUE constraint failed: p.email"):
        db.put("p", "3", {"email": "a"}, branch=b)


def test_put_and_delete_keep_foreign_keys(branch):
    db, b = branch
    with pytest.raises(ChronosError, match="FOREIGN KEY constraint failed") as err:
        db.put("c", "5", {"pid": 999}, branch=b)
    assert err.value.code == "23503"
    assert db.query("select count(*) as n from c", branch=b) == [{"n": 2}]
    db.delete("p", "2", branch=b)  # (c and log, untouched on a world, take the cascade there)
    assert db.query("select pid from c", branch=b) == [{"pid": 1}]
    assert db.query("select * from log", branch=b) == [{"what": "gone 2"}]
