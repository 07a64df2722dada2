"""Chronos' own SQL statements run through the ``sql`` operation: as the owner, and in safe
mode (what it may read, what it is refused)."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from chronos_lite import ChronosError
from chronos_lite.operations.registry import Caller
from chronos_lite.statements.chronos_sql import FORMS, parse

# Each form as an error shows it, by operation (those with one form: test_chronos_sql_malformed
# checks the forms themselves).
FORM = {form.op: form.text for form in FORMS}


# --- through the sql operation --------------------------------------------------------------


def moment() -> str:
    """Now, as a local time with microseconds, between two writes."""
    time.sleep(0.01)
    text = datetime.fromtimestamp(time.time()).isoformat(sep=" ")
    time.sleep(0.01)
    return text


def tag(db, stmt: str, branch: str = "main") -> str:
    result = db.sql(stmt, branch=branch).results[0]
    assert result.columns is None
    return result.tag


def names(db, branch: str = "main") -> list[str]:
    return [r["name"] for r in db.query("select name from users order by id", branch=branch)]


def worlds(db) -> dict[str, dict]:
    result = db.sql("SHOW WORLDS").results[0]
    return {row[0]: dict(zip(result.columns, row)) for row in result.rows}


def state(db) -> tuple:
    """What a statement that changes nothing leaves as it was."""
    shown = worlds(db)
    rows = {b: db.query("select * from users order by id", branch=b) for b in shown}
    history = {b: db.query(f"SHOW HISTORY OF {b} LIMIT 1000") for b in shown}
    return shown, rows, history


def test_fork_world(shop):
    text = tag(shop, "FORK WORLD task-1 WITH (task = 'fix names', n = 3, f = -1.5, ok = true)")
    assert text.startswith("created branch task-1 (world id w")
    assert text.endswith('from main; pass branch="task-1" to work on it')
    world = shop.database.world("task-1")
    assert world.meta == {"task": "fix names", "n": 3, "f": -1.5, "ok": True}
    assert world.parent == "main" and world.owner == "owner"
    shop.sql("update users set name = 'T' where id = 1", branch="task-1")
    assert tag(shop, 'FORK WORLD "sub" FROM task-1').startswith("created branch sub")
    assert shop.database.world("sub").parent == "task-1"
    assert names(shop, "sub") == ["T"] and names(shop) == ["Ada"]


def test_fork_world_from_a_moment(shop):
    then = moment()
    shop.sql("update users set name = 'Later' where id = 1")
    shop.sql(f"FORK WORLD before FROM main@'{then}'")
    shop.sql(f"FORK WORLD before2 FROM 'main@{then}'")
    assert names(shop, "before") == names(shop, "before2") == ["Ada"]
    assert names(shop) == ["Later"]


def test_fork_world_runs_as_its_caller(shop):
    shop.call("sql", caller=Caller(name="bot"), sql="FORK WORLD b")
    assert shop.database.world("b").owner == "bot"


def test_fork_world_refused_by_the_registry(shop):
    with pytest.raises(ChronosError, match="'name' must be a non-empty string without spaces"):
        shop.sql('FORK WORLD "my world"')
    shop.sql("FORK WORLD w")
    with pytest.raises(ChronosError, match="branch 'w' already exists") as info:
        shop.sql("FORK WORLD w")
    assert info.value.code == "55006"
    with pytest.raises(ChronosError, match="no branch 'nowhere'; branches: main, w") as info:
        shop.sql("FORK WORLD x FROM nowhere")
    assert info.value.code == "P0002"
    assert list(worlds(shop)) == ["main", "w"]


def test_fork_world_with_nan_is_refused(shop):
    with pytest.raises(ChronosError):
        shop.sql("FORK WORLD x WITH (v = nan)")
    assert list(worlds(shop)) == ["main"]


def test_a_number_python_cant_read_in_sql(shop):
    with pytest.raises(ChronosError) as info:
        shop.sql("SHOW HISTORY LIMIT ²")
    assert info.value.code == "22023"


def test_merge_world(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    assert tag(shop, "MERGE WORLD w") == "merged 1 change from w into main"
    assert names(shop) == ["W"]
    assert "w" not in worlds(shop)  # merged: finished


def test_merge_world_dry_run_changes_nothing(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    before = state(shop)
    text = tag(shop, "MERGE WORLD w DRY RUN")
    assert "| apply " in text and '"name": "W"' in text
    assert "w is at version 1; main stands at" in text
    assert state(shop) == before
    assert text == shop.call("merge_preview", branch="w").text


def test_merge_world_at_a_stale_version_merges_nothing(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    assert worlds(shop)["w"]["version"] == 1
    before = state(shop)
    with pytest.raises(ChronosError) as info:
        shop.sql("MERGE WORLD w AT VERSION 0")
    assert info.value.code == "40001"
    assert "w is at version 1, not 0: it changed since" in info.value.message
    assert state(shop) == before
    assert names(shop) == ["Ada"]
    assert tag(shop, "MERGE WORLD w AT VERSION 1") == "merged 1 change from w into main"
    assert names(shop) == ["W"]


def test_merge_world_resolve(shop):
    for name in ("a", "b"):
        shop.sql(f"FORK WORLD {name}")
        shop.sql(f"update users set name = '{name}' where id = 1", branch=name)
    shop.sql("update users set name = 'M' where id = 1")
    with pytest.raises(ChronosError) as info:
        shop.sql("MERGE WORLD a")
    assert info.value.code == "40001" and "nothing was changed" in info.value.message
    assert names(shop) == ["M"]
    shop.sql("MERGE WORLD a RESOLVE theirs")
    assert names(shop) == ["M"]
    shop.sql("merge world b resolve ours")
    assert names(shop) == ["b"]


def test_merge_world_into_another(shop):
    shop.sql("FORK WORLD w")
    shop.sql("FORK WORLD x")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    text = tag(shop, "MERGE WORLD w INTO x")
    assert text.startswith("merged 1 change from w into x") and "w stays open" in text
    assert names(shop, "x") == ["W"] and names(shop) == ["Ada"]
    assert "w" in worlds(shop)


def test_discard_world(shop):
    shop.sql("FORK WORLD p")
    shop.sql("FORK WORLD c FROM p")
    with pytest.raises(ChronosError, match="has branches forked from it") as info:
        shop.sql("DISCARD WORLD p")
    assert info.value.code == "55006"
    assert list(worlds(shop)) == ["main", "p", "c"]
    assert tag(shop, "DISCARD WORLD p CASCADE").startswith("discarded branches c (world id")
    assert list(worlds(shop)) == ["main"]
    shop.sql("FORK WORLD q")
    assert tag(shop, "DISCARD WORLD q").startswith("discarded branch q (world id")


def test_rebase_world(shop):
    shop.sql("FORK WORLD r")
    shop.sql("insert into users(name, email) values ('R', 'r@x')", branch="r")
    shop.sql("insert into users(name, email) values ('M', 'm@x')")
    assert names(shop, "r") == ["Ada", "R"]
    assert tag(shop, "REBASE WORLD r") == "REBASE 1"
    assert sorted(names(shop, "r")) == ["Ada", "M", "R"]
    assert names(shop) == ["Ada", "M"]


def test_rebase_world_at_a_stale_version(shop):
    shop.sql("FORK WORLD r")
    shop.sql("update users set name = 'R' where id = 1", branch="r")
    shop.sql("insert into users(name, email) values ('M', 'm@x')")
    with pytest.raises(ChronosError, match="not 0") as info:
        shop.sql("REBASE WORLD r AT VERSION 0")
    assert info.value.code == "40001"
    assert names(shop, "r") == ["R"]


def test_diff(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'B' where id = 1", branch="w")
    text = tag(shop, "DIFF w")
    assert (
        text
        == '1 change on w (users: 0 deleted, 1 updated, 0 inserted)\n~ users/1  name: "Ada" -> "B"'
    )
    assert tag(shop, "DIFF", branch="w") == text  # no name: the call's branch
    assert tag(shop, "diff;", branch="w") == text
    assert tag(shop, "DIFF w AS SQL") == (
        "-- 1 change on w (users: 0 deleted, 1 updated, 0 inserted)\n"
        'UPDATE "users" SET "name" = \'B\' WHERE "id" = 1;'
    )
    assert tag(shop, "DIFF w TO main") == (
        "1 change on w -> main (users: 0 deleted, 1 updated, 0 inserted)\n"
        '~ users/1  name: "B" -> "Ada"'
    )
    assert tag(shop, "DIFF TO main", branch="w") == tag(shop, "DIFF w TO main")
    with pytest.raises(ChronosError, match="main has no fork to compare with"):
        shop.sql("DIFF")  # on main, no name: main's diff


def test_show_worlds_is_a_table(shop):
    shop.sql("FORK WORLD w WITH (task = 'x')")
    shop.sql("update users set name = 'B' where id = 1", branch="w")
    result = shop.sql("SHOW WORLDS").results[0]
    assert result.columns == ["name", "world_id", "parent", "changes", "version", "owner", "meta"]
    assert result.tag == ""
    main, w = result.rows
    assert main == ("main", None, None, None, None, None, None)
    assert w == ("w", shop.database.world("w").wid, "main", 1, 1, "owner", '{"task": "x"}')
    assert shop.sql("show worlds;", branch="w").results[0].rows == result.rows
    reply = shop.call("sql", sql="SHOW WORLDS")
    assert reply.text.splitlines()[0].split("|")[0].strip() == "name"
    assert reply.data["results"][0]["columns"] == result.columns


def test_show_history_is_a_table(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'B' where id = 1", branch="w")
    shop.sql("CHECKPOINT WORLD w cp")
    result = shop.sql("SHOW HISTORY OF w").results[0]
    assert result.columns == ["at", "event", "by", "rows", "detail"]
    assert [r[1:4] for r in result.rows] == [
        ("checkpoint", "owner", 0),
        ("write", "owner", 1),
        ("fork", "owner", 0),
    ]
    assert result.rows[1][4] == "update users set name = 'B' where id = 1"
    assert shop.sql("SHOW HISTORY", branch="w").results[0].rows == result.rows
    assert shop.sql("SHOW HISTORY w LIMIT 1").results[0].rows == result.rows[:1]
    on_main = shop.query("SHOW HISTORY")
    assert on_main[0]["event"] == "forked" and on_main[0]["detail"] == "forked w"


def test_checkpoint_and_rollback_world(shop):
    shop.sql("FORK WORLD w")
    assert tag(shop, "CHECKPOINT WORLD w AS start").startswith("checkpoint start: w at ")
    shop.sql("update users set name = 'X' where id = 1", branch="w")
    assert tag(shop, "CHECKPOINT WORLD w after-x").startswith("checkpoint after-x: w at ")
    shop.sql("delete from users", branch="w")
    text = tag(shop, "ROLLBACK WORLD w TO after-x")
    assert text.startswith("restored w to checkpoint after-x (") and "1 row written back" in text
    assert names(shop, "w") == ["X"]
    tag(shop, "rollback world w to start")
    assert names(shop, "w") == ["Ada"]
    with pytest.raises(ChronosError, match="w has no checkpoint nowhere") as info:
        shop.sql("ROLLBACK WORLD w TO nowhere")
    assert info.value.code == "P0002"
    assert shop.sql("begin; rollback").results[1].tag == "ROLLBACK"  # SQLite's own


def test_restore_world(shop):
    then = moment()
    shop.sql("update users set name = 'Later' where id = 1")
    text = tag(shop, f"RESTORE WORLD main TO '{then}'")
    assert text.startswith("restored main to ") and text.endswith(": 1 row written back")
    assert names(shop) == ["Ada"]
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W1' where id = 1", branch="w")
    then = moment()
    shop.sql("update users set name = 'W2' where id = 1", branch="w")
    assert tag(shop, f"restore world w at '{then}'").startswith("restored w to ")
    assert names(shop, "w") == ["W1"]
    with pytest.raises(ChronosError, match="isn't a moment"):
        shop.sql("RESTORE WORLD main TO 'someday'")


def test_undo_merge(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    shop.sql("MERGE WORLD w")
    assert names(shop) == ["W"]
    text = tag(shop, "UNDO MERGE w")
    assert text == "undid the merge of w into main: 1 row put back"
    assert names(shop) == ["Ada"]


def test_undo_merge_skip_changed(shop):
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x')")
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' || id", branch="w")
    shop.sql("MERGE WORLD w")
    shop.sql("update users set name = 'Human' where id = 2")
    with pytest.raises(ChronosError, match="users/2"):
        shop.sql("UNDO MERGE w")
    assert names(shop) == ["W1", "Human"]
    text = tag(shop, "UNDO MERGE w SKIP CHANGED")
    assert text.startswith("undid the merge of w into main: 1 row put back; 1 changed since")
    assert names(shop) == ["Ada", "Human"]


def test_undo_agent(shop):
    bot1, bot2 = Caller(name="bot", run="r1"), Caller(name="bot", run="r2")
    shop.call("sql", caller=bot1, sql="update users set name = 'bot' where id = 1")
    shop.call("sql", caller=bot2, sql="insert into users(name, email) values ('B2', 'b2@x')")
    text = tag(shop, "UNDO AGENT bot SINCE '-1 minute' WHERE run_id = 'r1'")
    assert text.startswith("UNDO AGENT bot: 1 row put back")
    assert names(shop) == ["Ada", "B2"]
    assert tag(shop, "undo agent bot since '-1 minute'").startswith(
        "UNDO AGENT bot: 1 row put back"
    )
    assert names(shop) == ["Ada"]


def test_a_chronos_statement_runs_alone(shop):
    before = state(shop)
    for sql in (
        "FORK WORLD q; select 1",
        "select 1; FORK WORLD q",
        "insert into users(name, email) values ('X', 'x@x'); FORK WORLD q",
        "BEGIN; FORK WORLD q; COMMIT",
        "SHOW WORLDS; SHOW WORLDS",
    ):
        with pytest.raises(ChronosError, match="runs its own transaction: send it in a call of"):
            shop.sql(sql)
    with pytest.raises(ChronosError, match="^FORK WORLD runs its own transaction") as info:
        shop.sql("select 1; fork world q")
    assert info.value.code == "22023"
    assert state(shop) == before
    assert shop.sql("FORK WORLD q;").results[0].tag.startswith("created branch q")


def test_use_world_is_the_shells(shop):
    shop.sql("FORK WORLD w")
    with pytest.raises(ChronosError) as info:
        shop.sql("USE WORLD w")
    assert info.value.code == "22023"
    assert info.value.message.startswith("USE WORLD switches the shell's branch")
    assert 'branch="w"' in info.value.message and "-b w" in info.value.message


def test_a_malformed_statement_in_sql(shop):
    with pytest.raises(ChronosError) as info:
        shop.sql("MERGE WORLD w RESOLVE mine")
    assert info.value.code == "22023"
    assert info.value.message == f"expected ours|theirs, not mine; its form: {FORM['merge']}"
    with pytest.raises(ChronosError, match="^unknown statement SHOW TABLES: chronos has"):
        shop.sql("SHOW TABLES")


# --- safe mode ------------------------------------------------------------------------------


@pytest.fixture
def agent_shop(shop):
    """A world w with a change and a checkpoint, made by the owner; an agent in safe mode."""
    shop.sql("FORK WORLD w")
    shop.sql("CHECKPOINT WORLD w cp")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    return shop


READ_ONLY = [
    ("SHOW WORLDS", None, "name"),
    ("SHOW HISTORY OF w", None, "checkpoint"),
    ("SHOW HISTORY", "w", "checkpoint"),
    ("show history limit 1", None, "forked w"),
    ("DIFF w", None, "1 change on w"),
    ("DIFF", "w", "1 change on w"),
    ("DIFF w AS SQL", None, "UPDATE"),
    ("DIFF w TO main", None, "1 change on w -> main"),
    ("DIFF w READERS", None, "1 changed column on w"),
    ("SHOW READERS", None, "name | reads | critical"),
    ("MERGE WORLD w DRY RUN", None, "w is at version"),
    ("merge world w resolve ours dry run", None, "w is at version"),
]


@pytest.mark.parametrize(("stmt", "branch", "shown"), READ_ONLY)
def test_safe_mode_reads(agent_shop, stmt, branch, shown):
    before = state(agent_shop)
    on = {"branch": branch} if branch else {}
    reply = agent_shop.call("sql", caller=Caller(mode="safe"), sql=stmt, **on)
    assert shown in reply.text
    assert state(agent_shop) == before


REFUSED = [
    "FORK WORLD s",
    "MERGE WORLD w",
    "MERGE WORLD w AT VERSION 1",
    "DISCARD WORLD w",
    "DISCARD WORLD w CASCADE",
    "REBASE WORLD w",
    "CHECKPOINT WORLD w cp2",
    "ROLLBACK WORLD w TO cp",
    "RESTORE WORLD main TO '-1 minute'",
    "RESTORE WORLD w AT '-1 minute'",
    "UNDO MERGE w",
    "UNDO AGENT owner SINCE '-1 minute'",
    "USE WORLD w",
    "SHOW WORLDS; FORK WORLD s",
]


@pytest.mark.parametrize("stmt", REFUSED)
def test_safe_mode_refuses_what_changes_worlds(agent_shop, stmt):
    before = state(agent_shop)
    with pytest.raises(ChronosError) as info:
        agent_shop.call("sql", caller=Caller(mode="safe"), sql=stmt)
    assert info.value.code == "42501"
    assert info.value.message.startswith("safe mode: agents can't fork, merge, restore")
    assert state(agent_shop) == before


# What holds a merge (merge checks, merge policies, declared readers): a person's.
RULE_SETTERS = [
    "MARK READER r READS (users.name) CRITICAL",
    "DROP READER r",
    "CREATE MERGE CHECK k AS select 1 where 0",
    "DROP MERGE CHECK k",
    "CREATE MERGE POLICY p WITH (critical = true)",
    "DROP MERGE POLICY p",
]


@pytest.mark.parametrize("stmt", RULE_SETTERS)
def test_safe_mode_refuses_what_holds_a_merge(agent_shop, stmt):
    agent_shop.sql("MARK READER r READS (users.email)")
    before = state(agent_shop), agent_shop.call("readers").data
    with pytest.raises(ChronosError) as info:
        agent_shop.call("sql", caller=Caller(mode="safe"), sql=stmt)
    assert info.value.code == "42501"
    assert info.value.message.startswith("safe mode: agents can't change what holds a merge (")
    assert (state(agent_shop), agent_shop.call("readers").data) == before


def test_safe_mode_refuses_them_on_the_agents_own_world(agent_shop):
    agent = Caller(mode="safe")
    agent_shop.call("fork", caller=agent, name="mine")  # the fork tool: allowed
    agent_shop.call(
        "sql", caller=agent, sql="update users set name = 'A' where id = 1", branch="mine"
    )
    before = state(agent_shop)
    for stmt in ("CHECKPOINT WORLD mine cp", "DISCARD WORLD mine", "FORK WORLD sub FROM mine"):
        with pytest.raises(ChronosError) as info:
            agent_shop.call("sql", caller=agent, sql=stmt, branch="mine")
        assert info.value.code == "42501"
    assert state(agent_shop) == before
    assert (
        "1 change on mine" in agent_shop.call("sql", caller=agent, sql="DIFF", branch="mine").text
    )


def test_safe_mode_malformed_shows_the_form(agent_shop):
    with pytest.raises(ChronosError) as info:
        agent_shop.call("sql", caller=Caller(mode="safe"), sql="MERGE WORLD w AT VERSION x")
    assert info.value.code == "22023"
    assert info.value.message.endswith(f"; its form: {FORM['merge']}")


def test_fork_world_forks_from_the_branch_it_runs_on(shop):
    assert parse("FORK WORLD b", "a") == ("fork", {"name": "b", "from": "a"})
    assert parse("FORK WORLD b", "main") == ("fork", {"name": "b"})
    assert parse("FORK WORLD b FROM main", "a") == ("fork", {"name": "b", "from": "main"})
    shop.fork("a")
    shop.sql("FORK WORLD b", branch="a")
    assert shop.database.world("b").parent == "a"
