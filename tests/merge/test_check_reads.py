"""check_reads: a world forked with it keeps the queries it ran, and each is compared between
its parent at the fork and now; rebase refuses, and the policy rule check_reads holds a merge,
while something it read changed."""

from __future__ import annotations

import pytest
from helpers import file_dump, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronos_lite
from chronos_lite import ChronosError

BOT = ["read", "fork", "write_own", "write_main", "merge_own"]


@pytest.fixture
def users(db):
    db.sql("create table users(id integer primary key, name text, plan text)")
    db.sql("insert into users(name, plan) values ('Ada', 'free'), ('Bo', 'pro'), ('Cy', 'free')")
    return db


def changed(db, branch: str) -> list[str]:
    return [c["query"] for c in db.call("check_reads", branch=branch).data["changed"]]


def test_nothing_changed_then_what_changed_is_named(users):
    users.fork("t", meta={"check_reads": True})
    said = users.call("check_reads", branch="t").text
    assert (
        said
        == "Nothing t read changed since it forked (0 queries checked against main as it is now)"
    )
    users.sql("select name from users where plan = 'free'", branch="t")
    users.sql("select * from users where id = $1", 2, branch="t")
    users.sql("select count(*) from users where plan = 'gold'", branch="t")  # empty: 0 rows
    users.sql("select name from users where plan = 'free'", branch="t")  # (kept once)
    assert users.call("check_reads", branch="t").data["reads"] == 3
    users.sql("update users set name = 'Ada B.' where id = 1")  # Ada's name: read by one
    assert users.call("check_reads", branch="t").data["reads"] == 3
    assert changed(users, "t") == ["select name from users where plan = 'free'"]
    users.sql("update users set plan = 'gold' where id = 3")
    reply = users.call("check_reads", branch="t")
    assert [c["query"] for c in reply.data["changed"]] == [
        "select name from users where plan = 'free'",
        "select count(*) from users where plan = 'gold'",
    ]
    assert reply.data["changed"][0]["why"] == "2 then, 1 row now"
    assert reply.data["changed"][1]["why"] == "1 row, different now"
    assert "checked_against" in reply.text and "main as it is now" in reply.text
    # the SQL form says the same
    rows = users.sql("CHECK READS t").results[-1].rows
    assert [r[1].split(":")[0] for r in rows] == [
        "select name from users where plan = 'free'",
        "select count(*) from users where plan = 'gold'",
    ]


def test_a_world_that_keeps_no_reads_is_told_how(users):
    users.fork("plain")
    with pytest.raises(ChronosError) as info:
        users.call("check_reads", branch="plain")
    assert 'fork it with meta {"check_reads": true}' in str(info.value)
    users.sql("select * from users", branch="plain")
    assert users.database.main.conn.execute("select count(*) from _chronos_reads").fetchall() == [
        (0,)
    ]


def test_the_world_s_own_changes_are_its_own(users):
    users.fork("t", meta={"check_reads": True})
    users.sql("select name from users where id = 1", branch="t")
    users.sql("update users set name = 'Ada L.' where id = 1", branch="t")
    assert changed(users, "t") == []  # (its own write changed what it reads, not its parent)


def test_rebase_refuses_while_a_read_changed_that_it_wrote_after(users, folder):
    users.fork("t", meta={"check_reads": True})
    users.sql("select name from users where plan = 'pro'", branch="t")
    users.sql("update users set plan = 'x' where id = 3")  # (not read: pro is Bo only)
    assert users.call("rebase", branch="t").text == "REBASE 1"
    users.sql("update users set name = 'Bo P.' where plan = 'pro'", branch="t")  # rests on it
    users.sql("update users set plan = 'pro' where id = 1")  # Ada joins what t read
    before = file_dump(folder)
    with pytest.raises(ChronosError) as info:
        users.call("rebase", branch="t")
    message = str(info.value)
    assert "rebasing t is refused: 1 of the reads it kept changed in main" in message
    assert "and it wrote after reading them" in message
    assert "select name from users where plan = 'pro': 1 then, 2 rows now" in message
    assert file_dump(folder) == before


def test_a_world_that_only_read_rebases_and_then_reads_afresh(users):
    users.fork("t", meta={"check_reads": True})
    users.sql("select name from users where plan = 'pro'", branch="t")
    users.sql("update users set plan = 'pro' where id = 1")
    assert changed(users, "t") == ["select name from users where plan = 'pro'"]
    assert users.call("rebase", branch="t").text == "REBASE 1"  # (it wrote nothing on it)
    assert changed(users, "t") == []  # (its fork is main as it is now)
    assert [
        r["name"]
        for r in users.query("select name from users where plan = 'pro' order by id", branch="t")
    ] == ["Ada", "Bo"]


def test_a_nested_world_s_reads_are_checked_against_its_parent_world(users):
    users.fork("parent")
    users.fork("child", source="parent", meta={"check_reads": True})
    users.sql("select name from users where id = 2", branch="child")
    users.sql("update users set name = 'Bo (main)' where id = 2")  # the parent doesn't see it
    assert changed(users, "child") == []
    users.sql("update users set name = 'Bo (parent)' where id = 2", branch="parent")
    reply = users.call("check_reads", branch="child")
    assert [c["query"] for c in reply.data["changed"]] == ["select name from users where id = 2"]
    assert reply.data["checked_against"] == "parent as it is now"


def test_a_policy_with_check_reads_keeps_its_agents_reads_and_holds_stale_merges(users):
    users.call("agent", action="create", name="bot", rights=BOT)
    users.call("set_merge_policy", name="careful", rules={"check_reads": True}, agents=["bot"])
    bot = users.as_agent("bot")
    users.call("fork", bot, name="task")
    assert users.database.world("task").meta == {"check_reads": True}
    users.call("sql", bot, branch="task", sql="select id from users where plan = 'free'")
    users.call("sql", bot, branch="task", sql="update users set plan = 'pro' where id = 1")
    with pytest.raises(ChronosError) as info:  # an agent can't stop keeping its reads
        users.call("set_meta", bot, branch="task", meta={"check_reads": None})
    assert "only a person turns that off" in str(info.value)
    users.sql("insert into users(name, plan) values ('Di', 'free')")  # a row its filter takes in
    with pytest.raises(ChronosError) as info:
        users.call("merge", bot, branch="task")
    text = str(info.value)
    assert "1 of the reads it kept changed since its fork" in text
    assert "(check_reads is true)" in text and "queued (SHOW REVIEWS)" in text
    check = users.call("check_merge_policy", bot, branch="task", name="careful").text
    assert "check_reads is true" in check


def test_a_world_of_an_agent_under_check_reads_that_kept_none_waits(users):
    users.call("agent", action="create", name="bot", rights=BOT)
    bot = users.as_agent("bot")
    users.call("fork", bot, name="early")  # forked before the policy had the rule
    users.call("sql", bot, branch="early", sql="update users set plan = 'pro' where id = 3")
    users.call("set_merge_policy", name="careful", rules={"check_reads": True}, agents=["bot"])
    with pytest.raises(ChronosError) as info:
        users.call("merge", users.as_agent("bot"), branch="early")
    assert "it didn't keep what it read" in str(info.value)


# --- the property: exactly the reads whose result changed are named ------------------------

READS = [
    "select * from users where id = 1",
    "select * from users where id = 4",  # (none at first: an empty result)
    "select id, name from users where id between 2 and 3",
    "select id from users where plan = 'free'",
    "select count(*) from users where plan = 'pro'",
    "select max(id) from users",
    "select name from users where name like 'C%'",
    "select id from users where plan = 'gold' order by id",
]
WRITES = [
    "update users set plan = 'pro' where id = 1",
    "update users set name = 'Cleo' where id = 2",
    "update users set plan = 'gold' where id = 3",
    "delete from users where id = 2",
    "insert into users(id, name, plan) values (4, 'Dan', 'free')",
    "insert into users(id, name, plan) values (9, 'Cat', 'gold')",
    "update users set name = name where id = 1",  # (the same value: nothing read changes)
]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    reads=st.lists(st.sampled_from(READS), min_size=1, max_size=5, unique=True),
    writes=st.lists(st.sampled_from(WRITES), max_size=4),
)
def test_exactly_the_reads_whose_result_changed_are_named(tmp_path_factory, reads, writes):
    folder = tmp_path_factory.mktemp("reads") / "db"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text, plan text)")
        db.sql("insert into users values (1, 'Ada', 'free'), (2, 'Bo', 'pro'), (3, 'Cy', 'free')")
        db.fork("w", meta={"check_reads": True})
        for query in reads:
            db.sql(query, branch="w")
        before = {q: sorted(map(repr, db.query(q))) for q in reads}
        for write in writes:
            try:
                db.sql(write)
            except ChronosError:
                pass  # (an insert of a key that is there)
        expected = [q for q in reads if sorted(map(repr, db.query(q))) != before[q]]
        assert sorted(changed(db, "w")) == sorted(expected)


def kept_in_file(folder) -> list[str]:
    """The reads the file holds, as another process sees them."""
    return sorted(
        line for line in file_dump(folder) if "_chronos_reads" in line and "VALUES" in line
    )


def test_a_read_is_written_with_the_world_s_next_write(users, folder):
    users.fork("t", meta={"check_reads": True})
    users.sql("select plan from users where id = 3", branch="t")
    assert kept_in_file(folder) == []  # (waiting in this process: no write rests on it yet)
    users.sql("update users set name = 'Ada L.' where id = 1", branch="t")
    assert ["select plan from users where id = 3" in line for line in kept_in_file(folder)] == [
        True
    ]
    users.sql("update users set plan = 'team' where id = 3")  # under what t read, then wrote on
    refused = run_cli(folder, "rebase", "t", check=False)  # (another process sees it)
    assert refused.returncode != 0 and "1 of the reads it kept changed" in refused.stderr
    users.sql("select count(*) from users", branch="t")
    users.close()  # (what waits is written as the database closes)
    assert len(kept_in_file(folder)) == 2


def test_over_mcp_in_safe_mode(users, folder):
    from mcp_lines import Server

    users.close()
    server = Server(folder)
    try:
        server.initialize()
        names = {t["name"] for t in server.result("tools/list")["tools"]}
        assert "check_reads" in names  # (listed in safe mode, as the spec's table has it)
        fork = {"name": "mine", "meta": {"check_reads": True}}
        assert server.call("fork", fork)["isError"] is False
        read = {"sql": "select name from users where id = 2", "branch": "mine"}
        assert server.call("sql", read)["isError"] is False
        with chronos_lite.open(folder) as db:
            db.sql("update users set name = 'Bo B.' where id = 2")
        result = server.call("check_reads", {"branch": "mine"})
        assert result["isError"] is False
        assert result["structuredContent"]["changed"][0]["why"] == "1 row, different now"
        assert server.close() == 0
    finally:
        server.kill()
