"""A call whose client sent a progressToken gets notifications/progress as it goes (the
official SDK's progress_callback over stdio): what the operation reports, or the seconds it
has run; each larger than the last; none without a token and none after the reply."""

from __future__ import annotations

import time

import anyio
import pytest
from helpers import CHRONOS
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from chronos_lite import progress
from chronos_lite.mcp import progressnotes

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def connect(folder, *flags: str) -> Client:
    return Client(StdioServerParameters(command=CHRONOS, args=["mcp", str(folder), *flags]))


@pytest.fixture
def big(db, folder):
    db.sql("create table t(id integer primary key, v int)")
    db.sql(
        "with recursive s(x) as (select 1 union all select x + 1 from s where x < 60000) "
        "insert into t select x, x from s"
    )
    db.fork("w")
    db.sql("update t set v = v + 1", branch="w")
    return folder


async def test_a_long_merge_sends_its_steps(big):
    seen: list[tuple[float, float | None, str | None]] = []

    async def note(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    with anyio.fail_after(120):
        async with connect(big, "--allow-merge") as c:
            result = await c.call_tool("merge", {"branch": "w"}, progress_callback=note)
            assert not result.is_error, result.content[0].text
            count = len(seen)
            await c.call_tool("branches", {}, progress_callback=note)  # (a quick call: none)
    assert seen, "no progress notification came"
    values = [v for v, _t, _m in seen]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert any(m and "writing rows" in m for _v, _t, m in seen)
    assert len(seen) == count


async def test_a_long_query_sends_the_seconds_it_has_run(db, folder):
    seen: list[str | None] = []

    async def note(value: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    slow = (
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < 10000000) "
        "select count(*) from n"
    )
    with anyio.fail_after(120):
        async with connect(folder, "--max-query-ms", "0") as c:
            started = time.monotonic()
            await c.call_tool("sql", {"sql": slow}, progress_callback=note)
            took = time.monotonic() - started
    if took > 1.5:  # (a machine that runs it in under a second has nothing to say)
        assert "running for 1 s" in seen


def test_notes_rise_across_steps_and_stop_when_closed():
    sent: list[dict] = []
    notes = progressnotes.Notes("t", sent.append)
    with progress.listening(notes):
        progress.report("reading", 5)
        time.sleep(progressnotes.LEAST_GAP)
        progress.report("writing", 1, 10)
        progress.report("writing", 10, 10)  # (a step's end: sent however soon)
        notes.close()
        progress.report("writing", 11, 12)
    values = [m["params"]["progress"] for m in sent]
    assert values == [5, 6, 15]
    assert sent[-1]["params"]["total"] == 15 and sent[-1]["params"]["progressToken"] == "t"
    assert sent[0]["method"] == "notifications/progress"


def test_a_token_is_a_string_or_an_integer():
    assert progressnotes.token_of({"_meta": {"progressToken": 7}}) == 7
    assert progressnotes.token_of({"_meta": {"progressToken": "a"}}) == "a"
    assert progressnotes.token_of({"_meta": {"progressToken": True}}) is None
    assert progressnotes.token_of({"_meta": {"progressToken": [1]}}) is None
    assert progressnotes.token_of({}) is None
