"""`chronos mcp` through the MCP SDK client: the values JSON can't hold (blobs, the infinities,
integers past 2^53) go out and come back as they were (the registry's and the CLI's run of the
same: test_values.py)."""

from __future__ import annotations

import json

import pytest
from test_mcp import connect, ok

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
