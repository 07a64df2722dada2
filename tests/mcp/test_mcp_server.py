"""The MCP server in process (Server.answer): details the subprocess tests would make slow."""

from __future__ import annotations

import json

import pytest

from chronos_lite.mcp.core import MAX_ROWS, Server
from chronos_lite.operations.registry import Caller


@pytest.fixture
def server(shop):
    shop.sql("create table orders(id integer primary key, user_id int references users(id))")
    srv = Server(
        shop.database, Caller(name="mcp", mode="safe", max_rows=MAX_ROWS), str(shop.folder)
    )
    srv.answer({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    return srv


def call(srv: Server, tool: str, **args) -> dict:
    msg = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": args},
    }
    return srv.answer(msg)["result"]


def text(result: dict) -> str:
    return result["content"][0]["text"]


def test_a_result_holds_at_most_max_rows_and_says_how_to_page(server, shop):
    shop.sql(
        "with recursive c(i) as (select 1 union all select i + 1 from c where i < 1200) "
        "insert into orders(user_id) select 1 from c"
    )
    result = call(server, "sql", sql="select id from orders order by id")
    assert "(showing the first 1000 rows; there are more: page with LIMIT 1000 OFFSET 1000" in (
        text(result)
    )
    data = result["structuredContent"]["results"][0]
    assert len(data["rows"]) == 1000 and data["more"] is True
    result = call(server, "sql", sql="select id from orders limit 10")
    assert result["structuredContent"]["results"][0]["more"] is False


def test_safe_mode_lets_sqlite_report_a_typo_and_reads_pragmas(server):
    result = call(server, "sql", sql="selec * from users")
    assert result["isError"] and "syntax error" in text(result)
    result = call(server, "sql", sql="pragma table_info(users)")
    assert not result["isError"] and "email" in text(result)
    result = call(server, "sql", sql="pragma foreign_keys = off")
    assert result["isError"] and "can't change settings" in text(result)
    result = call(server, "put", table="users", id="1", record={"name": "x"})
    assert "you haven't forked one yet: call fork first" in text(result)
    call(server, "fork", name="mine")
    result = call(server, "put", table="users", id="1", record={"name": "x"})
    assert "your branches: mine" in text(result)


def test_an_integer_id_says_to_write_it_as_a_string(server):
    result = call(server, "get", table="users", id=1)
    assert text(result) == "'id' must be a string, not 1 (write it as a string: \"1\")"


def test_describe_shows_foreign_keys(server):
    assert "references users(id)" in text(call(server, "describe", table="orders"))


def test_replies_with_a_lone_surrogate_are_still_json(server):
    reply = server.answer_line(b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}')
    from chronos_lite.mcp.core import encode

    line = encode(reply)
    assert json.loads(line)["error"]["code"] == -32601


def test_time_limits_by_mode():
    from chronos_lite.operations.calllimits import time_limit

    assert time_limit(Caller(name="mcp", mode="safe")) == 30_000  # safe mode: 30 s by default
    assert time_limit(Caller()) is None  # the database's own user: none unless asked
    assert time_limit(Caller(mode="safe", max_query_ms=0)) is None  # 0: none
    assert time_limit(Caller(max_query_ms=250)) == 250


def test_a_call_past_its_limit_is_stopped_in_process(server, shop):
    server.caller.max_query_ms = 300
    forever = "with recursive n(i) as (select 1 union all select i + 1 from n) select max(i) from n"
    result = call(server, "sql", sql=forever)
    assert result["isError"] and result["structuredContent"]["code"] == "57014"
    assert "its limit of 300 ms" in text(result)
    assert not call(server, "sql", sql="select 1")["isError"]
