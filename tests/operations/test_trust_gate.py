"""No way around the rules into main: an agent under a merge policy, or in production mode,
puts main back by no restore, rollback or undo; no reviewer decides its own world; only a
person approves what production held; the Python API's merge is gated as the tools' is.

Each case checks the end state (main's rows, the reviews queue, the audit trail), not only
the reply."""

from __future__ import annotations

import time

import pytest
from mcp_lines import Server

from chronos_lite import Caller, ChronosError

BOT = ["read", "fork", "write_own", "write_main", "merge_own", "restore"]


@pytest.fixture
def crm(db):
    db.sql("create table leads(id integer primary key, status text)")
    db.sql("insert into leads values (1, 'new'), (2, 'new'), (3, 'new'), (4, 'new')")
    db.call("agent", action="create", name="bot", rights=BOT)
    return db


def main_rows(db) -> list[tuple]:
    return [tuple(r.values()) for r in db.query("select * from leads order by id")]


def as_agent(db, name: str = "bot") -> Caller:
    return Caller.for_agent(db.database, name)


def refused(db, op: str, caller: Caller, match: str, **args) -> None:
    with pytest.raises(ChronosError, match=match) as info:
        db.call(op, caller, **args)
    assert info.value.code == "42501", info.value


def test_a_policy_agent_puts_main_back_by_no_restore_rollback_or_undo(crm):
    crm.call("set_merge_policy", name="small", rules={"max_rows": 1, "max_deletes": 0})
    crm.call("agent", action="alter", name="bot", policy="small")
    crm.call("checkpoint", branch="main", name="before-person")
    crm.sql("update leads set status = 'person' where id <= 3")
    crm.sql("delete from leads where id = 4")
    before = main_rows(crm)
    why = "it keeps to merge policy small, so main changes only by a merge"
    bot = as_agent(crm)
    refused(crm, "rollback", bot, why, branch="main", checkpoint="before-person")
    refused(crm, "restore", bot, why, branch="main", at="-1 hours")
    refused(crm, "sql", bot, why, sql="restore world main to '-1 hours'")
    refused(crm, "sql", bot, why, sql="undo agent owner since '-1 hours'")
    assert main_rows(crm) == before
    outcomes = [e["outcome"] for e in crm.call("audit", agent="bot").data["entries"]]
    assert outcomes.count("refused") == 4, outcomes

    # on its own world the same rights still put things back
    crm.call("fork", bot, name="mine")
    crm.call("checkpoint", bot, branch="mine", name="start")
    crm.call("sql", bot, branch="mine", sql="update leads set status = 'mine'")
    assert crm.call("rollback", bot, branch="mine", checkpoint="start").data["rows"] == 3
    crm.call("sql", bot, branch="mine", sql="update leads set status = 'again' where id = 1")
    undone = crm.call("sql", bot, sql="undo agent bot since '-1 hours'").text
    assert "UNDO AGENT bot" in undone and "on mine" in undone, undone
    assert crm.query("select status from leads where id = 1", branch="mine") == [
        {"status": "person"}
    ]
    assert main_rows(crm) == before


def test_an_agent_in_production_can_t_put_main_back_over_mcp(crm, folder):
    crm.call("agent", action="alter", name="bot", rights=[*BOT, "merge"])
    crm.call("fork", name="person-w")
    crm.sql("update leads set status = 'merged' where id = 1", branch="person-w")
    crm.call("merge", branch="person-w")
    crm.sql("update leads set status = 'person' where id = 2")
    crm.call("mode", mode="production")
    before = main_rows(crm)
    s = Server(folder, "--agent", "bot")
    try:
        s.initialize()
        listed = {t["name"] for t in s.result("tools/list")["tools"]}
        assert "undo_merge" not in listed and "restore" in listed
        calls = [
            ("restore", {"branch": "main", "at": "-1 hours"}),
            ("sql", {"sql": "RESTORE WORLD main TO '-3 seconds'"}),
            ("sql", {"sql": "UNDO AGENT owner SINCE '-1 hours'"}),
            ("sql", {"sql": "UNDO MERGE person-w"}),
        ]
        for tool, args in calls:
            reply = s.call(tool, args)
            text = reply["content"][0]["text"]
            assert reply["isError"] and "production mode" in text, (tool, text)
        reply = s.call("undo_merge", {"branch": "person-w"})
        assert reply.get("isError") or "error" in reply, reply
    finally:
        s.kill()
    assert main_rows(crm) == before
    entries = crm.call("audit", agent="bot").data["entries"]
    assert [e["outcome"] for e in entries].count("refused") >= 4, entries


def _held_world(db, agent: str, name: str) -> None:
    caller = as_agent(db, agent)
    db.call("fork", caller, name=name)
    db.call("sql", caller, branch=name, sql="update leads set status = 'won' where id <= 2")
    with pytest.raises(ChronosError, match="it's queued"):
        db.call("merge", caller, branch=name)


def test_no_reviewer_decides_its_own_world(crm):
    crm.call("agent", action="create", name="lead", rights=BOT)
    crm.call("agent", action="create", name="boss", rights=["admin"])
    crm.call(
        "set_merge_policy",
        name="small",
        rules={"max_rows": 1, "reviewer": "lead"},
        agents=["lead", "boss"],
    )
    before = main_rows(crm)
    for agent in ("lead", "boss"):
        _held_world(crm, agent, f"{agent}-w")
        for verdict in ("approve", "reject", "pass"):
            refused(
                crm,
                "review",
                as_agent(crm, agent),
                "it is its own world",
                branch=f"{agent}-w",
                verdict=verdict,
                reason="mine is fine",
            )
    crm.call("agent", action="create", name="other", rights=["read"])
    refused(
        crm,
        "review",
        as_agent(crm, "other"),
        "its reviewer, lead",
        branch="lead-w",
        verdict="approve",
        reason="not mine to say",
    )
    assert main_rows(crm) == before
    waiting = crm.call("reviews").data["reviews"]
    assert [(r["world"], r["verdict"]) for r in waiting] == [("lead-w", None), ("boss-w", None)]
    crm.call("merge", branch="lead-w", version=waiting[0]["version"])  # (a person decides)
    assert crm.query("select status from leads where id = 1") == [{"status": "won"}]


def test_only_a_person_approves_what_production_held(crm):
    crm.call("agent", action="create", name="lead", rights=["read"])
    crm.call("agent", action="create", name="boss", rights=["admin"])
    crm.call("set_merge_policy", name="loose", rules={"reviewer": "lead"}, agents=["bot"])
    crm.call("mode", mode="production")
    _held_world(crm, "bot", "p")
    before = main_rows(crm)
    for agent in ("lead", "boss"):
        refused(
            crm,
            "review",
            as_agent(crm, agent),
            "only a person approves it",
            branch="p",
            verdict="approve",
            reason="looks fine",
        )
    assert main_rows(crm) == before
    crm.call("review", as_agent(crm, "lead"), branch="p", verdict="pass", reason="ask Ada")
    (r,) = crm.call("reviews").data["reviews"]
    assert (r["world"], r["verdict"]) == ("p", "pass")
    crm.call("mode", mode="development")  # (what production held still waits for a person)
    refused(
        crm,
        "review",
        as_agent(crm, "lead"),
        "only a person approves it",
        branch="p",
        verdict="approve",
        reason="now?",
    )
    crm.call("merge", branch="p", version=r["version"])
    assert crm.query("select status from leads where id = 1") == [{"status": "won"}]


def test_the_python_apis_merge_is_gated_as_the_tools_are(crm):
    crm.call("set_merge_policy", name="careful", rules={"confirm_deletes_over": 1}, agents=["bot"])
    bot = as_agent(crm)
    crm.call("fork", bot, name="w")
    crm.call("sql", bot, branch="w", sql="delete from leads where id <= 3")
    with pytest.raises(ChronosError, match="confirm the count with confirm_deletes=3") as info:
        crm.merge("w")
    assert info.value.code == "22023"
    assert len(main_rows(crm)) == 4
    time.sleep(0.002)  # (history is stamped to the millisecond)
    crm.merge("w", confirm_deletes=3)
    assert main_rows(crm) == [(4, "new")]
