"""A rollback on a world takes back what chronos set up for it within the transaction.

A world reads a table as main's own until it first writes it; then the table gets TEMP tables,
views and triggers of the world's own, made inside the call's transaction. A call that fails
(a UNIQUE clash), or rolls back itself (ROLLBACK, ROLLBACK TO a savepoint), takes them back
with its writes: the connection's next statement, and its next call, find the table as it is
and use it (issue 23, finding 9: after a failed insert, every get, put, delete and sql on the
table failed with "no such table: temp.log" for the rest of the MCP session).
"""

from __future__ import annotations

import pytest
from mcp_lines import Server, tool_error

DEV = ["read", "fork", "write_own", "write_main", "merge_own"]


@pytest.fixture
def logged(db):
    db.sql("create table log(id integer primary key, what text)")
    db.sql("insert into log values (7, 'main row')")
    db.call("agent", action="create", name="bot", rights=DEV)
    return db


def test_a_failed_insert_leaves_the_table_usable_through_the_mcp_server(logged, folder):
    s = Server(folder, "--agent", "bot")
    try:
        s.initialize()
        assert s.call("fork", {"name": "w"})["isError"] is False
        clash = {"branch": "w", "sql": "insert into log(id, what) values (1,'a'),(1,'b')"}
        assert "UNIQUE constraint failed: log.id" in tool_error(s.call("sql", clash))
        got = s.call("get", {"branch": "w", "table": "log", "id": "7"})
        assert got["isError"] is False, got
        assert got["structuredContent"]["row"] == {"id": 7, "what": "main row"}
        assert "no row" in tool_error(s.call("get", {"branch": "w", "table": "log", "id": "1"}))
        put = {"branch": "w", "table": "log", "id": "2", "record": {"what": "x"}}
        assert s.call("put", put)["isError"] is False
        assert s.call("delete", {"branch": "w", "table": "log", "id": "7"})["isError"] is False
        read = s.call("sql", {"branch": "w", "sql": "select id, what from log order by id"})
        assert read["structuredContent"]["results"][0]["rows"] == [[2, "x"]], read
    finally:
        s.kill()
    assert logged.query("select id, what from log") == [{"id": 7, "what": "main row"}]
    assert logged.query("select id, what from log", branch="w") == [{"id": 2, "what": "x"}]
    outcomes = [(e["tool"], e["outcome"]) for e in logged.call("audit").data["entries"]]
    assert outcomes == [
        ("delete", "ok"),
        ("put", "ok"),
        ("sql", "error"),
        ("fork", "ok"),
    ]


@pytest.mark.parametrize(
    "undo",
    [
        "begin; insert into log values (1, 'a'); rollback",
        "begin; savepoint s; insert into log values (1, 'a'); rollback to s; release s; commit",
    ],
)
def test_the_same_call_goes_on_after_its_own_rollback(logged, undo):
    bot = logged.as_agent("bot")
    logged.call("fork", caller=bot, name="w")
    script = f"{undo}; insert into log values (3, 'after'); select id, what from log order by id"
    reply = logged.call("sql", caller=bot, branch="w", sql=script)
    assert reply.data["results"][-1]["rows"] == [[3, "after"], [7, "main row"]], reply.text
    assert logged.query("select id from log") == [{"id": 7}]
    assert logged.query("select id from log order by id", branch="w") == [{"id": 3}, {"id": 7}]
