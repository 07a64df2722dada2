"""The rights matrix, through the real ``chronos mcp --agent`` and the MCP SDK's client: every
tool an agent can be given, for each right alone and the usual sets, is listed exactly when
the spec's table says, allowed exactly when the concepts page's rights say, and a refused call
changes nothing (but the audit trail, which keeps the refusal).

The expectations below are written from the spec, not from chronos' code: ``LISTED`` is the
MCP page's "Listed when the agent has" table, ``CALLS`` each call with the rights that allow it
(``read``: read any world; ``fork``; ``write_own``: its own worlds; ``write_main``: main;
``merge_own`` with ``write_main``: its merges into main; ``merge``: any world; ``restore``:
restore, roll back; ``admin``: everything, agents and settings).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import CHRONOS, file_dump
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

import chronos_lite
from chronos_lite import REGISTRY, Caller
from chronos_lite.storage.governance import reviews
from chronos_lite.storage.governance.agents import RIGHTS

pytestmark = pytest.mark.anyio

Rights = frozenset[str]
ALL = frozenset(RIGHTS)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def effective(rights: Rights) -> Rights:
    return ALL if "admin" in rights else rights


def listed(tool: str, r: Rights) -> bool:
    """The spec's table (chronos-mcp, "As an agent"); every other tool is always listed."""
    if tool == "merge":
        return bool({"merge", "merge_own"} & r)
    if tool in ("restore", "rollback"):
        return "restore" in r
    if tool == "undo_merge":
        return "admin" in r or {"restore", "merge"} <= r
    if tool in ("set_merge_check", "drop_merge_check", "set_merge_policy", "drop_merge_policy"):
        return "admin" in r
    return True


def merges_mine(r: Rights) -> bool:
    return "merge" in r or {"merge_own", "write_main"} <= r


# (tool, its arguments given the scenario's names, whether the rights allow it)
Call = tuple[str, Callable[[dict], dict], Callable[[Rights], bool]]
SELECT_1 = "select name from users where id = 1"
SIM = "update users set name = 'x' || $1 where id = 1"
SIM_SCORE = "select length(name) from users where id = 1"
CALLS: list[tuple[str, Call]] = [
    ("describe", ("describe", lambda n: {}, lambda r: "read" in r)),
    (
        "find main",
        ("find", lambda n: {"table": "users", "where": {"id": 1}}, lambda r: "read" in r),
    ),
    (  # (its own world: read without the read right, as every call reads it)
        "find mine",
        ("find", lambda n: {"table": "users", "branch": n["mine"]}, lambda r: True),
    ),
    ("sql read main", ("sql", lambda n: {"sql": SELECT_1}, lambda r: "read" in r)),
    (
        "sql write mine",
        (
            "sql",
            lambda n: {"sql": "update users set name = 'x' where id = 1", "branch": n["mine"]},
            lambda r: "write_own" in r,
        ),
    ),
    (
        "sql write main",
        (
            "sql",
            lambda n: {"sql": "update users set name = 'x' where id = 1"},
            lambda r: {"read", "write_main"} <= r,
        ),
    ),
    (
        "sql FORK WORLD",
        ("sql", lambda n: {"sql": f"FORK WORLD {n['new']}"}, lambda r: {"read", "fork"} <= r),
    ),
    (
        "sql CREATE AGENT",
        ("sql", lambda n: {"sql": f"CREATE AGENT {n['new']}"}, lambda r: "admin" in r),
    ),
    (
        "sql MERGE WORLD mine",
        (
            "sql",
            lambda n: {"sql": f"MERGE WORLD {n['mine']}"},
            lambda r: "read" in r and merges_mine(r),
        ),
    ),
    ("get main", ("get", lambda n: {"table": "users", "id": "1"}, lambda r: "read" in r)),
    (
        "put mine",
        (
            "put",
            lambda n: {"table": "users", "id": "1", "record": {"name": "p"}, "branch": n["mine"]},
            lambda r: "write_own" in r,
        ),
    ),
    (
        "put main",
        (
            "put",
            lambda n: {"table": "users", "id": "1", "record": {"name": "p"}},
            lambda r: "write_main" in r,
        ),
    ),
    (
        "put theirs",
        (
            "put",
            lambda n: {"table": "users", "id": "1", "record": {"name": "p"}, "branch": n["theirs"]},
            lambda r: "admin" in r,
        ),
    ),
    (
        "delete mine",
        (
            "delete",
            lambda n: {"table": "users", "id": "1", "branch": n["mine"]},
            lambda r: "write_own" in r,
        ),
    ),
    ("fork", ("fork", lambda n: {"name": n["new"]}, lambda r: {"read", "fork"} <= r)),
    (
        "set_meta mine",
        ("set_meta", lambda n: {"branch": n["mine"], "meta": {"k": 1}}, lambda r: True),
    ),
    (
        "set_meta theirs",
        ("set_meta", lambda n: {"branch": n["theirs"], "meta": {"k": 1}}, lambda r: "admin" in r),
    ),
    ("branches", ("branches", lambda n: {}, lambda r: "read" in r)),
    ("discard mine", ("discard", lambda n: {"branch": n["mine"]}, lambda r: True)),
    ("discard theirs", ("discard", lambda n: {"branch": n["theirs"]}, lambda r: "admin" in r)),
    ("diff mine", ("diff", lambda n: {"branch": n["mine"]}, lambda r: True)),
    ("diff theirs", ("diff", lambda n: {"branch": n["theirs"]}, lambda r: "read" in r)),
    ("merge mine", ("merge", lambda n: {"branch": n["mine"]}, merges_mine)),
    ("merge theirs", ("merge", lambda n: {"branch": n["theirs"]}, lambda r: "merge" in r)),
    ("merge_preview mine", ("merge_preview", lambda n: {"branch": n["mine"]}, lambda r: True)),
    ("rebase mine", ("rebase", lambda n: {"branch": n["mine"]}, lambda r: "write_own" in r)),
    (  # (forks worlds of its own and writes them; reads main)
        "simulate main",
        (
            "simulate",
            lambda n: {"worlds": 2, "prefix": n["new"], "script": SIM, "score": SIM_SCORE},
            lambda r: {"read", "fork", "write_own"} <= r,
        ),
    ),
    (  # (a world the owner's simulation kept: read, forked again, written)
        "replay theirs",
        (
            "replay",
            lambda n: {"world": f"{n['new']}_0"},
            lambda r: {"read", "fork", "write_own"} <= r,
        ),
    ),
    (  # (theirs keeps its reads: checking them reads another's world)
        "check_reads theirs",
        ("check_reads", lambda n: {"branch": n["theirs"]}, lambda r: "read" in r),
    ),
    (
        "restore mine",
        ("restore", lambda n: {"branch": n["mine"], "at": "-0 seconds"}, lambda r: "restore" in r),
    ),
    (
        "checkpoint mine",
        (
            "checkpoint",
            lambda n: {"branch": n["mine"], "name": "c2"},
            lambda r: "write_own" in r,
        ),
    ),
    (
        "rollback mine",
        (
            "rollback",
            lambda n: {"branch": n["mine"], "checkpoint": "c1"},
            lambda r: "restore" in r,
        ),
    ),
    ("history mine", ("history", lambda n: {"branch": n["mine"]}, lambda r: True)),
    (
        "undo_merge",
        (
            "undo_merge",
            lambda n: {"branch": n["merged"]},
            lambda r: "admin" in r or {"restore", "merge"} <= r,
        ),
    ),
    ("merge_checks", ("merge_checks", lambda n: {}, lambda r: "read" in r)),
    (
        "set_merge_check",
        (
            "set_merge_check",
            lambda n: {"name": n["new"], "query": "select 1 where 0"},
            lambda r: "admin" in r,
        ),
    ),
    (
        "drop_merge_check",
        ("drop_merge_check", lambda n: {"name": n["check"]}, lambda r: "admin" in r),
    ),
    ("merge_policies", ("merge_policies", lambda n: {}, lambda r: "read" in r)),
    (
        "check_merge_policy mine",
        (
            "check_merge_policy",
            lambda n: {"branch": n["mine"], "rules": {"max_rows": 0}},
            lambda r: True,
        ),
    ),
    (
        "set_merge_policy",
        (
            "set_merge_policy",
            lambda n: {"name": n["new"], "rules": {"max_rows": 5}},
            lambda r: "admin" in r,
        ),
    ),
    (
        "drop_merge_policy",
        ("drop_merge_policy", lambda n: {"name": n["policy"]}, lambda r: "admin" in r),
    ),
    ("reviews", ("reviews", lambda n: {}, lambda r: "read" in r)),
    (
        "review theirs",  # (held by a policy naming no reviewer: a person's, or an admin's)
        (
            "review",
            lambda n: {"branch": n["theirs"], "verdict": "pass", "reason": "not mine"},
            lambda r: "admin" in r,
        ),
    ),
]
TOOLS_CALLED = {call[0] for _name, call in CALLS}
RIGHT_SETS = {
    **{right: frozenset({right}) for right in RIGHTS},
    "none": frozenset(),
    "production": frozenset({"read", "fork", "write_own"}),
    "development": frozenset({"read", "fork", "write_own", "write_main", "merge_own"}),
    "merge_own without write_main": frozenset({"read", "fork", "write_own", "merge_own"}),
    "restore and merge": frozenset({"read", "restore", "merge"}),
}


def test_every_listed_tool_is_in_the_matrix():
    assert TOOLS_CALLED == {op.name for op in REGISTRY if op.mcp}


def _scenario(db, i: int, held: bool = False) -> dict:
    """Fresh names for one call: the agent's own world (changed, with a checkpoint), another's
    (changed), a world the owner merged, a merge check (it finds nothing), and a name nothing
    has."""
    bot = Caller(name="bot")  # (the Python API acting under bot's name: bot's own world)
    names = {"mine": f"mine{i}", "theirs": f"theirs{i}", "merged": f"merged{i}", "new": f"n{i}"}
    names["check"], names["policy"] = f"c{i}", f"p{i}"
    db.call("set_merge_check", name=names["check"], query="select 1 where 0")
    db.call("set_merge_policy", name=names["policy"], rules={"max_rows": 0})
    for name in (names["merged"], names["theirs"]):
        db.call("fork", name=name, meta={"check_reads": name == names["theirs"]})
        db.sql(f"update users set email = '{name}@x.org' where id = 1", branch=name)
        if name == names["merged"]:
            db.call("merge", branch=name)  # (before the others fork: they merge cleanly)
    if held:  # (theirs waits in reviews, held by its policy as an agent's merge would be)
        theirs = db.database.world(names["theirs"])
        with db.database.write(db.database.main.conn) as conn:
            reviews.queue(conn, theirs.id, "other", names["policy"], ["it changes 1 row"], 1)
    db.call("fork", caller=bot, name=names["mine"])
    db.call("checkpoint", caller=bot, branch=names["mine"], name="c1")
    db.sql(f"update users set email = 'm{i}@x.org' where id = 1", branch=names["mine"])
    return names


def _without_audit(folder: Path) -> list[str]:
    return [line for line in file_dump(folder) if '"_chronos_audit"' not in line]


@pytest.mark.parametrize("rights_name", list(RIGHT_SETS))
async def test_the_rights_matrix_over_stdio(shop, folder, rights_name):
    rights = RIGHT_SETS[rights_name]
    shop.call("agent", action="create", name="bot", rights=sorted(rights))
    r = effective(rights)
    params = StdioServerParameters(command=CHRONOS, args=["mcp", str(folder), "--agent", "bot"])
    async with Client(params) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert tools == {t for t in TOOLS_CALLED if listed(t, r)}, rights_name
        for i, (what, (tool, args_of, allowed)) in enumerate(CALLS):
            names = _scenario(shop, i, held=tool == "review")
            if tool == "replay":  # (a world a simulation kept, the owner's)
                shop.call("simulate", worlds=1, prefix=names["new"], script=SIM, score=SIM_SCORE)
            before = _without_audit(folder)
            result = await client.call_tool(tool, args_of(names))
            text = result.content[0].text
            if allowed(r):
                assert not result.is_error, f"{rights_name}: {what} should run: {text}"
            else:
                assert result.is_error, f"{rights_name}: {what} should be refused: {text}"
                assert result.structured_content["code"] == "42501", (what, text)
                assert "agent bot can't" in text, (what, text)
                assert _without_audit(folder) == before, f"{rights_name}: {what} changed things"
    refusals = shop.call("audit", agent="bot", limit=1000).data["entries"]
    refused = [e for e in refusals if e["outcome"] == "refused"]
    assert len(refused) == sum(1 for _w, (_t, _a, allowed) in CALLS if not allowed(r))


def test_the_agents_own_worlds_stay_its_own_across_sessions(shop, folder):
    shop.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
    first = shop.as_agent("bot")
    shop.call("fork", caller=first, name="task")
    assert shop.database.world("task").owner == "bot"
    later = Caller.for_agent(
        shop.database, "bot"
    )  # (a new session: nothing carried over in memory)
    shop.call("put", caller=later, table="users", id="1", record={"name": "B"}, branch="task")
    other = chronos_lite.Caller(name="owner")
    shop.call("fork", caller=other, name="theirs")
    with pytest.raises(chronos_lite.ChronosError, match="it is owner's world"):
        shop.call("put", caller=later, table="users", id="1", record={"n": 1}, branch="theirs")


def test_an_agent_without_read_reads_no_other_branch_through_sql_or_a_second_branch(shop):
    shop.call("agent", action="create", name="bot", rights=["fork", "write_own"])
    shop.call("fork", caller=Caller(name="bot"), name="mine")
    shop.call("fork", name="theirs")
    shop.sql("update users set name = 'secret' where id = 1", branch="theirs")
    bot = shop.as_agent("bot")
    assert shop.call("sql", caller=bot, sql=SELECT_1, branch="mine").data["results"]
    for sql in (
        "select * from chronos_diff('theirs')",
        "select * from chronos_worlds",
        "select * from chronos_history('theirs')",
        "select * from chronos_conflicts('theirs')",
    ):
        with pytest.raises(chronos_lite.ChronosError, match="can't read other branches in SQL"):
            shop.call("sql", caller=bot, sql=sql, branch="mine")
    with pytest.raises(chronos_lite.ChronosError, match="can't read branch theirs"):
        shop.call("diff", caller=bot, branch="mine", to="theirs")
    reader = Caller(name="owner")  # (the same statements for a caller that may read: they run)
    assert shop.call("sql", caller=reader, sql="select * from chronos_diff('theirs')").data
