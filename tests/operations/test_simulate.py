"""simulate and replay (issue 28): the same call makes the same worlds and scores, replay says
identical, and tells apart a script using the time, a changed world and a changed base; each
world's failure is reported without stopping the others; keep, order, prefix; safe mode and
agents; the SQL statements, MCP (the real `chronos mcp`) and the CLI (the real `chronos`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import run_cli
from mcp_lines import Server, tool_error

import chronos_lite
from chronos_lite import Caller, ChronosError

SCRIPT = (
    "update products set price = price * (0.9 + abs(random()) % 100 / 500.0) "
    "where category = 'tea'; update products set stock = $1 where id = 1 + $1"
)
SCORE = "select sum(price * expected_sales) from products"


@pytest.fixture
def shop(db) -> chronos_lite.Chronos:
    db.sql(
        "create table products(id integer primary key, category text, price real, "
        "expected_sales int, stock int)"
    )
    db.sql(
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < 60) "
        "insert into products(category, price, expected_sales, stock) select case when i % 3 = 0 "
        "then 'tea' else 'coffee' end, i, 10 + i % 7, 0 from n"
    )
    return db


def simulate(db, caller: Caller | None = None, **args):
    given = {"worlds": 6, "prefix": "p", "script": SCRIPT, "score": SCORE, **args}
    return db.call("simulate", caller, **given)


def rows(db, branch: str) -> list[dict]:
    return db.query("select * from products order by id", branch=branch)


def names(db) -> list[str]:
    return sorted(w.name for w in db.branches())


# --- the same call, the same worlds ------------------------------------------------------------


def test_the_same_call_twice_makes_the_same_worlds_and_scores(shop):
    first = simulate(shop, seed=7)
    made = {w.name: rows(shop, w.name) for w in shop.branches()}
    scores = [(o.name, o.score) for o in first.value.outcomes]
    for name in made:
        shop.discard(name)
    second = simulate(shop, seed=7)
    assert [(o.name, o.score) for o in second.value.outcomes] == scores
    assert {name: rows(shop, name) for name in made} == made
    assert len({s for _n, s in scores}) == 6  # (each world its own random numbers)
    other = simulate(shop, seed=8, prefix="q")
    assert [o.score for o in other.value.outcomes] != [s for _n, s in scores]


def test_threads_make_the_same_worlds_as_one(shop):
    one = simulate(shop, seed=3, threads=1, prefix="a")
    two = simulate(shop, seed=3, threads=2, prefix="b")
    assert [(o.index, o.score) for o in one.value.outcomes] == [
        (o.index, o.score) for o in two.value.outcomes
    ]
    for o in one.value.outcomes:
        assert rows(shop, f"a_{o.index}") == rows(shop, f"b_{o.index}")


def test_the_reply_is_the_specs_form(shop):
    reply = simulate(shop, seed=7, keep=2)
    lines = reply.text.splitlines()
    done = reply.value
    best = [o.name for o in done.outcomes]
    assert lines[0].startswith("6 worlds from main in ")
    assert lines[0].endswith(f" ms, best first; 0 failed; kept: {best[0]}, {best[1]}")
    assert (
        lines[1]
        == f"{best[0]} (index {done.outcomes[0].index}): score {done.outcomes[0].score!r}, kept"
    )
    assert (
        lines[3] == f"{best[2]} (index {done.outcomes[2].index}): score {done.outcomes[2].score!r}"
    )
    assert len(lines) == 7
    assert reply.data["kept"] == best[:2]


def test_more_than_twenty_worlds_are_said_in_a_count(shop):
    reply = simulate(
        shop,
        worlds=23,
        script="update products set stock = $1 where id = 1",
        score="select stock from products where id = 1",
        keep=1,
    )
    lines = reply.text.splitlines()
    assert len(lines) == 22 and lines[-1] == "(3 more)"
    assert lines[1] == "p_22 (index 22): score 22, kept"
    assert names(shop) == ["p_22"]


# --- replay ------------------------------------------------------------------------------------


def test_replay_of_each_kept_world_is_identical(shop):
    done = simulate(shop, seed=11, keep=3).value
    shop.sql("update products set price = 1 where category = 'tea'")  # (main moves on)
    for o in done.kept:
        reply = shop.call("replay", world=o.name)
        assert reply.text == (
            f"{o.name}: identical (0 rows differ; score {o.score!r} now, {o.score!r} recorded)"
        )
    assert names(shop) == sorted(o.name for o in done.kept)  # (the replays went)


def test_replay_as_keeps_it_an_ordinary_world(shop):
    simulate(shop, seed=1, keep=1)
    best = shop.branches()[0].name
    reply = shop.call("replay", world=best, **{"as": "again"})
    assert reply.text.endswith("; kept as again") and reply.value.identical
    assert rows(shop, "again") == rows(shop, best)
    assert shop.diff("again").rows == shop.diff(best).rows > 0
    assert shop.replay("again").identical  # (it records the inputs too)
    shop.merge("again")
    assert rows(shop, "main") == rows(shop, best)


def test_a_script_using_the_time_is_told_apart(shop):
    simulate(
        shop,
        worlds=2,
        script="update products set price = julianday('now') where id = 1",
        score="select price from products where id = 1",
    )
    reply = shop.call("replay", world="p_0")
    assert reply.text.startswith("p_0: differs (1 row differs; score ")
    assert not reply.value.identical
    assert reply.data["differences"][0]["id"] == "1"


def test_a_changed_world_and_a_changed_base_are_told_apart(shop):
    simulate(shop, worlds=2, keep="all")
    shop.sql("update products set stock = 99 where id = 5", branch="p_0")
    changed = shop.call("replay", world="p_0")
    assert changed.text.startswith("p_0: differs (1 row differs; score ")
    assert changed.value.score == changed.value.recorded  # (the score reads no stock)
    # main changed since; the world's record now says it was forked after that change
    shop.sql("update products set price = 1000 where category = 'tea'")
    record = dict(shop.world("p_1").meta["simulation"])
    from datetime import datetime

    record["at"] = datetime.now().isoformat(timespec="microseconds")
    shop.set_meta("p_1", {"simulation": record})
    based = shop.call("replay", world="p_1")
    assert based.value.differ == 20 and not based.value.identical
    assert based.value.score != based.value.recorded


def test_replay_refuses_a_world_no_simulation_kept(shop):
    shop.fork("plain")
    with pytest.raises(ChronosError, match="plain wasn't kept by simulate"):
        shop.call("replay", world="plain")
    with pytest.raises(ChronosError) as exc:
        shop.call("replay", world="nope")
    assert exc.value.code == "P0002"
    simulate(shop, worlds=1)
    with pytest.raises(ChronosError, match="pick a name other than p_0"):
        shop.call("replay", world="p_0", **{"as": "p_0"})
    with pytest.raises(ChronosError, match="already exists"):
        shop.call("replay", world="p_0", **{"as": "plain"})
    assert names(shop) == ["p_0", "plain"]


# --- failures, keep, order, prefix -------------------------------------------------------------


def test_a_world_that_fails_is_reported_and_the_others_go_on(shop):
    reply = simulate(
        shop,
        script="insert into products(id, price) values (case when $1 % 2 = 1 then 1 else "
        "1000 + $1 end, $1)",
        score="select price from products where id = 1000 + $1 and $1 != 4",
        keep="all",
    )
    done = reply.value
    failed = {o.index: o.error for o in done.failed}
    assert set(failed) == {1, 3, 5, 4}
    assert "UNIQUE constraint failed: products.id" in failed[1]
    assert "the score gave 0 row(s) of 1 column(s): it must give one number" == failed[4]
    assert [o.index for o in done.kept] == [2, 0]
    assert names(shop) == ["p_0", "p_2"]
    assert reply.text.splitlines()[0].endswith("; 4 failed; kept: p_2, p_0")
    assert "p_1 (index 1): failed: " in reply.text


def test_keep_order_and_prefix(shop):
    reply = simulate(
        shop,
        worlds=5,
        prefix="low",
        script="update products set stock = 10 - $1 where id = 1",
        score="select stock from products where id = 1",
        keep=2,
        order="asc",
    )
    assert [o.score for o in reply.value.outcomes] == [6, 7, 8, 9, 10]
    assert names(shop) == ["low_3", "low_4"]
    assert shop.get("products", 1, branch="low_4")["stock"] == 6
    nothing = simulate(shop, worlds=2, prefix="none", keep=0)
    assert nothing.text.splitlines()[0].endswith("; 0 failed; kept: none")
    assert names(shop) == ["low_3", "low_4"]


def test_names_taken_and_bad_calls_change_nothing(shop):
    shop.fork("p_3")
    before = names(shop)
    with pytest.raises(ChronosError, match="branch 'p_3' already exists: pick another prefix"):
        simulate(shop)
    for bad, words in [
        ({"script": "FORK WORLD x"}, "FORK WORLD is a world statement"),
        ({"script": " ; "}, "'script' holds no statement"),
        ({"score": "select 1; select 2", "prefix": "z"}, "'score' is one SELECT"),
        ({"worlds": 0, "prefix": "z"}, "'worlds' must be"),
        ({"order": "up", "prefix": "z"}, "'order' must be"),
        ({"keep": "some", "prefix": "z"}, "'keep' must be"),
        ({"from": "nope", "prefix": "z"}, "nope"),
    ]:
        with pytest.raises(ChronosError, match=words):
            simulate(shop, **bad)
    assert names(shop) == before


def test_a_score_that_writes_is_refused_per_world(shop):
    reply = simulate(shop, worlds=2, score="delete from products returning 1")
    assert len(reply.value.failed) == 2 and names(shop) == []


def test_from_a_world_and_from_a_moment(shop):
    shop.fork("base")
    shop.sql("update products set stock = 5", branch="base")
    reply = simulate(
        shop,
        worlds=2,
        script="select 1",
        score="select sum(stock) from products",
        **{"from": "base"},
    )
    assert [o.score for o in reply.value.outcomes] == [300, 300]
    assert shop.world("p_0").parent == "base"
    assert shop.replay("p_0").identical


def test_the_sql_statements(shop):
    reply = shop.call(
        "sql",
        sql="SIMULATE 3 WORLDS PREFIX s SCRIPT 'update products set stock = $1 where id = 1' "
        "SCORE 'select stock from products where id = 1' KEEP 1 ORDER asc SEED 4 THREADS 1",
    )
    assert "3 worlds from main in " in reply.text and "kept: s_0" in reply.text
    again = shop.call("sql", sql="REPLAY WORLD s_0 AS s_again")
    assert again.text == "s_0: identical (0 rows differ; score 0 now, 0 recorded); kept as s_again"
    assert names(shop) == ["s_0", "s_again"]


# --- who may ----------------------------------------------------------------------------------


def test_safe_mode_keeps_its_own_worlds_and_refuses_world_statements(shop):
    safe = Caller(mode="safe", name="safe")
    simulate(shop, safe, worlds=3, keep=1)
    kept = shop.branches()[0]
    assert kept.wid in safe.own_worlds and len(safe.own_worlds) == 1
    shop.call("sql", safe, sql="update products set stock = 1 where id = 1", branch=kept.name)
    with pytest.raises(ChronosError, match="world statement"):
        simulate(shop, safe, script="MERGE WORLD x", prefix="m")
    settings = simulate(shop, safe, worlds=1, prefix="s", script="pragma user_version = 3")
    assert "safe mode: agents can't change settings" in settings.value.failed[0].error
    shop.call("replay", safe, world=kept.name, **{"as": "mine"})
    assert shop.world("mine").wid in safe.own_worlds
    with pytest.raises(ChronosError, match="safe mode"):
        shop.call("sql", safe, sql="update products set stock = 2")


def test_an_agent_needs_fork_and_write_own(shop):
    shop.call("agent", action="create", name="reader", rights=["read"])
    shop.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
    with pytest.raises(ChronosError, match="agent reader can't simulate") as exc:
        simulate(shop, shop.as_agent("reader"))
    assert exc.value.code == "42501"
    simulate(shop, shop.as_agent("bot"), worlds=2, keep=1, prefix="b")
    (kept,) = shop.branches()
    assert kept.owner == "bot"
    with pytest.raises(ChronosError, match="agent reader can't replay"):
        shop.call("replay", shop.as_agent("reader"), world=kept.name)
    assert shop.call("replay", shop.as_agent("bot"), world=kept.name).value.identical


# --- MCP and the CLI ---------------------------------------------------------------------------


@pytest.fixture
def server(shop, folder: Path) -> Iterator[Server]:
    shop.close()
    s = Server(folder)
    s.initialize()
    yield s
    s.kill()


def test_over_mcp_in_safe_mode(server: Server):
    listed = {t["name"] for t in server.result("tools/list")["tools"]}
    assert {"simulate", "replay"} <= listed
    args = {"worlds": 4, "prefix": "m", "script": SCRIPT, "score": SCORE, "keep": 2, "seed": 5}
    result = server.call("simulate", args)
    assert result["isError"] is False
    text = result["content"][0]["text"]
    assert "4 worlds from main in " in text and "0 failed; kept: " in text
    kept = result["structuredContent"]["kept"]
    again = server.call("replay", {"world": kept[0]})
    assert again["content"][0]["text"].startswith(f"{kept[0]}: identical (0 rows differ; score ")
    put = server.call(
        "put",
        {"table": "products", "id": "1", "record": {"stock": 3}, "branch": kept[1]},
    )
    assert put["isError"] is False  # (a kept world is the session's own)
    refused = server.call("simulate", {**args, "prefix": "x", "script": "DISCARD WORLD m_0"})
    assert "world statement" in tool_error(refused)


def test_the_cli(shop, folder: Path):
    shop.close()
    out = run_cli(
        folder,
        "simulate",
        "--worlds",
        "3",
        "--prefix",
        "c",
        "--seed",
        "2",
        "--keep",
        "1",
        "--script",
        SCRIPT,
        "--score",
        SCORE,
    )
    first = out.stdout.splitlines()[0]
    assert first.startswith("3 worlds from main in ") and "0 failed; kept: c_" in first
    kept = first.rsplit("kept: ", 1)[1]
    again = run_cli(folder, "replay", kept, "--json")
    data = json.loads(again.stdout)
    assert data["identical"] is True and data["rows_differ"] == 0
    bad = run_cli(
        folder,
        "simulate",
        "--worlds",
        "2",
        "--prefix",
        "d",
        "--script",
        "FORK WORLD y",
        "--score",
        "select 1",
        check=False,
    )
    assert bad.returncode == 1 and "world statement" in bad.stderr
