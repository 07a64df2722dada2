"""A tool result sized for an agent: its text and structuredContent together within 50,000
characters by default (Claude Code keeps a result that size in the conversation), whatever the
tool and the values; a long value cut in the text pads its column only as wide as it shows."""

from __future__ import annotations

import json

import pytest

from chronos_lite.mcp.core import MAX_RESULT_CHARS, MAX_ROWS, Server
from chronos_lite.operations.registry import Caller

LIMIT = 50_000


@pytest.fixture
def server(db):
    db.sql("create table orders(id integer primary key, customer text, note text, total real)")
    db.sql(
        "with recursive s(v) as (select 1 union all select v + 1 from s where v < 3000) "
        "insert into orders select v, 'customer ' || v, case v when 3 then "
        "printf('%.3000c', 'x') when 2500 then printf('%.100000c', 'y') else 'ok' end, "
        "v * 1.5 from s"
    )
    db.fork("w")
    db.sql("update orders set note = printf('%.600c', 'z') where id <= 2000", branch="w")
    caller = Caller(name="owner", mode="owner", max_rows=MAX_ROWS, max_chars=MAX_RESULT_CHARS)
    srv = Server(db.database, caller, str(db.folder))
    srv.answer({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    return srv


def call(srv: Server, tool: str, **args) -> dict:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    message["params"] = {"name": tool, "arguments": args}
    result = srv.answer(message)["result"]
    assert not result["isError"], result["content"][0]["text"]
    return result


def size(result: dict) -> int:
    structured = json.dumps(result.get("structuredContent"), ensure_ascii=False)
    return len(result["content"][0]["text"]) + len(structured)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("sql", {"sql": "select * from orders"}),
        ("sql", {"sql": "select * from orders", "branch": "w"}),
        ("find", {"table": "orders", "limit": 1000, "branch": "w"}),
        ("diff", {"branch": "w", "limit": 1000}),
        ("merge_preview", {"branch": "w", "limit": 1000}),
        ("get", {"table": "orders", "id": "2500"}),
        ("history", {"branch": "w", "limit": 1000}),
    ],
)
def test_text_and_data_together_within_the_limit(server, tool, args):
    assert size(call(server, tool, **args)) <= LIMIT


def test_a_cut_value_pads_its_column_only_as_wide_as_it_shows(server):
    result = call(server, "sql", sql="select id, note from orders")
    lines = result["content"][0]["text"].split("\n")
    widest_shown = max(len(line.split("|")[1].strip()) for line in lines[2:-2] if "|" in line)
    assert widest_shown < 300 and len(lines[1]) <= len(" id | ") + widest_shown + 2
    rows = result["structuredContent"]["results"][0]["rows"]
    # a 3,000-character value: the data holds it whole, the text its beginning, and the other
    # rows are not crowded out by the width it would take uncut (7 rows would fit)
    assert [3, "x" * 3000] in rows and len(rows) >= 60
