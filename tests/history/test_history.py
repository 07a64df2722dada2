"""History on main: AS OF, main@when, fork from a moment, diff to a moment, the window."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime

import pytest
from helpers import run_cli
from hypothesis import given
from hypothesis import strategies as st
from strategies import example_settings

import chronos_lite
from chronos_lite import ChronosError
from chronos_lite.storage.moments import parse_moment


def moment() -> str:
    """Now, as a local time with microseconds, between two writes."""
    time.sleep(0.01)
    text = datetime.fromtimestamp(time.time()).isoformat(sep=" ")
    time.sleep(0.01)
    return text


def test_moments_parse():
    now = 1_800_000_000.0
    assert parse_moment("-15 minutes", now) == now - 900
    assert parse_moment("2 hours ago", now) == now - 7200
    assert parse_moment("-1.5 days", now) == now - 1.5 * 86400
    # short units as people type them, and now
    shorts = {"-5 min": 300, "-1h": 3600, "-2d": 172800, "-10s": 10, "-1 wk": 604800}
    for text, seconds in {**shorts, "-3 hrs": 10800, "5 mins ago": 300, "now": 0}.items():
        assert parse_moment(text, now) == now - seconds, text
    assert (
        parse_moment("2026-11-30T10:00:00Z")
        == datetime.fromisoformat("2026-11-30T10:00:00+00:00").timestamp()
    )
    assert parse_moment("2026-11-30 10:00") == datetime(2026, 11, 30, 10, 0).timestamp()
    for bad in ("last tuesday", "-5 months", "-1 x"):
        with pytest.raises(ChronosError, match="isn't a moment.*'-5 min', '-1h'.*'now'"):
            parse_moment(bad)


def test_as_of_reads_main_as_it_was(shop):
    shop.sql("insert into users(name, email) values ('Bob', 'bob@x.org')")
    before = moment()
    shop.sql("update users set name = 'Ada L.' where id = 1; delete from users where id = 2")
    shop.sql("insert into users(name, email) values ('Cy', 'cy@x.org')")
    assert shop.query(f"select id, name from users as of '{before}' order by id") == [
        {"id": 1, "name": "Ada"},
        {"id": 2, "name": "Bob"},
    ]
    # an alias, a join with the table now, a schema-qualified name, a subquery
    assert shop.query(
        f"select a.name as was, b.name as now from users as of '{before}' a "
        f"join users b using (id) order by id"
    ) == [{"was": "Ada", "now": "Ada L."}]
    assert shop.query(f"select name from main.users as of '{before}' where id = 2") == [
        {"name": "Bob"}
    ]
    assert shop.query(
        f"select count(*) as n from (select * from users as of '{before}') where name like 'A%'"
    ) == [{"n": 1}]
    assert shop.query("select name from users where name = 'as of'") == []  # a string stays


def test_as_of_and_a_past_branch_read_in_key_order(shop):
    shop.sql("insert into users(name, email) values ('Bob', 'b@x'), ('Cy', 'c@x'), ('Di', 'd@x')")
    shop.sql("create table tags(code text primary key, n int) without rowid")
    shop.sql("insert into tags values ('b', 2), ('a', 1), ('c', 3)")
    before = moment()
    shop.sql("update users set name = 'Bob 2' where id = 2; delete from users where id = 3")
    shop.sql("update tags set n = 20 where code = 'a'")
    names = ["Ada", "Bob", "Cy", "Di"]
    # (without ORDER BY: the rows a change since touched used to come last)
    assert [r["name"] for r in shop.query(f"select name from users as of '{before}'")] == names
    assert [
        r["name"]
        for r in shop.query(f"select name, id from users as of '{before}' u where id in (1, 2, 3)")
    ] == names[:3]
    assert [r["code"] for r in shop.query(f"select code from tags as of '{before}'")] == [
        "a",
        "b",
        "c",
    ]
    shop.fork("w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    then = moment()
    shop.sql("delete from users where id = 1; update users set name = 'X' where id = 2", branch="w")
    assert [r["id"] for r in shop.query(f"select id from users as of '{then}'", branch="w")] == [
        1,
        2,
        4,
    ]
    # the query's own order, grouping and filters still rule
    assert shop.query(
        f"select name from users as of '{before}' where id > 1 order by name desc limit 1"
    ) == [{"name": "Di"}]


def test_main_at_a_moment_is_a_branch_to_read(shop):
    before = moment()
    shop.sql("update users set name = 'Ada L.' where id = 1")
    branch = f"main@{before}"
    assert shop.query("select name from users", branch=branch) == [{"name": "Ada"}]
    assert shop.call("get", table="users", id="1", branch=branch).data["row"]["name"] == "Ada"
    with pytest.raises(ChronosError, match="can only be read"):
        shop.sql("update users set name = 'x'", branch=branch)
    with pytest.raises(ChronosError, match="no branch 'nope'"):
        shop.sql("select 1", branch="nope@-1 minute")
    shop.call("fork", name="replay", **{"from": branch})
    assert shop.query("select name from users", branch="replay") == [{"name": "Ada"}]
    d = shop.call("diff", branch="main", to=branch).text
    assert d.splitlines()[1] == '~ users/1  name: "Ada L." -> "Ada"'


def test_moments_outside_the_window_are_refused(shop):
    with pytest.raises(ChronosError, match="before the oldest moment kept") as err:
        shop.sql("select * from users as of '-8 days'")
    assert "kept for 1 week" in err.value.message
    with pytest.raises(ChronosError, match="isn't a moment"):
        shop.sql("select * from users as of 'soon'")
    # a moment still to come reads as now
    assert shop.query("select name from users as of '2999-01-01'") == [{"name": "Ada"}]


def test_as_of_through_the_cli(tmp_path):
    folder = tmp_path / "shop"
    run_cli("init", folder)
    run_cli(folder, "sql", "create table t(id integer primary key, v text)")
    run_cli(folder, "sql", "insert into t(v) values ('old')")
    before = moment()
    run_cli(folder, "sql", "update t set v = 'new'")
    out = run_cli(folder, "sql", f"select v from t as of '{before}'").stdout
    assert " old" in out
    out = run_cli(folder, "sql", "-b", f"main@{before}", "select v from t").stdout
    assert " old" in out


@example_settings(15, fixture=True)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["insert", "update", "delete", "moment", "restore", "merge"]),
            st.integers(1, 6),
            st.text("abc", max_size=3),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_as_of_each_moment_equals_the_model_then(tmp_path_factory, steps):
    db = chronos_lite.init(tmp_path_factory.mktemp("h") / "db")
    db.sql("create table t(k integer primary key, v text)")
    db.sql("insert into t values (1, 'main'), (9, 'main')")
    db.fork("w")
    for branch in ("main", "w"):
        _replay(db, steps, branch)
    db.close()


def _replay(db, steps, branch: str) -> None:
    """Write ``steps`` on ``branch``; AS OF each moment it noted must read as the model did."""
    model = {r["k"]: r["v"] for r in db.query("select k, v from t", branch=branch)}
    seen: list[tuple[str, dict]] = []
    for kind, key, value in steps:
        if kind == "insert":
            db.sql("insert or replace into t values ($1, $2)", key, value, branch=branch)
            model[key] = value
        elif kind == "update":
            db.sql("update t set v = $2 where k = $1", key, value, branch=branch)
            if key in model:
                model[key] = value
        elif kind == "delete":
            db.sql("delete from t where k = $1", key, branch=branch)
            model.pop(key, None)
        elif kind == "merge":  # a change made on a branch of the branch, merged into it
            db.fork("side", source=branch)
            db.sql("insert or replace into t values ($1, $2)", key, value, branch="side")
            db.call("merge", branch="side")
            model[key] = value
        elif kind == "restore":  # back to a moment noted before (an ordinary write)
            if seen:
                when, then = seen[key % len(seen)]
                db.call("restore", branch=branch, at=when)
                model = dict(then)
        else:
            seen.append((moment(), dict(model)))
    for when, then in seen:
        rows = db.query(f"select k, v from t as of '{when}'", branch=branch)
        assert {r["k"]: r["v"] for r in rows} == then, (branch, when)
        rows = db.query("select k, v from t", branch=f"{branch}@{when}")
        assert {r["k"]: r["v"] for r in rows} == then, (branch, when)
        count = db.query(f"select count(*) from t as of '{when}'", branch=branch)
        assert count == [{"count(*)": len(then)}], (branch, when)


def test_a_world_reads_as_it_was_since_its_fork(shop):
    shop.fork("w")
    before = moment()
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    assert shop.query("select name from users", branch=f"w@{before}") == [{"name": "Ada"}]
    assert shop.query(f"select name from users as of '{before}'", branch="w") == [{"name": "Ada"}]
    with pytest.raises(ChronosError, match="w didn't exist then as it is now"):
        shop.query("select 1", branch="w@-1 hour")
    with pytest.raises(ChronosError, match="can only be read"):
        shop.sql("delete from users", branch=f"w@{before}")
    shop.sql("insert into users(name, email) values ('Bob', 'b@x')")
    shop.call("rebase", branch="w")
    with pytest.raises(ChronosError, match="last rebased"):
        shop.query("select 1", branch=f"w@{before}")


@pytest.mark.parametrize("branch", ["main", "w"])
def test_restore_and_rollback_write_the_past_back(shop, branch):
    shop.sql("create table tags(name text)")  # no primary key: rows by their hidden rowid
    shop.sql("insert into tags values ('a'), ('b'); insert into users(name) values ('Bob')")
    shop.fork("w")
    shop.call("checkpoint", branch=branch, name="start")
    then = shop.query("select * from users order by id", branch=branch)
    tags = shop.query("select rowid, name from tags order by rowid")
    shop.sql(
        "update users set name = 'X' where id = 1; delete from users where id = 2; "
        "insert into users(name) values ('Cy'); delete from tags where name = 'a'; "
        "insert into tags values ('c')",
        branch=branch,
    )
    reply = shop.call("rollback", branch=branch, checkpoint="start")
    assert reply.text.startswith(f"restored {branch} to checkpoint start (")
    assert reply.data["rows"] == 5
    assert shop.query("select * from users order by id", branch=branch) == then
    assert shop.query("select name from tags order by name", branch=branch) == [
        {"name": "a"},
        {"name": "b"},
    ]
    if branch == "main":  # the hidden rowid comes back too
        assert shop.query("select rowid, name from tags order by rowid") == tags
    # a restore is an ordinary write: it can be undone by restoring to before it
    after = moment()
    shop.sql("update users set name = 'Y' where id = 1", branch=branch)
    shop.call("restore", branch=branch, at=after)
    assert shop.query("select * from users order by id", branch=branch) == then


def test_checkpoint_names_and_refusals(shop):
    shop.fork("w")
    shop.call("checkpoint", branch="w", name="one")
    with pytest.raises(ChronosError, match="already has a checkpoint one"):
        shop.call("checkpoint", branch="w", name="one")
    with pytest.raises(ChronosError, match="no checkpoint two; its checkpoints: one"):
        shop.call("rollback", branch="w", checkpoint="two")
    with pytest.raises(ChronosError, match="a name of letters, digits"):
        shop.call("checkpoint", branch="w", name="a;b")
    with pytest.raises(ChronosError, match="isn't a moment"):
        shop.call("restore", branch="w", at="whenever")


def test_restore_through_the_cli(tmp_path):
    folder = tmp_path / "shop"
    run_cli("init", folder)
    run_cli(folder, "sql", "create table t(id integer primary key, v text)")
    run_cli(folder, "sql", "insert into t(v) values ('old')")
    run_cli(folder, "checkpoint", "main", "before")
    run_cli(folder, "sql", "update t set v = 'new'")
    out = run_cli(folder, "rollback", "main", "before").stdout
    assert "1 row written back" in out
    assert " old" in run_cli(folder, "sql", "select v from t").stdout


def test_history_lists_what_happened_and_who(shop, folder):
    shop.fork("task-1")
    shop.sql("update users set name = 'Ada L.' where id = 1", branch="task-1")
    shop.call("checkpoint", branch="task-1", name="cp")
    shop.call("merge", branch="task-1")
    # an app writing main directly, in a process of its own (SQLite's own module)
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute(\"insert into users(name, email) values ('App', 'app@x')\"); c.commit()",
            str(folder / "chronos.db"),
        ],
        check=True,
    )
    main = shop.call("history", branch="main")
    kinds = [(e["event"], e["by"]) for e in main.data["events"]]
    assert kinds[:3] == [("write", "app"), ("merge", "owner"), ("forked", "owner")]
    assert "users: written directly, not through chronos" in main.text
    assert "merged task-1" in main.text
    shop.fork("w")
    shop.sql("insert into users(name, email) values ('W', 'w@x')", branch="w")
    events = shop.call("history", branch="w", limit=5).data["events"]
    assert [e["event"] for e in events] == ["write", "fork"]
    assert events[0]["rows"] == 1


def test_undo_merge_puts_rows_back_and_names_rows_changed_since(shop):
    shop.sql("insert into users(name, email) values ('Bob', 'bob@x'), ('Cy', 'cy@x')")
    shop.fork("task-1")
    shop.sql(
        "update users set name = 'Ada L.' where id = 1; delete from users where id = 2; "
        "insert into users(name, email) values ('Di', 'di@x')",
        branch="task-1",
    )
    before = shop.query("select * from users order by id")
    shop.call("merge", branch="task-1")
    shop.sql("update users set name = 'Ada K.' where id = 1")  # someone else, since
    with pytest.raises(ChronosError, match=r"1 row changed since the merge \(users/1\)") as err:
        shop.call("undo_merge", branch="task-1")
    assert err.value.code == "40001"
    reply = shop.call("undo_merge", branch="task-1", skip_changed=True)
    assert reply.text.startswith("undid the merge of task-1 into main: 2 rows put back")
    expected = [r if r["id"] != 1 else {**r, "name": "Ada K."} for r in before]
    assert shop.query("select * from users order by id") == expected
    with pytest.raises(ChronosError, match="undone already"):
        shop.call("undo_merge", branch="task-1")
    with pytest.raises(ChronosError, match="no merge of nope"):
        shop.call("undo_merge", branch="nope")


def test_undo_of_a_merge_into_a_world(shop):
    shop.fork("p")
    shop.fork("c", source="p")
    shop.sql("update users set name = 'C' where id = 1", branch="c")
    shop.call("merge", branch="c")
    assert shop.query("select name from users", branch="p") == [{"name": "C"}]
    shop.call("undo_merge", branch="c")
    assert shop.query("select name from users", branch="p") == [{"name": "Ada"}]


def test_retention_is_a_setting_and_moments_follow_it(shop):
    assert shop.call("config", setting="retention").text.startswith("retention: 1 week")
    assert shop.call("config", setting="retention", value="2 hours").data["seconds"] == 7200
    with pytest.raises(ChronosError, match="kept for 2 hours"):
        shop.sql("select * from users as of '-3 hours'")
    with pytest.raises(ChronosError, match="isn't a length of time"):
        shop.call("config", setting="retention", value="forever")
    with pytest.raises(ChronosError, match="'setting' must be 'retention'"):
        shop.call("config", setting="colour")


def _history_rows(db) -> int:
    n = db.database.table("t")[0]
    return db.database.main.conn.execute(f"select count(*) from _chronos_h_{n}").fetchone()[0]


def test_pruning_drops_expired_history_and_keeps_what_worlds_read(db):
    from chronos_lite.history import prune

    db.sql("create table t(k integer primary key, v text)")
    for i in range(50):
        db.sql("insert or replace into t values ($1, $2)", i % 5, f"v{i}")
    db.fork("w")
    seen = db.query("select * from t order by k", branch="w")
    for i in range(20):
        db.sql("update t set v = $2 where k = $1", i % 5, f"after{i}")
    before = _history_rows(db)
    future = time.time() + 8 * 86400  # everything is older than the window then
    deleted = prune.prune(db.database, now=future)
    assert deleted > 0 and _history_rows(db) == before - deleted
    assert _history_rows(db) >= 20  # main's changes since w's fork stay: w reads through them
    assert db.query("select * from t order by k", branch="w") == seen
    db.call("discard", branch="w")
    prune.prune(db.database, now=future)
    assert _history_rows(db) == 1  # the newest row of the table's history stays


def test_pruning_while_another_process_writes_loses_nothing(tmp_path):
    from chronos_lite.history import prune

    folder = tmp_path / "db"
    db = chronos_lite.init(folder)
    db.sql("create table t(k integer primary key, v text)")
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import chronos_lite, sys\n"
            "db = chronos_lite.open(sys.argv[1])\n"
            "for i in range(300):\n"
            "    db.sql('insert into t(v) values ($1)', str(i))\n"
            "    db.sql('update t set v = v || $1 where k = 1', '.')\n",
            str(folder),
        ]
    )
    while writer.poll() is None:
        prune.prune(db.database, now=time.time() + 8 * 86400)
    assert writer.returncode == 0
    assert db.query("select count(*) as n from t") == [{"n": 300}]
    assert db.query("select length(v) as n from t where k = 1") == [{"n": 1 + 300}]
    db.close()


def test_history_statements_in_sql(shop):
    shop.fork("w")
    assert shop.sql("CHECKPOINT WORLD w start").results[0].tag.startswith("checkpoint start: w")
    shop.sql("update users set name = 'X'", branch="w")
    tag = shop.sql("ROLLBACK WORLD w TO start").results[0].tag
    assert tag.startswith("restored w to checkpoint start") and "1 row written back" in tag
    rows = shop.query("show history of w limit 2")
    assert [r["event"] for r in rows] == ["rollback", "write"]
    assert shop.query("select event from chronos_history('w') where event = 'checkpoint'") == [
        {"event": "checkpoint"}
    ]
    shop.call("merge", branch="w")
    assert shop.sql("UNDO MERGE w").results[0].tag.startswith("undid the merge of w into main")
    tag = shop.sql("RESTORE WORLD main TO '-1 second'").results[0].tag
    assert tag.startswith("restored main to")
    with pytest.raises(ChronosError, match="its form: RESTORE WORLD <branch> TO '<moment>'"):
        shop.sql("RESTORE WORLD main '-1 minute'")
    with pytest.raises(ChronosError, match="send it in a call of its own"):
        shop.sql("show history main; select 1")
    assert shop.sql("begin; rollback").results[1].tag == "ROLLBACK"  # SQLite's own


def test_undo_agent_puts_back_one_callers_changes_everywhere(shop):
    from chronos_lite.operations.registry import Caller

    shop.sql("insert into users(name, email) values ('Bob', 'b@x'), ('Cy', 'c@x')")
    shop.fork("w")
    main_before = shop.query("select * from users order by id")
    w_before = shop.query("select * from users order by id", branch="w")
    bot = Caller(name="bot", run="r1")
    shop.call(
        "sql",
        caller=bot,
        sql="update users set name = 'bot' where id = 1; delete from users where id = 2; "
        "insert into users(name, email) values ('new', 'n@x')",
    )
    shop.call("sql", caller=bot, sql="update users set name = 'bw' where id = 3", branch="w")
    shop.call("put", caller=bot, table="users", id="1", record={"name": "bp"}, branch="w")
    shop.sql("update users set email = 'human@x' where id = 4")  # the bot's row, changed since
    other = Caller(name="other")
    shop.call("sql", caller=other, sql="update users set name = 'other' where id = 3")
    tag = shop.sql("UNDO AGENT bot SINCE '-1 minute' WHERE run_id = 'r1'").results[0].tag
    assert tag.startswith("UNDO AGENT bot: 4 rows put back (on main, w)")
    assert "left alone: main:users/4" in tag
    now = shop.query("select * from users order by id")
    assert now[:2] == main_before[:2]  # the bot's update and delete undone
    assert now[2]["name"] == "other"  # someone else's change stays
    assert now[3]["email"] == "human@x"  # named, not overwritten
    assert shop.query("select * from users order by id", branch="w") == w_before
    with pytest.raises(ChronosError, match="can't be told apart per app"):
        shop.sql("UNDO AGENT app SINCE '-1 minute'")


def test_fork_from_a_world_as_it_was(shop):
    shop.fork("p")
    shop.sql("update users set name = 'P1' where id = 1", branch="p")
    then = moment()
    shop.sql("update users set name = 'P2' where id = 1", branch="p")
    shop.call("fork", name="c", **{"from": f"p@{then}"})
    assert shop.query("select name from users", branch="c") == [{"name": "P1"}]
    assert shop.call("diff", branch="c").text == "0 changes on c"
    shop.sql("update users set email = 'c@x' where id = 1", branch="c")
    with pytest.raises(ChronosError, match="conflict"):  # p changed users/1 after that moment
        shop.call("merge", branch="c")


def test_rollback_updates_rows_in_place_and_refuses_clearly(db):
    db.sql(
        "create table parent(id integer primary key, name text unique); "
        "create table child(id integer primary key, "
        "parent_id int references parent(id) on delete cascade)"
    )
    db.sql("insert into parent values (1, 'a'), (2, 'b'); insert into child values (10, 1)")
    db.call("checkpoint", branch="main", name="cp")
    db.sql("update parent set name = 'A' where id = 1")
    db.call("rollback", branch="main", checkpoint="cp")
    assert db.query("select * from child") == [{"id": 10, "parent_id": 1}]  # no cascade
    db.sql("update parent set name = 'x' where id = 1; update parent set name = 'a' where id = 2")
    with pytest.raises(ChronosError, match="would break a rule at parent/") as err:
        db.call("rollback", branch="main", checkpoint="cp")  # a unique value moved between rows
    assert err.value.code == "23505"
    assert db.query("select name from parent order by id") == [{"name": "x"}, {"name": "a"}]


def test_history_of_a_merged_branch_stays_readable(shop):
    shop.fork("w")
    shop.sql("update users set name = 'W'", branch="w")
    shop.call("merge", branch="w")
    events = shop.call("history", branch="w").data["events"]
    assert [e["event"] for e in events] == ["merged", "write", "fork"]


def test_config_through_the_cli(tmp_path):
    folder = tmp_path / "shop"
    run_cli("init", folder)
    assert "30 days" in run_cli(folder, "config", "retention", "30 days").stdout
    assert run_cli(folder, "config", "retention").stdout.startswith("retention: 30 days")
