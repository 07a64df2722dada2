"""Declared readers: MARK READER, SHOW READERS, DROP READER; who may mark and drop them (the
owner and admin agents; not safe mode nor an agent that only reads); diff with readers naming
them beside SQLite's views, triggers and indexes, with the changed columns no declared reader
covers; and the merge policy rule critical holding a merge that changes a column a critical
reader reads, with its reason in reviews and in check_merge_policy."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers import file_dump
from mcp_lines import Server, tool_error

import chronos_lite
from chronos_lite import Caller, ChronosError

BOT = ["read", "fork", "write_own", "write_main", "merge_own"]


@pytest.fixture
def shop(db):
    db.sql("create table users(id integer primary key, name text, email text, plan text)")
    db.sql("create index users_email on users(email)")
    db.sql("insert into users values (1, 'Ada', 'ada@x.org', 'free'), (2, 'Bo', 'bo@x.org', 'pro')")
    db.call("agent", action="create", name="bot", rights=BOT)
    db.call("agent", action="create", name="viewer", rights=["read"])
    db.call("agent", action="create", name="boss", rights=["admin"])
    return db


def show(db, caller=None) -> list[list]:
    return db.call("sql", caller, sql="SHOW READERS").data["results"][0]["rows"]


def test_mark_show_and_drop(shop):
    reply = shop.call("sql", sql="MARK READER billing READS (users.email, USERS.Plan) CRITICAL")
    assert reply.text == "marked critical reader billing: reads users.email, users.plan"
    assert shop.call("sql", sql="mark reader crm reads (users.name, users.name);").text == (
        "marked reader crm: reads users.name"
    )
    rows = show(shop)
    assert [r[:3] for r in rows] == [
        ["billing", "users.email, users.plan", "yes"],
        ["crm", "users.name", "no"],
    ]
    data = shop.call("readers").data["readers"]
    assert [(r["name"], r["reads"], r["critical"]) for r in data] == [
        ("billing", ["users.email", "users.plan"], True),
        ("crm", ["users.name"], False),
    ]
    assert shop.call("sql", sql="DROP READER CRM").text == "dropped reader crm"
    assert [r[0] for r in show(shop)] == ["billing"]
    shop.call("drop_reader", name="billing")
    text = shop.call("readers").text
    assert text.endswith("(no readers: MARK READER <name> READS (table.column, ...) declares one)")


@pytest.mark.parametrize(
    ("sql", "code", "message"),
    [
        ("MARK READER x READS (userz.email)", "22023", "no table 'userz' on main (its tables: "),
        (
            "MARK READER x READS (users.mail)",
            "22023",
            "users has no column 'mail' (its columns: id, name, email, plan)",
        ),
        (
            "MARK READER billing READS (users.name)",
            "55006",
            "reader billing is already marked (it reads users.email): DROP READER billing first",
        ),
        ("DROP READER nobody", "P0002", "no reader nobody (readers: billing; SHOW READERS"),
        (
            "MARK READER x READS users.email",
            "22023",
            "expected ( and the columns it reads, (table.column, ...), not users; its form: "
            "MARK READER <name> READS (<table.column>, ...) [CRITICAL]",
        ),
        ("MARK READER x READS (users)", "22023", "expected . and a column after users"),
        ("MARK READER x READS (users.name) CRITICAL now", "22023", "unexpected, not now"),
        ("MARK READER x READS (users.name) IMPORTANT", "22023", "expected CRITICAL, not IMPORTANT"),
        ("MARK READER -x READS (users.name)", "22023", "a reader's name"),
    ],
)
def test_bad_statements_say_how_and_change_nothing(shop, folder, sql, code, message):
    shop.sql("MARK READER billing READS (users.email)")
    before = file_dump(folder)
    with pytest.raises(ChronosError) as info:
        shop.call("sql", sql=sql)
    assert message in str(info.value), str(info.value)
    assert info.value.code == code
    assert file_dump(folder) == before


def test_owner_and_admin_mark_and_drop_an_agent_that_reads_only_lists(shop):
    viewer, bot, boss = (shop.as_agent(n) for n in ("viewer", "bot", "boss"))
    shop.sql("MARK READER billing READS (users.email) CRITICAL")
    before = show(shop)  # (the file changes: the audit keeps each refusal)
    for caller in (viewer, bot):
        for sql in ("MARK READER r READS (users.name)", "DROP READER billing"):
            with pytest.raises(ChronosError, match="that needs admin") as info:
                shop.call("sql", caller, sql=sql)
            assert info.value.code == "42501"
        with pytest.raises(ChronosError, match="that needs admin"):
            shop.call("mark_reader", caller, name="r", reads=["users.name"])
    assert show(shop) == before
    assert [r[0] for r in show(shop, viewer)] == ["billing"]
    assert shop.call("readers", viewer).data["readers"][0]["name"] == "billing"
    shop.call("sql", boss, sql="MARK READER r READS (users.name)")
    shop.call("sql", boss, sql="DROP READER billing")
    assert [r[0] for r in show(shop)] == ["r"]


def test_safe_mode_reads_readers_and_changes_none(shop, folder):
    shop.sql("MARK READER billing READS (users.email) CRITICAL")
    shop.close()
    before = file_dump(folder)
    s = Server(folder)
    try:
        s.initialize()
        names = [t["name"] for t in s.result("tools/list")["tools"]]
        assert not {"readers", "mark_reader", "drop_reader"} & set(names)  # (the spec's tools)
        listed = s.call("sql", {"sql": "SHOW READERS"})
        assert listed["isError"] is False
        assert "billing" in listed["content"][0]["text"]
        for sql in ("MARK READER r READS (users.name) CRITICAL", "DROP READER billing"):
            assert tool_error(s.call("sql", {"sql": sql})).startswith("safe mode:")
        assert "unknown tool 'mark_reader'" in tool_error(
            s.call("mark_reader", {"name": "r", "reads": ["users.name"]})
        )
    finally:
        s.kill()
    assert file_dump(folder) == before


def test_a_safe_caller_in_process_gets_the_sql_to_run(shop, folder):
    safe = Caller("safe", "safe")
    before = file_dump(folder)
    with pytest.raises(ChronosError) as info:
        shop.call("mark_reader", safe, name="r", reads=["users.email"], critical=True)
    assert str(info.value).endswith("MARK READER r READS (users.email) CRITICAL;")
    with pytest.raises(ChronosError, match="DROP READER r;"):
        shop.call("drop_reader", safe, name="r")
    assert file_dump(folder) == before


def test_diff_readers_names_declared_readers_and_what_none_covers(shop):
    shop.sql("create view mailing as select name, email from users")
    shop.sql("MARK READER billing READS (users.email, users.plan) CRITICAL")
    shop.sql("MARK READER crm READS (users.name)")
    shop.fork("t1")
    shop.sql("update users set email = 'ada@y.org', plan = 'pro' where id = 1", branch="t1")
    reply = shop.call("diff", branch="t1", readers=True)
    assert reply.text == (
        "2 changed columns on t1; read by:\n"
        " table | column | reader      | kind\n"
        "-------+--------+-------------+-----------------\n"
        " users | email  | users_email | index\n"
        " users | email  | mailing     | view\n"
        " users | email  | billing     | critical reader\n"
        " users | plan   | billing     | critical reader\n"
        "(4 rows)"
    )
    assert reply.data["uncovered"] == []
    assert reply.data["readers"][2] == {
        "table": "users",
        "column": "email",
        "reader": "billing",
        "kind": "critical reader",
    }
    shop.fork("t2")
    shop.sql("insert into users values (3, 'Cy', 'cy@x.org', 'free')", branch="t2")
    reply = shop.call("sql", sql="DIFF t2 READERS")
    text = reply.text
    assert text.startswith("4 changed columns on t2; read by:\n")
    assert " users | name   | crm         | reader\n" in text
    assert text.endswith(
        "\nno declared reader reads users.id (MARK READER name READS (table.column, ...) "
        "declares one)"
    )
    assert reply.data["results"][0]["data"]["uncovered"] == ["users.id"]


def test_diff_readers_without_any_reader_says_so(shop):
    shop.sql("drop index users_email")
    shop.fork("t1")
    shop.sql("update users set plan = 'x' where id = 1", branch="t1")
    reply = shop.call("diff", branch="t1", readers=True)
    assert reply.text == (
        "1 changed column on t1; nothing in the database reads them (no view, trigger or "
        "index)\nno declared reader reads users.plan (MARK READER name READS (table.column, "
        "...) declares one)"
    )
    assert reply.data == {"branch": "t1", "readers": [], "uncovered": ["users.plan"]}


def bot_world(db, name: str, sql: str) -> None:
    bot = db.as_agent("bot")
    db.call("fork", bot, name=name)
    db.call("sql", bot, branch=name, sql=sql)


def test_the_critical_rule_holds_a_merge_of_a_critical_readers_column(shop, folder):
    shop.sql("MARK READER billing READS (users.plan) CRITICAL")
    shop.sql("MARK READER crm READS (users.name)")
    shop.call("set_merge_policy", name="small", rules={}, agents=["bot"])
    bot = shop.as_agent("bot")
    bot_world(shop, "names", "update users set name = 'Ada L.' where id = 1")  # (crm: not critical)
    assert shop.call("merge", bot, branch="names").text.startswith("merged ")
    bot_world(shop, "plans", "update users set plan = 'team' where id = 2")
    reason = "it changes users.plan, which critical reader billing reads (critical is false)"
    tried = shop.call("check_merge_policy", branch="plans", name="small")
    assert tried.text == (
        f"plans's merge would wait for a person under merge policy small: {reason}"
    )
    assert tried.data["reasons"] == [reason]
    allowed = shop.call(
        "check_merge_policy", branch="plans", name="small", rules={"critical": True}
    )
    assert allowed.text == "plans's merge would go through on its own under merge policy small"
    with pytest.raises(ChronosError) as info:
        shop.call("merge", bot, branch="plans")
    assert f"(merge policy small: {reason})" in str(info.value)
    assert info.value.code == "42501"
    assert shop.get("users", 2)["plan"] == "pro"  # (nothing of it landed)
    review = shop.call("reviews").data["reviews"][0]
    assert (review["world"], review["reasons"]) == ("plans", [reason])
    assert reason in shop.call("sql", sql="SHOW REVIEWS").text
    shop.call("merge", branch="plans")  # (a person approves)
    assert shop.get("users", 2)["plan"] == "team"


def test_critical_true_lets_it_through_and_a_dropped_reader_holds_nothing(shop):
    shop.sql("MARK READER billing READS (users.plan) CRITICAL")
    shop.sql("CREATE MERGE POLICY small WITH (critical = true)")
    shop.sql("ALTER AGENT bot SET (policy = small)")
    bot = shop.as_agent("bot")
    bot_world(shop, "p1", "update users set plan = 'team' where id = 2")
    assert shop.call("merge", bot, branch="p1").text.startswith("merged ")
    shop.sql("ALTER MERGE POLICY small SET (critical = false)")
    bot_world(shop, "p2", "update users set plan = 'free' where id = 2")
    assert shop.call("check_merge_policy", branch="p2", name="small").data["held"] is True
    shop.sql("DROP READER billing")
    assert shop.call("check_merge_policy", branch="p2", name="small").data["held"] is False
    assert shop.call("merge", bot, branch="p2").text.startswith("merged ")


def test_dropping_a_critical_column_is_held(shop):
    shop.sql("MARK READER billing READS (users.plan) CRITICAL")
    shop.sql("CREATE MERGE POLICY small WITH (schema = true)")
    shop.sql("ALTER AGENT bot SET (policy = small)")
    bot_world(shop, "s1", "alter table users drop column plan")
    reasons = shop.call("check_merge_policy", branch="s1", name="small").data["reasons"]
    assert "it changes users.plan, which critical reader billing reads (critical is false)" in (
        reasons
    )


def test_a_file_made_before_readers_gets_their_table(folder):
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, email text)")
    script = textwrap.dedent(
        f"""
        import sqlite3
        conn = sqlite3.connect({str(folder / "chronos.db")!r})
        conn.execute("drop table _chronos_readers")
        conn.commit()
        conn.close()
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    with chronos_lite.open(folder) as db:
        db.sql("MARK READER billing READS (users.email) CRITICAL")
        assert db.call("readers").data["readers"][0]["critical"] is True


def test_a_column_gone_since_the_reader_was_marked_is_said(shop):
    shop.sql("MARK READER billing READS (users.email, users.plan) CRITICAL")
    shop.sql("alter table users rename column plan to tier")
    reply = shop.call("readers")
    assert reply.table[1][0][1] == "users.email, users.plan (gone)"
    assert reply.data["readers"][0]["gone"] == ["users.plan"]
    assert "DROP READER and MARK READER it again" in reply.text
    shop.sql("DROP READER billing")
    shop.sql("MARK READER billing READS (users.email, users.tier) CRITICAL")
    assert shop.call("readers").data["readers"][0]["gone"] == []


def test_sql_reads_the_readers_table_but_only_the_statements_change_it(shop):
    shop.sql("MARK READER billing READS (users.email) CRITICAL")
    viewer = shop.as_agent("viewer")
    rows = shop.call("sql", viewer, sql="select name, critical from _chronos_readers").data
    assert rows["results"][0]["rows"] == [["billing", 1]]
    for caller in (None, viewer, shop.as_agent("boss")):
        for sql in (
            "update _chronos_readers set critical = 0",
            "delete from _chronos_readers",
            "insert into _chronos_readers values ('x', '[\"users.name\"]', 1, 0)",
        ):
            with pytest.raises(ChronosError, match="chronos' own tables") as info:
                shop.call("sql", caller, sql=sql)
            assert info.value.code == "42501"
    assert show(shop)[0][:3] == ["billing", "users.email", "yes"]


def test_merge_preview_ends_with_what_reads_the_changed_columns(shop):
    shop.fork("t")
    shop.sql("update users set email = 'ada@y.org', name = 'Ada L.' where id = 1", branch="t")
    plain = shop.call("merge_preview", branch="t")
    said = plain.text.split("What reads the changed columns: ")[1]
    assert said.startswith("2 changed columns on t; read by:")
    assert "users | email  | users_email | index" in said
    assert "no declared reader" not in said  # (none declared: nothing to cover)
    assert plain.data["readers"]["uncovered"] == ["users.name", "users.email"]
    shop.sql("MARK READER billing READS (users.email) CRITICAL")
    marked = shop.call("merge_preview", branch="t")
    assert "users | email  | billing     | critical reader" in marked.text
    assert "no declared reader reads users.name (MARK READER" in marked.text
    assert marked.text.index("What reads") < marked.text.index("t is at version")
    later = shop.call("merge_preview", branch="t", limit=1, offset=1)  # (the first page's)
    assert "What reads" not in later.text and "readers" not in later.data


def test_the_changed_columns_sql_finds_are_those_the_changes_show(shop):
    from chronos_lite.merge import diff as merge_diff

    shop.sql("create table tags(id integer primary key, label text, note text)")
    shop.sql("insert into tags values (1, 'a', null), (2, 'b', 'x')")
    shop.fork("t")
    shop.sql(
        "update users set plan = 'pro' where id = 1; update users set name = 'Bo' where id = 2; "
        "update users set email = null where id = 2; update tags set note = 'y' where id = 1; "
        "update tags set label = 'B' where id = 2; update tags set label = 'b' where id = 2",
        branch="t",
    )
    db = shop.database
    d = merge_diff.diff(db, db.world("t"))
    in_python = merge_diff.Listed(d.changes).changed_columns()
    assert sorted(d.changed_columns()) == sorted(in_python)
    assert d.changed_columns() == [("tags", "note"), ("users", "email"), ("users", "plan")]
    shop.sql("insert into tags values (3, 'c', null)", branch="t")
    found = merge_diff.diff(db, db.world("t")).changed_columns()
    assert found == [("tags", "id"), ("tags", "label"), ("tags", "note"), *found[3:]]
