"""`chronos mcp` through the MCP SDK client: the values JSON can't hold (blobs, the infinities,
integers past 2^53), names SQLite takes and the ids diff prints go out and come back as they
were (the registry's and the CLI's run of the same: test_values.py, test_names.py)."""

from __future__ import annotations

import json

import pytest
from test_mcp import connect, ok, refused

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def things(db):
    db.sql("create table things(id integer primary key, b blob, r real, n int)")
    db.sql(
        "insert into things values "
        "(1, x'00ff10', -9e999, 9223372036854775807), (2, x'', 9e999, 9007199254740993)"
    )
    return db


@pytest.fixture
def odd(db):
    db.sql('create table "my things/2026"(id integer primary key, b blob, r real, n int)')
    db.sql(
        'create table "order lines"(order_id int, "line no" text, qty, '
        'primary key (order_id, "line no"))'
    )
    return db


async def test_values_read_by_get_and_sql_come_back_from_put_as_they_were(things, folder):
    async with connect(folder) as c:
        await ok(c, "fork", {"name": "w"})
        for ident in ("1", "2"):
            got = await ok(c, "get", {"table": "things", "id": ident})
            row = got.structured_content["row"]
            text = got.content[0].text
            assert text.startswith(f"things/{ident} ")
            assert json.loads(text.split(" ", 1)[1]) == row  # (the text's JSON: the same)
            await ok(c, "put", {"table": "things", "id": ident, "record": row, "branch": "w"})
        first = (await ok(c, "get", {"table": "things", "id": "1"})).structured_content
        assert first["row"] == {
            "id": 1,
            "b": {"$blob": "00ff10"},
            "r": "-Infinity",
            "n": 9223372036854775807,
        }
        result = await ok(c, "sql", {"sql": "select * from things order by id"})
        rows = result.structured_content["results"][0]["rows"]
        assert rows == [
            [1, {"$blob": "00ff10"}, "-Infinity", 9223372036854775807],
            [2, {"$blob": ""}, "Infinity", 9007199254740993],
        ]
        diff = await ok(c, "diff", {"branch": "w"})
        assert diff.structured_content["count"] == 0  # written back as they were
    look = "select id, hex(b), typeof(b), r, n from things order by id"
    assert things.query(look, branch="w") == things.query(look)


async def test_names_and_ids_as_diff_prints_them(odd, folder):
    async with connect(folder, "--allow-merge") as c:
        await ok(c, "fork", {"name": "w"})
        writes = [("17,a b", 2), ('[17,"x,y"]', 3), ("18,", 4)]
        for ident, qty in writes:
            await ok(
                c,
                "put",
                {"table": "order lines", "id": ident, "record": {"qty": qty}, "branch": "w"},
            )
        await ok(
            c,
            "put",
            {"table": "my things/2026", "id": "3", "record": {"b": {"$blob": "01"}}, "branch": "w"},
        )
        diff = (await ok(c, "diff", {"branch": "w"})).structured_content["changes"]
        keys = [d["key"] for d in diff]
        assert keys == [
            '"my things/2026"/3',
            "order lines/17,a b",
            'order lines/[17,"x,y"]',
            'order lines/[18,""]',
        ]
        for d in diff:
            got = await ok(c, "get", {"table": d["table"], "id": d["id"], "branch": "w"})
            assert got.structured_content["row"] == d["ours"]
        preview = await ok(c, "merge_preview", {"branch": "w", "only_keys": keys[1:3]})
        assert [r["key"] for r in preview.structured_content["rows"]] == keys[1:3]
        await refused(c, "merge", {"branch": "w", "only_keys": ["order lines/17"]}, "composite key")
        await refused(
            c, "merge", {"branch": "w", "only_keys": ["my things/3"]}, "names no table", "table/id"
        )
        by_hand = {keys[3]: {"qty": "Infinity"}, keys[0]: {"b": {"$blob": "beef"}}}
        await ok(c, "merge", {"branch": "w", "only_keys": [keys[0], keys[3]], "rows": by_hand})
        await ok(c, "delete", {"table": "order lines", "id": '[17,"x,y"]', "branch": "w"})
    assert odd.query('select qty from "order lines" where "line no" = \'\'') == [
        {"qty": float("inf")}
    ]
    assert odd.get("my things/2026", 3) == {"id": 3, "b": b"\xbe\xef", "r": None, "n": None}
    assert odd.get("order lines", [17, "x,y"], branch="w") is None
