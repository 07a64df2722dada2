"""The guard in process: SQLite's authorizer on what each user statement prepares.

The cases the MCP tests can't reach cheaply: callers of different rights in one process (SQLite's
statement cache must not carry a statement authorized for one to the other), what the owner may
and may not do to chronos' own objects, and statements SQLite prepares once and runs again.
"""

from __future__ import annotations

import pytest

from chronos_lite.errors import ChronosError
from chronos_lite.operations.registry import Caller

AGENT = Caller(name="bot", mode="safe")


def sql(db, text: str, caller: Caller | None = None, **kw) -> str:
    return db.call("sql", caller=caller, sql=text, **kw).text


def test_a_statement_the_owner_ran_is_not_reused_for_an_agent(shop):
    assert sql(shop, "delete from users where id = 99") == "DELETE 0"  # prepared, cached
    with pytest.raises(ChronosError, match="safe mode: changes need") as err:
        sql(shop, "delete from users where id = 99", AGENT)
    assert err.value.code == "42501"
    shop.call("fork", caller=AGENT, name="mine")
    for _ in range(3):  # the same statement again and again: cached, still allowed there
        assert sql(shop, "insert into users(name) values ('x')", AGENT, branch="mine") == (
            "INSERT 0 1"
        )
    assert shop.query("select count(*) as n from users") == [{"n": 1}]


def test_the_owner_cant_take_or_touch_chronos_names(shop):
    before = shop.query("select name from sqlite_master order by name")
    for text in [
        "create table _chronos_mine(a)",
        "create table main._CHRONOS_mine(a)",
        "create index _chronos_i on users(name)",
        "create index i on _chronos_events(kind)",
        "create view _chronos_v as select 1",
        "create trigger _chronos_t after insert on users begin select 1; end",
        "create trigger t after insert on _chronos_events begin select 1; end",
        "create temp trigger _chronos_t after insert on users begin select 1; end",
        "alter table users rename to _chronos_users",
        "alter table users rename to _CHRONOS_Users",
        "drop table _chronos_events",
        "drop trigger _chronos_t1_ai",
        "delete from _chronos_events",
        "update _chronos_worlds set owner = 'me'",
    ]:
        with pytest.raises(ChronosError, match="chronos' own tables") as err:
            sql(shop, text)
        assert err.value.code == "42501", text
    assert shop.query("select name from sqlite_master order by name") == before
    # dropping a table takes its history triggers with it
    sql(shop, "create table scratch(a)")
    sql(shop, "drop table scratch")
    assert "scratch" not in shop.database.tables()
    # chronos' own tables read fine
    assert shop.query("select count(*) > 0 as seen from _chronos_events") == [{"seen": 1}]


def test_vacuum_runs_alone_for_the_owner_and_never_for_an_agent(shop):
    for _ in range(2):  # (the second from SQLite's statement cache)
        assert sql(shop, "vacuum") == "VACUUM"
    shop.call("fork", caller=AGENT, name="mine")
    for where in ({}, {"branch": "mine"}):
        for _ in range(2):
            with pytest.raises(ChronosError, match=r"settings in SQL \(VACUUM\)"):
                sql(shop, "vacuum", AGENT, **where)
    with pytest.raises(ChronosError, match="VACUUM runs outside any transaction"):
        sql(shop, "select 1; vacuum")


def test_an_upsert_clause_cant_comment_out_the_rest_of_its_trigger(shop):
    shop.fork("w")
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x.org')", branch="w")
    text = (
        "insert into users(id, name, email) values (1, 'A', 'ada@x.org') "
        "on conflict(id) do update set name = 'all' --"
    )
    assert sql(shop, text, branch="w") == "INSERT 0 1"
    rows = shop.query("select id, name from users order by id", branch="w")
    assert rows == [{"id": 1, "name": "all"}, {"id": 2, "name": "Bo"}]  # one row, not both


def _refused_as_the_owners_only(db, text: str, caller: Caller, **kw) -> None:
    with pytest.raises(ChronosError, match="the database's own user's only") as err:
        sql(db, text, caller, **kw)
    assert err.value.code == "42501", text


def test_no_agent_reaches_past_the_guard_to_read_the_token_hashes(shop, tmp_path):
    shop.call("agent", action="create", name="boss", rights=["admin"])
    boss = shop.as_agent("boss")
    copy, owners_copy = tmp_path / "copy.db", tmp_path / "owners.db"
    # the owner may (and prepares the statements first: SQLite's cache must not carry them)
    assert sql(shop, f"vacuum into '{owners_copy}'") == "VACUUM"
    assert sql(shop, f"attach '{owners_copy}' as x") == "ATTACH"
    sql(shop, "detach x")
    for text in (
        f"vacuum into '{copy}'",
        f"attach '{owners_copy}' as x",
        "attach ':memory:' as x",
        "pragma writable_schema = 1",
        "pragma main.writable_schema = on",
    ):
        for _ in range(2):  # (the second from SQLite's statement cache)
            _refused_as_the_owners_only(shop, text, boss)
    assert not copy.exists()
    assert sql(shop, "vacuum", boss) == "VACUUM"  # a plain VACUUM stays an admin's
    shop.fork("w")
    _refused_as_the_owners_only(shop, f"attach '{owners_copy}' as x", boss, branch="w")
    _refused_as_the_owners_only(shop, "pragma writable_schema = 1", boss, branch="w")
    assert [r[0] for r in shop.database.main.conn.execute("pragma database_list")] == [
        0
    ]  # main alone


def test_an_apps_trigger_chronos_fires_reads_no_hash_and_writes_none_of_chronos_tables(shop):
    shop.call("agent", action="create", name="boss", rights=["admin"])
    shop.call("agent", action="create", name="dev", rights=["read", "write_main"])
    boss, dev = shop.as_agent("boss"), shop.as_agent("dev")
    sql(shop, "create table leak(x)", boss)
    sql(
        shop,
        "create trigger spy after insert on users begin "
        "insert into leak select hex(hash) from _chronos_agents; end",
        boss,
    )
    sql(
        shop,
        "create trigger rise after update on users begin "
        "update _chronos_agents set rights = 'admin' where name = 'dev'; end",
        dev,
    )
    for caller in (boss, None):  # put writes main by chronos' own SQL: the triggers fire
        with pytest.raises(ChronosError, match=r"spy tried to read _chronos_agents\.hash") as err:
            shop.call("put", caller=caller, table="users", id="7", record={"name": "x"})
        assert err.value.code == "42501"
    with pytest.raises(ChronosError, match="rise tried to write chronos' own table _chronos_a"):
        shop.call("put", table="users", id="1", record={"name": "Ada B"})
    shop.fork("w")  # a world's copy of the app's trigger: the same
    with pytest.raises(ChronosError, match=r"tried to read _chronos_agents\.hash"):
        shop.call("put", table="users", id="8", record={"name": "y"}, branch="w")
    assert shop.query("select * from leak") == []
    assert shop.query("select name from users") == [{"name": "Ada"}]
    assert shop.call("agent", action="list").data["agents"][1]["rights"] == ["read", "write_main"]
