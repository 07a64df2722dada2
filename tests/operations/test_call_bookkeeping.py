"""A failure at any step of a call's bookkeeping leaves no transaction open and nothing half done.

Each step chronos takes around a user's statements (history positions, the world clock, events,
schema following, version bumps, the views of a world, the budget, the commit's aftermath) is
made to fail in turn, at each of the times it runs during a call, for calls of every shape (one
statement, several, the call's own BEGIN ... COMMIT, a schema change, ANALYZE, RETURNING, on
main and on a world). After each: no connection has a transaction open, the file holds either
nothing of the call or all of it (the failure came after the commit), and the next call works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import file_dump

import chronos_lite
from chronos_lite.errors import ChronosError
from chronos_lite.history import timetravel
from chronos_lite.statements import budget, ddl, sqlrun
from chronos_lite.storage import events, limits, worlds
from chronos_lite.storage.db import Database
from chronos_lite.storage.world import sql as worldsql


class Injected(RuntimeError):
    """The failure a step is made to raise."""


# (owner, attribute): the steps of a call's bookkeeping
STEPS = [
    (events, "positions"),
    (events, "clock"),
    (events, "ranges"),
    (events, "record"),
    (events, "tick"),
    (worlds, "bump_version"),
    (worldsql, "begin_world_write"),
    (worldsql, "rows_written"),
    (Database, "follow_schema"),
    (Database, "tables"),
    (Database, "tables_for"),
    (Database, "rebuild_world"),
    (Database, "end_call"),
    (Database, "check_file"),
    (sqlrun, "_record"),
    (sqlrun, "_committed"),
    (sqlrun, "_positions"),
    (timetravel, "as_of"),
    (ddl, "run"),
    (budget, "read"),
    (limits.Bounds, "committed"),
]
# Steps that run after the call's data is committed: a failure there may leave it done.
AFTER_COMMIT = {"end_call", "check_file", "committed"}

CALLS = [
    ("main", "insert into users(name) values ('x')"),
    ("main", "insert into users(name) values ('x'); update users set name = 'y' where id = 1"),
    ("main", "begin; insert into users(name) values ('x'); commit"),
    ("main", "insert into users(name) values ('x'); analyze"),
    ("main", "drop table if exists t2; create table t2(a)"),
    ("main", "select count(*) from users as of '-1 seconds'"),
    ("w", "insert into users(name) values ('x')"),
    ("w", "update users set name = 'y'; delete from users where id = 2"),
    ("w", "begin; insert into users(name) values ('x'); commit"),
    # statements after the call's own COMMIT: what it committed stays if they fail
    ("w", "begin; insert into users(name) values ('x'); commit; select 1"),
    ("w", "drop table if exists t3; create table t3(a); insert into t3 values (1)"),
    ("w", "insert into users(name) values ('x') returning id"),
]


@contextmanager
def failing(owner: object, name: str, at: int) -> Iterator[list[int]]:
    """``owner.name`` raises Injected on its ``at``-th call (counted in the list yielded)."""
    raw = vars(owner)[name]  # (a staticmethod stays one)
    real = getattr(owner, name)
    count = [0]

    def wrapper(*args, **kwargs):
        count[0] += 1
        if count[0] == at:
            raise Injected(f"{name} failed (call {at})")
        return real(*args, **kwargs)

    setattr(owner, name, staticmethod(wrapper) if isinstance(raw, staticmethod) else wrapper)
    try:
        yield count
    finally:
        setattr(owner, name, raw)


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("insert into users(name) values ('Ada'), ('Bo')")
        db.fork("w")
    yield folder


def run_call(db: chronos_lite.Chronos, branch: str, sql: str) -> None:
    db.call("sql", sql=sql, branch=branch)


def times_run(db: chronos_lite.Chronos, owner: object, name: str, branch: str, sql: str) -> int:
    with failing(owner, name, at=0) as count:  # (0: never fails, only counts)
        run_call(db, branch, sql)
    return count[0]


@pytest.mark.parametrize(("branch", "sql"), CALLS, ids=[f"{b}: {s}" for b, s in CALLS])
def test_a_failure_at_any_step_leaves_no_transaction_and_nothing_half_done(shop, branch, sql):
    tried = 0
    with chronos_lite.open(shop) as db:
        for owner, name in STEPS:
            runs = times_run(db, owner, name, branch, sql)
            for at in range(1, min(runs, 4) + 1):
                run_call(db, branch, "select 1")  # (chronos catches up with the last call's
                before = file_dump(shop)  # schema change lazily, at the next call: done first)
                with failing(owner, name, at) as count:
                    try:
                        run_call(db, branch, sql)
                    except (Injected, ChronosError):
                        pass
                    else:  # (a step runs more often on some calls: a schema caught up)
                        assert count[0] < at, (name, at, "ran, but the call didn't fail")
                        continue
                tried += 1
                open_ones = [
                    s.branch for s in db.database._sessions() if not s.conn.get_autocommit()
                ]
                assert open_ones == [], (name, at, open_ones)
                if name not in AFTER_COMMIT and "commit;" not in sql:
                    assert file_dump(shop) == before, (name, at)
                run_call(db, "main", "select 1")  # the database serves on
                run_call(db, branch, sql)
    assert tried >= 8  # (every step the call runs, at each of its first four runs)


def test_the_calls_own_commit_records_its_event_inside_its_transaction(shop):
    """An explicit BEGIN ... COMMIT's event is written before the COMMIT, in the same
    transaction: a failure recording it leaves neither the rows nor the event."""
    with chronos_lite.open(shop) as db:
        for branch in ("main", "w"):
            before = file_dump(shop)
            with failing(events, "record", 1), pytest.raises((Injected, ChronosError)):
                run_call(db, branch, "begin; insert into users(name) values ('x'); commit")
            assert file_dump(shop) == before
            run_call(db, branch, "begin; insert into users(name) values ('x'); commit")
            history = db.call("history", branch=branch, limit=1).data["events"]
            assert history[0]["event"] == "write" and history[0]["rows"] == 1


def test_an_operation_that_leaves_a_transaction_open_is_not_acknowledged(shop):
    """A handler that returns with its transaction open (a bug) gets an internal error, and
    the transaction is rolled back: what isn't committed is never reported done."""
    from chronos_lite.operations.registry import REGISTRY

    op = REGISTRY.get("get")
    real: Callable = op.handler

    def leaky(db, args, caller):
        db.tables()  # (as chronos' writes do first: main's history triggers are then trusted)
        db.main.conn.execute("BEGIN IMMEDIATE")
        db.main.conn.execute("insert into users(name) values ('uncommitted')")
        return real(db, args, caller)

    with chronos_lite.open(shop) as db:
        op.handler = leaky
        try:
            with pytest.raises(ChronosError, match="left a transaction open") as err:
                db.call("get", table="users", id="1")
            assert err.value.code == "XX000"
        finally:
            op.handler = real
        assert db.database.main.conn.get_autocommit()
        assert db.query("select count(*) as n from users") == [{"n": 2}]
