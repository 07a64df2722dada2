"""Merge checks: a query every merge's result must find nothing in, run inside the merge's
transaction on the merged result; rows found (or a check that doesn't finish in its timeout)
refuse the merge for everyone, and nothing of it stays. Set and dropped by SQL and the tools;
in safe mode the setters change nothing and reply with the SQL for a person."""

from __future__ import annotations

import pytest
from helpers import file_dump
from mcp_lines import Server, tool_error

from chronos_lite import ChronosError

KEEP = "select id from lists where id not in (select list from leads)"


@pytest.fixture
def crm(db):
    db.sql("create table lists(id integer primary key, name text)")
    db.sql("create table leads(id integer primary key, list int, name text)")
    db.sql("create table notes(id integer primary key, body text)")
    db.sql("insert into lists values (1, 'a'), (2, 'b')")
    db.sql("insert into leads values (1, 1, 'x'), (2, 2, 'y'), (3, 1, 'z')")
    db.sql(f"CREATE MERGE CHECK keep ON TABLES (leads, lists) AS {KEEP}")
    return db


def test_two_changes_fine_alone_are_refused_together(crm, folder):
    crm.fork("a")
    crm.sql("delete from leads where id = 1", branch="a")
    crm.fork("b")
    crm.sql("delete from leads where id = 3", branch="b")
    crm.call("merge", branch="a")
    before = file_dump(folder)
    with pytest.raises(ChronosError) as info:
        crm.call("merge", branch="b")
    assert (info.value.code, str(info.value)) == (
        "23514",
        "merging b breaks merge check keep, which finds (id = 1); nothing was merged",
    )
    assert file_dump(folder) == before  # nothing half-merged; b is still open
    assert [w.name for w in crm.database.worlds()] == ["b"]


def test_a_merge_that_touches_none_of_its_tables_doesnt_run_it(crm):
    crm.sql("delete from leads where id = 2")  # (main breaks it itself: an app may)
    crm.fork("n")
    crm.sql("insert into notes values (1, 'hi')", branch="n")
    assert crm.call("merge", branch="n").text.startswith("merged 1 change")
    crm.fork("m")
    crm.sql("insert into leads values (9, 1, 'q')", branch="m")
    with pytest.raises(ChronosError, match="which finds \\(id = 2\\)"):
        crm.call("merge", branch="m")


def test_a_check_without_tables_runs_for_every_merge_and_names_many_rows(crm):
    crm.sql(
        "CREATE OR REPLACE MERGE CHECK short AS select id, body from notes where length(body) < 3"
    )
    crm.fork("n")
    crm.sql(
        "insert into notes values (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'ok!')", branch="n"
    )
    with pytest.raises(ChronosError) as info:
        crm.call("merge", branch="n")
    assert (
        "breaks merge check short, which finds (id = 1, body = 'a'), (id = 2, body = 'b'), "
        "(id = 3, body = 'c') and 1 more; nothing was merged" in str(info.value)
    )


def test_a_check_that_doesnt_finish_refuses_the_merge(crm):
    slow = (
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < "
        "(select 5000000 * (count(*) > 2) + 1 from lists)) select i from n where i < 0"
    )
    crm.call("set_merge_check", name="slow", query=slow, timeout_ms=200)
    crm.fork("c")
    crm.sql("insert into lists values (3, 'c')", branch="c")
    crm.sql("insert into leads values (8, 3, 'w')", branch="c")
    with pytest.raises(ChronosError) as info:
        crm.call("merge", branch="c")
    assert info.value.code == "57014"
    assert "merge check slow's timeout_ms of 200 ms" in str(info.value)
    assert crm.query("select count(*) as n from lists") == [{"n": 2}]
    crm.sql("DROP MERGE CHECK slow")
    assert crm.call("merge", branch="c").text.startswith("merged 2 changes")


def test_a_merge_into_a_world_is_checked_on_that_world(crm):
    crm.fork("parent")
    crm.call("fork", name="child", **{"from": "parent"})
    crm.sql("delete from leads where id = 2", branch="child")
    with pytest.raises(ChronosError, match="breaks merge check keep, which finds \\(id = 2\\)"):
        crm.call("merge", branch="child")
    assert crm.query("select count(*) as n from leads", branch="parent") == [{"n": 3}]


@pytest.mark.parametrize(
    "query, words",
    [
        ("delete from leads", "may only read"),
        ("pragma user_version = 3", "may only read"),
        ("select 1; select 2", "one SELECT, not 2 statements"),
        ("select * from nope", "no such table: nope"),
    ],
)
def test_a_check_that_isnt_one_read_is_refused_and_nothing_changes(crm, folder, query, words):
    before = file_dump(folder)
    with pytest.raises(ChronosError, match=words):
        crm.call("set_merge_check", name="bad", query=query)
    assert file_dump(folder) == before


def test_listing_replacing_and_dropping(crm):
    shown = crm.call("merge_checks")
    assert shown.data["checks"][0]["tables"] == ["leads", "lists"]
    assert shown.data["checks"][0]["query"] == KEEP
    again = crm.call("set_merge_check", name="keep", query="select 1 where 0")
    assert again.text.startswith("replaced merge check keep (every merge)")
    assert crm.sql("SHOW MERGE CHECKS").results[0].rows[0][1] == "(every merge)"
    crm.call("drop_merge_check", name="keep")
    with pytest.raises(ChronosError, match="no merge check keep"):
        crm.call("drop_merge_check", name="keep")
    assert "(no merge checks" in crm.call("merge_checks").text


def test_an_agent_sets_checks_only_as_admin(crm):
    crm.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
    crm.call("agent", action="create", name="boss", rights=["admin"])
    bot, boss = crm.as_agent("bot"), crm.as_agent("boss")
    with pytest.raises(ChronosError, match="agent bot can't run set_merge_check"):
        crm.call("set_merge_check", caller=bot, name="x", query="select 1 where 0")
    with pytest.raises(ChronosError, match="that needs admin"):
        crm.call("sql", caller=bot, sql="DROP MERGE CHECK keep")
    assert crm.call("merge_checks", caller=bot).data["checks"]
    crm.call("set_merge_check", caller=boss, name="x", query="select 1 where 0")
    assert [c["name"] for c in crm.call("merge_checks").data["checks"]] == ["keep", "x"]


def test_safe_mode_drafts_the_sql_for_a_person(crm, folder):
    crm.close()
    before = file_dump(folder)
    s = Server(folder)
    try:
        s.initialize()
        names = [t["name"] for t in s.result("tools/list")["tools"]]
        assert {"merge_checks", "set_merge_check", "drop_merge_check"} <= set(names)
        args = {"name": "k2", "query": "select id from leads where name = ''", "tables": ["Leads"]}
        text = tool_error(s.call("set_merge_check", args))
        assert text.endswith(
            "a person runs this SQL (in `chronos "
            f"{folder}`, the shell, or with its sql): CREATE OR REPLACE MERGE CHECK k2 ON TABLES "
            "(\"Leads\") AS select id from leads where name = '';"
        ), text
        assert "DROP MERGE CHECK keep;" in tool_error(s.call("drop_merge_check", {"name": "keep"}))
        assert s.call("merge_checks", {})["isError"] is False
        refused = tool_error(s.call("sql", {"sql": f"CREATE MERGE CHECK k3 AS {KEEP}"}))
        assert refused.startswith("safe mode:")
    finally:
        s.kill()
    assert file_dump(folder) == before
