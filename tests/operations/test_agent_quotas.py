"""An agent's quotas and audit trail, through the real ``chronos mcp --agent`` process: a
runaway statement stopped at max_query_ms, one over max_memory_mb stopped, an extra call past
max_concurrent refused while another process holds the slot, and the server serving on after
each; what the agent did found by SHOW AUDIT with its run fields, and UNDO AGENT taking back
exactly its rows. A person's ALTER AGENT holds from the agent's next call."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import run_cli
from mcp_lines import Server, tool_error

import chronos_lite
from chronos_lite import Caller, ChronosError
from chronos_lite.history import prune
from chronos_lite.operations.rights import FRESH_S
from chronos_lite.storage.governance import slots

RUNAWAY = "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"
# 3M numbers in one string: ~20 MB of SQLite's memory.
HUNGRY = (
    "with recursive n(i) as (select 1 union all select i + 1 from n limit 3000000) "
    "select length(group_concat(i)) from n"
)
DEV = ["read", "fork", "write_own", "write_main", "merge_own"]


@pytest.fixture
def server(shop, folder):
    shop.call("agent", action="create", name="bot", rights=DEV)
    started: list[Server] = []

    def start(*flags: str) -> Server:
        s = Server(folder, "--agent", "bot", *flags)
        s.initialize()
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


def test_a_runaway_statement_stops_at_max_query_ms(shop, server):
    shop.call("agent", action="alter", name="bot", max_query_ms=300)
    s = server()
    text = tool_error(s.call("sql", {"sql": RUNAWAY}))
    assert "agent bot's max_query_ms of 300 ms" in text and "nothing was changed" in text
    assert s.call("get", {"table": "users", "id": "1"})["isError"] is False  # it serves on
    (entry,) = shop.call("audit", agent="bot").data["entries"]
    assert (entry["tool"], entry["outcome"], entry["code"]) == ("sql", "stopped", "57014")


def test_the_server_limit_holds_where_it_is_less(shop, server):
    shop.call("agent", action="alter", name="bot", max_query_ms=60_000)
    s = server("--max-query-ms", "200")
    text = tool_error(s.call("sql", {"sql": RUNAWAY}))
    assert "its limit of 200 ms" in text


def test_a_statement_over_max_memory_mb_is_stopped(shop, server):
    shop.call("agent", action="alter", name="bot", max_memory_mb=4)
    s = server()
    text = tool_error(s.call("sql", {"sql": HUNGRY}))
    assert "agent bot's max_memory_mb of 4 MB" in text, text
    shop.call("agent", action="alter", name="bot", max_memory_mb=None)
    result = s.call("sql", {"sql": HUNGRY})  # the same, with no quota: it runs
    assert result["isError"] is False, result


def test_max_concurrent_counts_calls_in_every_process(shop, folder, server):
    shop.call("agent", action="alter", name="bot", max_concurrent=1)
    s = server()
    held = slots.take(folder, "bot", 1)  # another process (this one) runs bot's one call
    try:
        text = tool_error(s.call("get", {"table": "users", "id": "1"}))
        assert "agent bot may run 1 at a time (its max_concurrent)" in text
        assert s.call("get", {"table": "users", "id": "1"})["isError"] is True
    finally:
        held.release()
    assert s.call("get", {"table": "users", "id": "1"})["isError"] is False
    with pytest.raises(ChronosError, match="may run 1 at a time"):
        with slots.take(folder, "bot", 1):
            slots.take(folder, "bot", 1)  # (two calls of one process count twice)
    refusals = [e for e in shop.call("audit").data["entries"] if e["code"] == slots.TOO_MANY]
    assert len(refusals) == 2


def _wait_until_held(slot: Path, seconds: float = 10) -> None:
    """Until a process holds ``slot``'s flock, as /proc/locks lists it (looking takes nothing:
    a call of ours could collide with the one we wait for)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if slot.exists():
            st = slot.stat()
            inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
            if any(
                " FLOCK " in line and inode in line and "->" not in line
                for line in Path("/proc/locks").read_text().splitlines()
            ):
                return
        time.sleep(0.02)
    raise AssertionError(f"no process took {slot} within {seconds} s")


def test_max_concurrent_refuses_a_second_servers_call_while_the_first_runs(shop, folder, server):
    shop.call("agent", action="alter", name="bot", max_concurrent=1, max_query_ms=4000)
    first, second = server(), server()
    first.send(
        {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "sql", "arguments": {"sql": RUNAWAY}},
        }
    )
    _wait_until_held(folder / slots.DIRECTORY / "bot.0")  # (the first is inside its call)
    text = tool_error(second.call("get", {"table": "users", "id": "1"}))
    assert "agent bot may run 1 at a time (its max_concurrent)" in text
    stopped = first.read()  # the runaway ends at the agent's max_query_ms
    assert "max_query_ms of 4,000 ms" in stopped["result"]["content"][0]["text"]
    assert second.call("get", {"table": "users", "id": "1"})["isError"] is False
    assert first.call("get", {"table": "users", "id": "1"})["isError"] is False


def test_a_slot_is_given_back_when_its_process_dies(shop, folder, server):
    shop.call("agent", action="alter", name="bot", max_concurrent=1)
    s = server()
    s.send(
        {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "sql", "arguments": {"sql": RUNAWAY}},
        }
    )
    s.kill()  # (SIGKILL, mid-call)
    with slots.take(folder, "bot", 1):
        pass


def test_the_audit_finds_what_the_agent_did_and_undo_agent_takes_back_its_rows(shop, server):
    s = server()
    run = {"run_id": "r-7", "prompt_version": "p3", "model": "m-1", "tool_schema": "v2"}
    assert s.call("fork", {"name": "task", "meta": {"intent": "rename", **run}})["isError"] is False
    put = {"table": "users", "id": "1", "record": {"name": "Ada L."}, "branch": "task"}
    assert s.call("put", put)["isError"] is False
    assert s.call("merge", {"branch": "task"})["isError"] is False
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x.org')")  # the owner's own
    assert tool_error(s.call("restore", {"branch": "main", "at": "-1 minute"}))
    assert s.call("get", {"table": "users", "id": "1"})["isError"] is False  # (a read: no entry)

    entries = shop.call("sql", sql="SHOW AUDIT bot SINCE '-1 hour'").data["results"][0]["data"]
    got = [(e["tool"], e["branch"], e["outcome"], e["rows"]) for e in entries["entries"]]
    assert got == [
        ("restore", "main", "refused", 0),
        ("merge", "task", "ok", 1),
        ("put", "task", "ok", 1),
        ("fork", "task", "ok", 0),
    ]
    for e in entries["entries"][1:]:
        assert {k: e[k] for k in run} == run
    assert shop.call("history", branch="main").data["events"][1]["by"] == "bot"  # the merge

    undone = shop.sql("UNDO AGENT bot SINCE '-1 hour' WHERE run_id = 'r-7'")
    assert undone.results[0].tag.startswith("UNDO AGENT bot: 1 row put back"), undone
    assert shop.query("select name from users order by id") == [{"name": "Ada"}, {"name": "Bo"}]


def test_a_person_alters_the_agent_and_its_next_call_holds_to_it(shop, server):
    s = server()
    assert s.call("get", {"table": "users", "id": "1"})["isError"] is False
    shop.call("agent", action="alter", name="bot", rights=["fork"])
    time.sleep(FRESH_S)  # (the server reads the agent again at least this often)
    text = tool_error(s.call("get", {"table": "users", "id": "1"}))
    assert "agent bot can't read main: that needs read" in text
    shop.call("agent", action="alter", name="bot", disable=True)
    time.sleep(FRESH_S)
    assert "agent bot is disabled" in tool_error(s.call("describe", {}))
    shop.call("agent", action="drop", name="bot")
    time.sleep(FRESH_S)
    assert "agent bot is dropped" in tool_error(s.call("describe", {}))
    s.ping()


def test_unknown_or_disabled_agents_are_refused_at_start(shop, folder):
    shop.call("agent", action="create", name="bot", rights=DEV)
    shop.call("agent", action="alter", name="bot", disable=True)
    for name, words in (("bot", "agent bot is disabled"), ("nobody", "no agent nobody")):
        out = run_cli("mcp", folder, "--agent", name, stdin="", check=False)
        assert out.returncode == 1 and out.stdout == ""
        assert out.stderr.startswith(f"chronos: {words}"), out.stderr


def test_the_instructions_follow_the_agents_rights(shop, folder):
    shop.call("agent", action="create", name="bot", rights=DEV)
    shop.call("agent", action="create", name="ro", rights=["read", "fork", "write_own"])
    for name, merges in (("bot", True), ("ro", False)):
        s = Server(folder, "--agent", name, "--allow-merge")  # (--agent wins)
        try:
            said = s.initialize()["instructions"]
        finally:
            s.kill()
        assert ("call merge when the diff is right" in said) is merges, said
        assert ("a person reviews and merges it" in said) is not merges, said
        assert f"You act as the agent {name}" in said
    shop.call("agent", action="create", name="reader", rights=["read"])
    s = Server(folder, "--agent", "reader")
    try:
        said = s.initialize()["instructions"]
    finally:
        s.kill()
    assert "you can't fork a branch of your own" in said and "fork a branch with a name" not in said


def test_no_statement_reads_a_tokens_hash(shop):
    shop.call("agent", action="create", name="bot", rights=DEV)
    shop.call("agent", action="create", name="boss", rights=["admin"])
    for caller in (Caller(), shop.as_agent("boss")):
        for sql in (
            "select * from _chronos_agents",
            "select hex(hash) from main._chronos_agents",
            "select salt from _chronos_agents",
        ):
            with pytest.raises(ChronosError, match="isn't readable"):
                shop.call("sql", caller=caller, sql=sql)
    assert shop.query("select name from _chronos_agents") == [{"name": "boss"}, {"name": "bot"}]


def test_an_admin_agent_over_mcp_copies_and_attaches_no_file(shop, folder, tmp_path):
    shop.call("agent", action="create", name="boss", rights=["admin"])
    copy = tmp_path / "copy.db"
    s = Server(folder, "--agent", "boss")
    try:
        s.initialize()
        for sql in (f"vacuum into '{copy}'", f"attach '{folder / 'chronos.db'}' as x"):
            text = tool_error(s.call("sql", {"sql": sql}))
            assert "is the database's own user's only, never an agent's" in text, text
        assert s.call("sql", {"sql": "vacuum"})["isError"] is False
    finally:
        s.kill()
    assert not copy.exists()
    outcomes = [e["outcome"] for e in shop.call("audit", agent="boss").data["entries"]]
    assert outcomes.count("refused") == 2, outcomes


def test_only_an_admin_reads_the_agents_and_the_audit_in_sql(shop, folder):
    shop.call("agent", action="create", name="bot", rights=DEV)
    shop.call("agent", action="create", name="boss", rights=["admin"])
    bot, boss = shop.as_agent("bot"), shop.as_agent("boss")
    for sql in ("select name from _chronos_agents", "select * from _chronos_audit"):
        with pytest.raises(ChronosError, match="can't read the agents or the audit trail"):
            shop.call("sql", caller=bot, sql=sql)
        assert shop.call("sql", caller=boss, sql=sql).data["results"]
    s = Server(folder)
    try:
        s.initialize()
        text = tool_error(s.call("sql", {"sql": "select agent, args from _chronos_audit"}))
        assert text.startswith("safe mode: agents can't read the agents or the audit trail")
    finally:
        s.kill()


def test_safe_mode_and_owner_names_in_history(shop, folder):
    s = Server(folder)
    try:
        s.initialize()
        owner = s.call("fork", {"name": "w"})["structuredContent"]["owner"]
    finally:
        s.kill()
    assert owner.startswith("safe:") and len(owner) == len("safe:") + 6
    with chronos_lite.open(folder) as db:
        assert db.database.world("w").owner == owner


def test_the_audit_is_kept_for_the_retention_window(shop, folder):
    shop.call("agent", action="create", name="bot", rights=DEV)
    bot = shop.as_agent("bot")
    shop.call("fork", caller=bot, name="w")
    with pytest.raises(ChronosError):
        shop.call("restore", caller=bot, branch="w", at="-1 second")
    assert len(shop.call("audit").data["entries"]) == 2
    prune.prune(shop.database, now=time.time() + 8 * 86400)  # (past the default week)
    assert shop.call("audit").data["entries"] == []
    assert "(no calls of any agent)" in shop.call("audit").text
