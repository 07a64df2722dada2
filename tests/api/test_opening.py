"""The composition root: every front end opens its folder the same way (chronos' system tables
on every connection, on main and on a world), and the call running now is the call's own."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest
from helpers import CHRONOS, run_cli

import chronos_lite
from chronos_lite.opening import open_folder
from chronos_lite.operations.registry import REGISTRY
from chronos_lite.storage import events

QUERY = "select name from chronos_worlds"


@pytest.fixture
def forked(db):
    db.sql("create table t(id integer primary key)")
    db.fork("w")
    return db


@pytest.mark.parametrize("branch", ["main", "w"])
def test_the_api_cli_and_shell_see_the_system_tables(forked, folder, branch):
    assert forked.query(QUERY, branch=branch) == [{"name": "w"}]
    assert " w\n" in run_cli(folder, "sql", QUERY, "-b", branch).stdout
    assert " w\n" in run_cli(folder, "-b", branch, "-c", QUERY).stdout


def test_chronos_mcp_sees_the_system_tables(forked, folder):
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "sql", "arguments": {"sql": QUERY, "branch": "w"}},
        },
    ]
    sent = "".join(json.dumps(line) + "\n" for line in lines)
    proc = subprocess.run(
        [CHRONOS, "mcp", str(folder), "--allow-merge"],
        input=sent,
        capture_output=True,
        text=True,
        timeout=60,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    result = next(r["result"] for r in replies if r.get("id") == 2)
    assert not result.get("isError"), result
    assert " w\n" in result["content"][0]["text"]


def test_open_folder_is_what_the_api_holds(forked, folder):
    with open_folder(folder) as database:
        assert not database.keep_temp  # (MCP's: each call its own session)
        reply = REGISTRY.call(database, "sql", {"sql": QUERY})
        assert reply.value.results[-1].rows == [("w",)]
    assert forked.database.keep_temp  # (a program's connection: its TEMP objects last)
    assert not isinstance(forked, type(forked.database))


def test_who_acts_is_the_calls_own():
    assert events.current().name == "owner"
    seen: list[str] = []
    acting = events.acting("bot", "r1")
    assert (events.current().name, events.current().run) == ("bot", "r1")
    other = threading.Thread(target=lambda: seen.append(events.current().name))
    other.start()
    other.join(timeout=10)
    inner = events.acting("inner", None)
    assert events.current().name == "inner"
    events.done(inner)
    assert events.current().name == "bot"
    events.done(acting)
    assert seen == ["owner"]  # (another thread's call is not this one)
    assert events.current().name == "owner"


def test_an_audited_call_counts_what_the_calls_within_it_record():
    with events.audited() as tally:
        acting = events.acting("bot", None)
        events.recorded("write", 3)
        events.recorded("merged", 3)  # (its world's event told of these rows already)
        events.done(acting)
        events.recorded("fork", 0)
    events.recorded("write", 5)  # (outside: no audit counts it)
    assert (tally.events, tally.rows) == (3, 3)


def test_a_program_acts_as_the_caller_it_was_opened_with(forked, folder):
    with chronos_lite.open(folder) as db:
        db.caller = chronos_lite.Caller(name="nightly", run="n1")
        db.put("t", 1, {})
    rows = forked.query("select actor, run from _chronos_events where kind = 'write'")
    assert rows[-1] == {"actor": "nightly", "run": "n1"}
