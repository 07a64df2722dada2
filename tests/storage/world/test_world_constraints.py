"""A world holds the rules main holds, with SQLite's own words: here, CHECK constraints (column
and table ones, named or not; OR IGNORE skips the row, NULL passes). The rest of issue 13's
constraints (foreign keys, triggers) come next."""

from __future__ import annotations

import pytest

import chronos_lite
from chronos_lite import ChronosError

SCHEMA = (
    "create table t(id integer primary key, qty integer check (qty >= 0), b int, "
    "plan text check (plan in ('free', 'pro')), \"odd name\" int check (\"odd name\" <> 7), "
    "constraint pos check (b > 0), check(qty < 100))"
)

WRITES = [
    "update t set qty = -5 where id = 1",
    "insert into t(qty, b) values (1, -1)",
    "insert into t(qty, b) values (200, 1)",
    "insert into t(qty, b, plan) values (null, null, null)",
    "update t set plan = 'gold'",
    "update t set qty = 50 where id = 2",
    'update t set "odd name" = 7',
    "insert or ignore into t(qty, b) values (-1, 1), (5, 1)",
    "insert or replace into t(id, qty) values (1, -1)",
    "insert into t(qty, b) select qty - 10, b from t",
]


@pytest.fixture
def db(tmp_path):
    with chronos_lite.init(tmp_path / "p") as db:
        db.sql(SCHEMA)
        db.sql("insert into t(qty, b, plan) values (1, 1, 'free'), (2, 2, 'pro')")
        db.fork("w")
        yield db


def outcome(db, sql: str, branch: str):
    try:
        db.sql(sql, branch=branch)
    except ChronosError as exc:
        return exc.code, exc.message.rsplit(": ", 1)[-1] if "failed" in exc.message else exc.message
    rows = db.query('select qty, b, plan, "odd name" from t order by qty, b', branch=branch)
    return [tuple(r.values()) for r in rows]


@pytest.mark.parametrize("sql", WRITES)
def test_a_world_checks_what_main_checks(db, sql):
    on_main = outcome(db, f"savepoint s; {sql}; select 1", "main")  # (rolled back: no COMMIT)
    on_world = outcome(db, f"{sql}", "w")
    if isinstance(on_main, tuple):
        assert on_world == (on_main[0], on_main[1].split(" [")[0])
    else:  # main's call rolled back its savepoint's open transaction: compare by redoing
        db.sql(sql)
        assert on_world == outcome(db, "select 1", "main")


def test_the_issue_s_example_is_refused_on_the_world(db):
    with pytest.raises(ChronosError, match=r"CHECK constraint failed: qty >= 0"):
        db.sql("update t set qty = -5 where id = 1", branch="w")
    assert db.query("select qty from t where id = 1", branch="w") == [{"qty": 1}]
