"""The spec's example with the ``small`` policy and the ``keep`` check, through the real front
ends: the agent is ``chronos mcp --agent bot`` driven by the MCP SDK's client, the person is the
``chronos`` CLI, approving at the version the reviews showed."""

from __future__ import annotations

import json

import pytest
from helpers import CHRONOS, run_cli
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


SETUP = [
    "create table lists(id integer primary key, name text)",
    "create table leads(id integer primary key, list int, name text)",
    "create table payments(id integer primary key, amount int)",
    "insert into lists values (1, 'a'), (2, 'b')",
    "insert into leads values (1, 1, 'x'), (2, 2, 'y'), (3, 1, 'z')",
    "create merge policy small with (max_rows = 2, max_deletes = 0, review_tables = 'payments')",
    "alter agent bot set (policy = small)",
    "create or replace merge check keep on tables (leads, lists) as "
    "select id from lists where id not in (select list from leads)",
]


async def test_the_spec_session_then_a_person_approves(db, folder):
    rights = ["read", "fork", "write_own", "write_main", "merge_own"]
    db.call("agent", action="create", name="bot", rights=rights)
    for sql in SETUP:
        db.sql(sql)
    db.close()
    params = StdioServerParameters(command=CHRONOS, args=["mcp", str(folder), "--agent", "bot"])
    async with Client(params) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"merge", "merge_policies", "check_merge_policy", "reviews", "review"} <= tools
        assert not {"set_merge_policy", "undo_merge", "set_merge_check"} & tools

        async def call(tool: str, **args) -> tuple[bool, str]:
            result = await client.call_tool(tool, args)
            return result.is_error, result.content[0].text

        assert (await call("fork", name="bot-2"))[0] is False
        sql = "insert into leads values (4, 2, 'a'), (5, 2, 'b'), (6, 1, 'c'), (7, 1, 'd')"
        sql += ", (8, 2, 'e')"
        assert (await call("sql", branch="bot-2", sql=sql))[0] is False
        assert await call("check_merge_policy", branch="bot-2", name="small") == (
            False,
            "bot-2's merge would wait for a person under merge policy small: it changes 5 "
            "rows (at most 2)",
        )
        assert await call("merge", branch="bot-2") == (
            True,
            "merging bot-2 needs a person's review (merge policy small: it changes 5 rows (at "
            "most 2)); it's queued (SHOW REVIEWS)",
        )
        error, text = await call("reviews")
        assert not error and "bot-2" in text and "it changes 5 rows (at most 2)" in text
        error, text = await call("merge", branch="bot-2")
        assert error and "an agent can't merge it" in text
        # a second world: it deletes a lead, so max_deletes = 0 holds it too
        await call("fork", name="bot-3")
        await call("sql", branch="bot-3", sql="delete from leads where id = 2")
        error, text = await call("merge", branch="bot-3")
        assert error and "it deletes 1 row (at most 0)" in text
    shown = json.loads(run_cli(folder, "reviews", "--json").stdout)
    assert [r["world"] for r in shown["reviews"]] == ["bot-2", "bot-3"]  # (oldest first)
    review = shown["reviews"][0]
    assert review["changed_since"] is False and review["owner"] == "bot"
    merged = run_cli(folder, "merge", "bot-2", "--version", str(review["version"]))
    assert merged.stdout.strip() == "merged 5 changes from bot-2 into main"
    left = json.loads(run_cli(folder, "reviews", "--json").stdout)["reviews"]
    assert [r["world"] for r in left] == ["bot-3"]
    stale = run_cli(folder, "merge", "bot-3", "--version", "99", check=False)
    assert stale.returncode == 1 and "not 99: it changed since" in stale.stderr
