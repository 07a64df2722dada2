"""`chronos mcp` through the official MCP SDK client over stdio: scenarios an agent runs.

Each test is one scenario with its own server process (the SDK client starts it). What the
server did is checked from this process too, through the Python API on the same folder.
Raw protocol details (framing, errors, versions, bad arguments) are in test_mcp_protocol.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import anyio
import jsonschema
import pytest
from helpers import CHRONOS, ROOT, run_cli
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

import chronos_lite
from chronos_lite import REGISTRY

pytestmark = pytest.mark.anyio

SCHEMAS = ROOT / "schemas"
ALL_TOOLS = {op.name for op in REGISTRY if op.mcp}  # (config is the CLI's only)
SAFE_TOOLS = ALL_TOOLS - {"merge", "restore", "undo_merge"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def connect(folder: Path, *flags: str, mode: str = "auto") -> Client:
    params = StdioServerParameters(command=CHRONOS, args=["mcp", str(folder), *flags])
    return Client(params, mode=mode)


async def ok(client: Client, name: str, args: dict):
    """A tool call that must succeed."""
    result = await client.call_tool(name, args)
    assert not result.is_error, f"{name} {args}: {result.content[0].text}"
    return result


async def refused(client: Client, name: str, args: dict, *words: str):
    """A tool call that must fail with isError and a message holding each of ``words``."""
    result = await client.call_tool(name, args)
    text = result.content[0].text
    assert result.is_error, f"{name} {args} should have failed: {text}"
    for word in words:
        assert word in text, f"{name} {args}: {word!r} not in {text!r}"
    return result


def main_rows(db) -> list[dict]:
    return db.query("select * from users order by id")


def branch_names(db) -> list[str]:
    return sorted(w.name for w in db.database.worlds())


# --- protocol versions -----------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_negotiated_version_and_same_tools(shop, folder, mode, version):
    async with connect(folder, mode=mode) as c:
        assert c.protocol_version == version
        assert c.session.protocol_version == version
        assert c.server_info is not None and c.server_info.name == "chronos"
        assert c.server_info.version == chronos_lite.__version__
        assert c.server_capabilities.tools is not None
        assert c.server_capabilities.resources is None
        assert c.server_capabilities.prompts is None
        assert "chronos" in c.instructions and f"chronos {folder} merge" in c.instructions
        tools = (await c.list_tools()).tools
        assert {t.name for t in tools} == SAFE_TOOLS
        # the same results whichever revision carries them
        r = await ok(c, "get", {"table": "users", "id": "1"})
        assert r.structured_content["row"] == {"id": 1, "name": "Ada", "email": "ada@x.org"}


# --- the spec's example session --------------------------------------------------------------


async def test_example_session(shop, folder):
    async with connect(folder) as c:
        r = await ok(c, "fork", {"name": "task-1", "meta": {"task": "fix names"}})
        text = r.content[0].text
        assert text.startswith("created branch task-1 (world id ")
        assert text.endswith(') from main; pass branch="task-1" to work on it')
        assert r.structured_content["meta"] == {"task": "fix names"}

        await ok(
            c,
            "put",
            {"table": "users", "id": "1", "record": {"name": "Ada L."}, "branch": "task-1"},
        )
        r = await ok(c, "diff", {"branch": "task-1"})
        lines = r.content[0].text.splitlines()
        assert lines[0].startswith("1 change on task-1")
        # put replaces the whole row: the row's other fields show in the line after the name
        assert lines[1].startswith('~ users/1  name: "Ada" -> "Ada L."'), lines

        r = await ok(c, "merge_preview", {"branch": "task-1"})
        rows = [x for x in r.structured_content["rows"] if x["id"] == "1"]
        assert [(x["table"], x["outcome"]) for x in rows] == [("users", "apply")]
        assert re.search(r"^ users \| 1 +\| apply +\|", r.content[0].text, re.M)

        # the agent can't merge: it reports task-1 and a person merges
        await refused(c, "merge", {"branch": "task-1"}, "safe mode")
        assert shop.get("users", 1)["name"] == "Ada"

    out = run_cli(folder, "merge", "task-1")
    assert "merged 1 change from task-1 into main" in out.stdout
    assert shop.get("users", 1)["name"] == "Ada L."
    assert branch_names(shop) == []


# --- safe mode -------------------------------------------------------------------------------


async def test_safe_mode_lists_all_but_merge_and_refuses_merge(shop, folder):
    shop.fork("theirs")
    shop.put("users", 1, {"name": "Ada T.", "email": "ada@x.org"}, branch="theirs")
    async with connect(folder) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == SAFE_TOOLS
        assert "merge" in ALL_TOOLS
        r = await refused(c, "merge", {"branch": "theirs"}, "safe mode", "merge")
        assert r.structured_content["code"] == "42501"
        assert f"chronos {folder} merge <branch>" in r.content[0].text
    assert main_rows(shop) == [{"id": 1, "name": "Ada", "email": "ada@x.org"}]
    assert branch_names(shop) == ["theirs"]


async def test_safe_mode_writes_need_a_world_of_this_session(shop, folder):
    shop.fork("outside", meta={"by": "a person"})
    before_main = main_rows(shop)
    before_outside = shop.query("select * from users order by id", branch="outside")
    async with connect(folder) as c:
        # main: every kind of write is refused
        await refused(
            c, "put", {"table": "users", "id": "1", "record": {"name": "X"}}, "safe mode", "fork"
        )
        await refused(
            c,
            "put",
            {"table": "users", "id": "1", "record": {"name": "X"}, "branch": "main"},
            "safe mode",
            "'main' isn't one",
        )
        await refused(c, "delete", {"table": "users", "id": "1"}, "safe mode")
        await refused(c, "set_meta", {"branch": "main", "meta": {"a": 1}}, "safe mode")
        # a world forked outside this session: refused too
        for name, args in [
            ("put", {"table": "users", "id": "2", "record": {"name": "Bo"}}),
            ("put", {"table": "users", "id": "1", "record": {"name": "X"}}),
            ("delete", {"table": "users", "id": "1"}),
            ("set_meta", {"meta": {"by": "agent"}}),
            ("rebase", {}),
            ("discard", {}),
            ("sql", {"sql": "update users set name = 'X'"}),
        ]:
            await refused(c, name, {**args, "branch": "outside"}, "safe mode", "'outside'")
        # sql: writes on main refused, reads fine, settings refused
        for sql in [
            "update users set name = 'X'",
            "insert into users(name) values ('Bo')",
            "delete from users",
            "create table t(a)",
            "drop table users",
            "select 1; delete from users",
            "begin; update users set name = 'X'; commit",
            "with s as (select 1) update users set name = 'X'",
        ]:
            await refused(c, "sql", {"sql": sql}, "safe mode", "fork")
            await refused(c, "sql", {"sql": sql, "branch": "main"}, "safe mode")
        r = await ok(c, "sql", {"sql": "select name from users order by id"})
        assert r.content[0].text == " name\n------\n Ada\n(1 row)"
        r = await ok(c, "sql", {"sql": "select name from users", "branch": "outside"})
        assert "Ada" in r.content[0].text
        for sql in [
            "PRAGMA foreign_keys = off",
            "pragma journal_mode = delete",
            "select 1; PRAGMA user_version = 7",
            "/* hi */ pragma foreign_keys = off",
            "ATTACH ':memory:' AS x",
            "VACUUM",
        ]:
            await refused(c, "sql", {"sql": sql}, "safe mode", "settings")
        # reads of every kind work on both
        await ok(c, "describe", {"branch": "outside"})
        await ok(c, "get", {"table": "users", "id": "1", "branch": "outside"})
        await ok(c, "diff", {"branch": "outside"})
        await ok(c, "merge_preview", {"branch": "outside"})
        await ok(c, "branches", {})
    assert main_rows(shop) == before_main
    assert shop.query("select * from users order by id", branch="outside") == before_outside
    assert [(w.name, w.meta) for w in shop.database.worlds()] == [("outside", {"by": "a person"})]
    assert shop.query("pragma user_version") == [{"user_version": 0}]


async def test_safe_mode_own_world_can_be_changed(shop, folder):
    async with connect(folder) as c:
        r = await ok(c, "fork", {"name": "mine", "meta": {"task": "t"}})
        assert r.structured_content["owner"].startswith("safe:")  # safe mode, named per session
        await ok(
            c,
            "put",
            {"table": "users", "id": "2", "record": {"name": "Bo"}, "branch": "mine"},
        )
        await ok(c, "delete", {"table": "users", "id": "2", "branch": "mine"})
        r = await ok(
            c,
            "sql",
            {
                "sql": "insert into users(name, email) values ($1, $2); "
                "update users set name = 'Ada L.' where id = 1",
                "params": ["Cy", "cy@x.org"],
                "branch": "mine",
            },
        )
        assert r.content[0].text == "INSERT 0 1\nUPDATE 1"
        r = await ok(c, "set_meta", {"branch": "mine", "meta": {"task": None, "step": 2}})
        assert r.content[0].text == 'mine: {"step": 2}'
        # main moves on under the world; rebase takes it in
        shop.sql("insert into users(name, email) values ('Di', 'di@x.org')")
        r = await ok(c, "rebase", {"branch": "mine"})
        assert r.content[0].text == "REBASE 1"
        got = await ok(c, "sql", {"sql": "select name from users order by id", "branch": "mine"})
        names = [row[0] for row in got.structured_content["results"][0]["rows"]]
        assert names == ["Ada L.", "Cy", "Di"]
        # main untouched by the world's writes
        assert [r["name"] for r in main_rows(shop)] == ["Ada", "Di"]
        # a child forked in this session goes with cascade
        await ok(c, "fork", {"name": "mine-kid", "from": "mine"})
        r = await ok(c, "discard", {"branch": "mine", "cascade": True})
        assert sorted(r.structured_content["discarded"]) == ["mine", "mine-kid"]
    assert branch_names(shop) == []
    assert [r["name"] for r in main_rows(shop)] == ["Ada", "Di"]


async def test_safe_mode_discard_cascade_needs_every_child_own(shop, folder):
    async with connect(folder) as c:
        await ok(c, "fork", {"name": "mine"})
        shop.fork("stranger", "mine")  # a person forks from the agent's world
        await refused(c, "discard", {"branch": "mine", "cascade": True}, "safe mode", "stranger")
        assert branch_names(shop) == ["mine", "stranger"]
        await refused(c, "discard", {"branch": "stranger"}, "safe mode")
        # without cascade the world with a child is refused too (not by safe mode)
        await refused(c, "discard", {"branch": "mine"}, "cascade")
        assert branch_names(shop) == ["mine", "stranger"]
    assert branch_names(shop) == ["mine", "stranger"]


async def test_safe_mode_worlds_are_the_sessions_own(shop, folder):
    """A second server can't write the worlds the first one forked."""
    async with connect(folder) as first:
        await ok(first, "fork", {"name": "first"})
        async with connect(folder) as second:
            await refused(
                second,
                "put",
                {"table": "users", "id": "1", "record": {"name": "X"}, "branch": "first"},
                "safe mode",
            )
            await ok(second, "fork", {"name": "second"})
            await refused(first, "discard", {"branch": "second"}, "safe mode")
            await ok(second, "discard", {"branch": "second"})
        await ok(
            first,
            "put",
            {"table": "users", "id": "1", "record": {"name": "X"}, "branch": "first"},
        )
    assert branch_names(shop) == ["first"]
    assert shop.get("users", 1, branch="first")["name"] == "X"
    assert shop.get("users", 1)["name"] == "Ada"


async def test_safe_mode_sql_on_own_world_cannot_write_main_by_qualified_name(shop, folder):
    async with connect(folder) as c:
        await ok(c, "fork", {"name": "mine"})
        for sql in [
            "update main.users set name = 'HACKED'",
            "insert into main.users(name) values ('intruder')",
            "delete from main.users where id = 1",
        ]:
            await c.call_tool("sql", {"sql": sql, "branch": "mine"})
    assert main_rows(shop) == [{"id": 1, "name": "Ada", "email": "ada@x.org"}]


async def test_a_call_the_client_gives_up_on_is_cancelled_and_rolled_back(shop, folder):
    """The SDK sends notifications/cancelled for a call its caller abandons: the server stops
    it at once (the stdio loop reads on while it runs), rolls it back, and serves on."""
    spin = (
        "update users set name = 'spun'; with recursive n(i) as (select 1 union all "
        "select i + 1 from n) select count(*) from n"
    )
    async with connect(folder, "--max-query-ms", "0") as c:
        await ok(c, "fork", {"name": "mine"})
        started = time.monotonic()
        with anyio.move_on_after(0.5):
            await c.call_tool("sql", {"sql": spin, "branch": "mine"})
        r = await ok(c, "sql", {"sql": "select name from users", "branch": "mine"})
        assert time.monotonic() - started < 10
        assert r.structured_content["results"][0]["rows"] == [["Ada"]]
    run_cli(folder, "sql", "update users set name = 'Ada P'")  # no lock left behind
    assert main_rows(shop)[0]["name"] == "Ada P"


# --- --allow-merge ---------------------------------------------------------------------------


async def test_allow_merge_lists_and_merges(shop, folder):
    async with connect(folder, "--allow-merge") as c:
        assert {t.name for t in (await c.list_tools()).tools} == ALL_TOOLS
        assert "call merge when the diff is right" in c.instructions
        await ok(c, "fork", {"name": "t1"})
        await ok(
            c,
            "put",
            {
                "table": "users",
                "id": "1",
                "record": {"name": "Ada L.", "email": "ada@x.org"},
                "branch": "t1",
            },
        )
        r = await ok(c, "merge", {"branch": "t1"})
        assert r.content[0].text == "merged 1 change from t1 into main"
        assert r.structured_content == {"branch": "t1", "into": "main", "merged": 1, "open": False}
        # owner mode writes main directly, too
        await ok(c, "put", {"table": "users", "id": "2", "record": {"name": "Bo"}})
    assert [r["name"] for r in main_rows(shop)] == ["Ada L.", "Bo"]
    assert branch_names(shop) == []


async def test_allow_merge_conflict_then_resolve(shop, folder):
    async with connect(folder, "--allow-merge") as c:
        await ok(c, "fork", {"name": "t"})
        await ok(
            c,
            "put",
            {
                "table": "users",
                "id": "1",
                "record": {"name": "Ada T", "email": "ada@x.org"},
                "branch": "t",
            },
        )
        shop.put("users", 1, {"name": "Ada M", "email": "ada@x.org"})  # main moves too

        r = await refused(
            c,
            "merge",
            {"branch": "t"},
            "conflict",
            "resolve",
            "by_columns",
            "rows",
            "merge_preview",
        )
        sc = r.structured_content
        assert sc["code"] == "40001"
        (conflict,) = sc["data"]
        assert (conflict["table"], conflict["id"]) == ("users", "1")
        assert conflict["base"] == {"id": 1, "name": "Ada", "email": "ada@x.org"}
        assert conflict["ours"] == {"id": 1, "name": "Ada T", "email": "ada@x.org"}
        assert conflict["theirs"] == {"id": 1, "name": "Ada M", "email": "ada@x.org"}
        assert shop.get("users", 1)["name"] == "Ada M"  # nothing merged
        assert branch_names(shop) == ["t"]

        r = await ok(c, "merge_preview", {"branch": "t"})
        assert [x["outcome"] for x in r.structured_content["rows"] if x["id"] == "1"] == [
            "conflict"
        ]
        r = await ok(c, "merge", {"branch": "t", "resolve": "theirs"})
        assert r.content[0].text.startswith("merged ")
        assert "kept as main had them" in r.content[0].text
    assert shop.get("users", 1)["name"] == "Ada M"
    assert branch_names(shop) == []


# --- tools/list: schemas and annotations -----------------------------------------------------


async def test_tools_list_schemas_and_annotations(shop, folder):
    async with connect(folder, "--allow-merge") as c:
        tools = (await c.list_tools()).tools
    assert sorted(t.name for t in tools) == sorted(ALL_TOOLS)
    for tool in tools:
        op = REGISTRY.get(tool.name)
        schema = tool.input_schema
        # The published schema is the file's (shared parts written in place) without $schema
        # and title, which every tools/list would pay for (MCP's default dialect is 2020-12).
        assert schema == op.tool_schema, tool.name
        assert "$schema" not in schema and "title" not in schema and "$ref" not in str(schema)
        file = json.loads((SCHEMAS / f"{tool.name}.json").read_text())
        assert file["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["type"] == "object"
        assert not {"oneOf", "anyOf", "allOf", "$defs"} & set(schema), tool.name
        jsonschema.Draft202012Validator.check_schema(schema)
        assert tool.title and tool.title.strip() and tool.title == op.title
        assert tool.description and tool.description.strip() and tool.description == op.description
        a = tool.annotations
        assert a is not None, tool.name
        # A hint left out is MCP's default: readOnly false, destructive true, idempotent false.
        assert (a.read_only_hint or False) is op.read_only
        assert (True if a.destructive_hint is None else a.destructive_hint) is op.destructive
        assert (a.idempotent_hint or False) is op.idempotent
        assert a.open_world_hint is False
    by_name = {t.name: t.annotations for t in tools}
    assert by_name["describe"].read_only_hint is True
    assert by_name["describe"].destructive_hint is False
    assert by_name["merge"].destructive_hint in (True, None)
    assert by_name["put"].read_only_hint in (False, None)


# --- describe and world tables ---------------------------------------------------------------


async def test_describe_main_and_world(shop, folder):
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x.org')")
    async with connect(folder) as c:
        r = await ok(c, "describe", {})
        text = r.content[0].text
        assert text.splitlines()[0] == "users: 2 rows"
        assert 'sample row: {"id": 1, "name": "Ada", "email": "ada@x.org"}' in text
        (users,) = r.structured_content["tables"]
        assert users["rows"] == 2
        assert users["sample"] == {"id": 1, "name": "Ada", "email": "ada@x.org"}
        assert [f["name"] for f in users["fields"]] == ["id", "name", "email"]

        await ok(c, "fork", {"name": "w"})
        r = await ok(
            c,
            "sql",
            {
                "sql": "create table notes(id integer primary key, body text not null); "
                "insert into notes(body) values ('hello'), ('world'), ('again'); "
                "delete from users where id = 2",
                "branch": "w",
            },
        )
        assert r.content[0].text.splitlines()[0] == "CREATE TABLE"

        r = await ok(c, "describe", {"branch": "w"})
        tables = {t["name"]: t for t in r.structured_content["tables"]}
        assert r.structured_content["branch"] == "w"
        assert set(tables) == {"users", "notes"}
        assert tables["users"]["rows"] == 1
        assert tables["notes"]["rows"] == 3
        assert tables["notes"]["sample"] == {"id": 1, "body": "hello"}
        assert "notes: 3 rows" in r.content[0].text

        r = await ok(c, "describe", {"branch": "w", "table": "notes"})
        assert [t["name"] for t in r.structured_content["tables"]] == ["notes"]
        assert 'sample row: {"id": 1, "body": "hello"}' in r.content[0].text

        # main doesn't have it
        await refused(c, "describe", {"table": "notes"}, "no table 'notes'")
        r = await ok(c, "describe", {})
        assert [t["name"] for t in r.structured_content["tables"]] == ["users"]

        # the world's table works through the row tools and shows in diff
        await ok(c, "put", {"table": "notes", "id": "9", "record": {"body": "nine"}, "branch": "w"})
        r = await ok(c, "get", {"table": "notes", "id": "9", "branch": "w"})
        assert r.structured_content["row"] == {"id": 9, "body": "nine"}
        r = await ok(c, "diff", {"branch": "w"})
        assert [s["table"] for s in r.structured_content.get("schema", [])] == ["notes"]
        assert (
            "CREATE TABLE" in (await ok(c, "diff", {"branch": "w", "as_sql": True})).content[0].text
        )
    assert sorted(shop.database.tables()) == ["users"]
    assert shop.query("select count(*) as n from notes", branch="w") == [{"n": 4}]


# --- search ----------------------------------------------------------------------------------


async def test_a_safe_mode_agent_finds_by_words_and_vectors_on_main_and_its_world(shop, folder):
    shop.sql("alter table users add column embedding blob")
    shop.sql("update users set embedding = '[1, 0]' where id = 1")
    async with connect(folder) as c:
        r = await ok(c, "find", {"table": "users", "text": "ada"})
        assert r.content[0].text.startswith("1 match\n text score")
        assert r.structured_content["ranked_by"] == "text"
        assert r.structured_content["scores"][0]["text"] > 0
        await ok(c, "fork", {"name": "mine"})
        await ok(
            c, "sql", {"sql": "update users set name = 'Ada Ada' where id = 1", "branch": "mine"}
        )
        args = {
            "table": "users",
            "text": "ada",
            "vector": [2, 1],
            "vector_field": "embedding",
            "branch": "mine",
        }
        r = await ok(c, "find", args)
        first = r.structured_content["scores"][0]
        assert set(first) == {"text", "vector", "fused"} and first["vector"] == 2.0
        assert r.structured_content["rows"][0]["name"] == "Ada Ada"
        await refused(
            c, "find", {"table": "users", "vector": [1, 2]}, "give both 'vector' and 'vector_field'"
        )
        await refused(c, "find", {"table": "users", "text": "x", "ef": 5000}, "4096", "sql")
    assert shop.find("users", text="ada").rows[0]["name"] == "Ada"  # (main as it was)
