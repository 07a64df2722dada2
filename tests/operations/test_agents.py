"""Agents kept in the file: made, listed, altered, given a new token and dropped, through the
Python API, SQL and the CLI; a token is shown once, never stored (the file holds a salted hash),
and a rotated, disabled or dropped agent's token no longer finds it; safe mode manages none."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli
from mcp_lines import Server

import chronos_lite
from chronos_lite import ChronosError
from chronos_lite.storage.governance import agents


def _file_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def test_a_token_is_shown_once_and_never_stored(db, folder):
    made = db.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
    token = made.data["token"]
    assert made.text.splitlines()[-1] == token
    assert made.text.startswith("created agent bot (read, fork, write_own)")
    listed = db.call("agent", action="list")
    assert token not in listed.text and "token" not in listed.data["agents"][0]
    assert listed.data["agents"][0]["rights"] == ["read", "fork", "write_own"]
    assert agents.by_token(db.database.main.conn, token).name == "bot"
    for wrong in (token[:-1] + ("A" if token[-1] != "A" else "B"), "", "ca_00000000_" + "x" * 43):
        assert agents.by_token(db.database.main.conn, wrong) is None
    db.close()
    assert token.encode() not in _file_bytes(folder)


def test_a_rotated_disabled_or_dropped_agents_token_stops_working(db):
    old = db.call("agent", action="create", name="bot", rights=["read"]).data["token"]
    with pytest.raises(ChronosError, match="give rotate for a new one"):
        db.call("agent", action="token", name="bot")
    new = db.call("agent", action="token", name="bot", rotate=True).data["token"]
    conn = db.database.main.conn
    assert agents.by_token(conn, old) is None and agents.by_token(conn, new).name == "bot"
    db.call("agent", action="alter", name="bot", disable=True)
    assert agents.by_token(conn, new) is None
    db.call("agent", action="alter", name="bot", enable=True)
    assert agents.by_token(conn, new).name == "bot"
    db.call("agent", action="drop", name="bot")
    assert agents.by_token(conn, new) is None
    assert db.call("agent", action="list").data["agents"] == []
    with pytest.raises(ChronosError, match="was dropped; its worlds and history keep the name"):
        db.call("agent", action="create", name="BOT", rights=["read"])


def test_the_sql_statements(db):
    out = db.sql("CREATE AGENT bot WITH (rights = 'read, fork', max_query_ms = 2000)")
    assert out.results[0].tag.startswith("created agent bot (read, fork)")
    db.sql("ALTER AGENT bot SET (max_concurrent = 2, enabled = false, rights = 'read')")
    shown = db.call("agent", action="list").data["agents"][0]
    assert shown["rights"] == ["read"] and shown["enabled"] is False
    assert (shown["max_concurrent"], shown["max_query_ms"], shown["max_memory_mb"]) == (
        2,
        2000,
        None,
    )
    db.sql("ALTER AGENT bot SET (max_query_ms = null)")
    assert db.call("agent", action="list").data["agents"][0]["max_query_ms"] is None
    rows = db.sql("SHOW AGENTS").results[0]
    assert rows.columns[:3] == ["name", "rights", "enabled"] and rows.rows[0][:3] == (
        "bot",
        "read",
        "no",
    )
    db.sql("DROP AGENT bot")
    assert db.sql("SHOW AGENTS").results[0].rows == []
    db.sql("create table agentlike(a); drop table agentlike")  # (SQLite's CREATE and DROP stay)


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("CREATE AGENT bad/name", "unexpected"),
        ("CREATE AGENT b WITH (rights = 'fly')", "'rights'[0] must be"),
        ("CREATE AGENT b WITH (max_query_ms = 0)", "an integer of at least 1, or null"),
        ("CREATE AGENT b WITH (colour = 'red')", "unknown parameter 'colour'"),
        ("ALTER AGENT nobody SET (max_query_ms = 5)", "no agent nobody"),
        ("ALTER AGENT b SET (enabled = 'no')", "enabled is true or false"),
        ("DROP AGENT nobody", "no agent nobody"),
    ],
)
def test_bad_agent_statements_say_why_and_change_nothing(db, sql, words):
    db.sql("CREATE AGENT b WITH (rights = 'read')")
    before = db.call("agent", action="list").data
    with pytest.raises(ChronosError, match=words.replace("(", r"\(").replace("[", r"\[")):
        db.sql(sql)
    assert db.call("agent", action="list").data == before


def test_agents_through_the_cli(db, folder):
    db.close()
    made = run_cli(folder, "agent", "create", "bot", "--rights", "read,fork,write_own,merge_own")
    token = made.stdout.strip().splitlines()[-1]
    assert token.startswith("ca_")
    listed = run_cli(folder, "agent", "list").stdout
    assert "read, fork, write_own, merge_own" in listed and token not in listed
    run_cli(folder, "agent", "alter", "bot", "--max-query-ms", "2000", "--max-concurrent", "2")
    out = run_cli(folder, "agent", "alter", "bot", "--disable").stdout
    assert "disabled; max_concurrent 2, max_query_ms 2000" in out
    rotated = run_cli(folder, "agent", "token", "bot", "--rotate").stdout.strip().splitlines()[-1]
    with chronos_lite.open(folder) as db:
        assert agents.by_token(db.database.main.conn, token) is None
        db.call("agent", action="alter", name="bot", enable=True)
        assert agents.by_token(db.database.main.conn, rotated).name == "bot"
    bad = run_cli(folder, "agent", "create", "two words", check=False)
    assert bad.returncode != 0 and "'name' must be" in bad.stderr


def test_safe_mode_manages_no_agent(folder, db):
    db.sql("create table t(a)")
    db.close()
    server = Server(folder)
    try:
        server.initialize()
        names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
        assert "agent" not in names
        for sql in ("CREATE AGENT evil WITH (rights = 'admin')", "SHOW AGENTS", "SHOW AUDIT"):
            reply = server.call("sql", {"sql": sql})
            assert reply["isError"] is True and "safe mode" in reply["content"][0]["text"]
    finally:
        assert server.close() == 0
    with chronos_lite.open(folder) as again:
        assert again.call("agent", action="list").data["agents"] == []


@pytest.mark.parametrize("name", ["owner", "Owner", "app"])
def test_the_names_history_gives_others_are_no_agents(db, name):
    with pytest.raises(ChronosError, match="can't be an agent's name"):
        db.call("agent", action="create", name=name, rights=["read"])
    assert db.call("agent", action="list").data["agents"] == []
