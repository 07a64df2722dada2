"""One body per operation: each Python API method runs the operation's own handler, so on the
same state it does what ``db.call`` of the same operation does: the same end state (rows on
every branch, the branches, the events recorded), the same refusal, word for word, and the
engine object the reply carries as its value.

Each case runs on two databases built alike, the method on one and ``db.call`` on the other."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import chronos_lite
from chronos_lite import Caller, ChronosError
from chronos_lite.api import Chronos
from chronos_lite.storage.worlds import World

BOT = ["read", "fork", "write_own", "merge_own"]
SIM_SCRIPT = "update users set name = name || (abs(random()) % 10) where id = 1"
SIM_SCORE = "select length(name) + unicode(substr(name, -1)) from users where id = 1"


def build(folder: Path) -> Chronos:
    """Main with users 1-3; world w (row 1 renamed, row 3 deleted); world c (row 2 renamed
    while main renamed it too: a conflict); world p with a world forked from it; world d, the
    bot's, deleting row 2 under a policy that has a person confirm any delete."""
    db = chronos_lite.init(folder)
    db.sql("create table users(id integer primary key, name text)")
    db.sql("insert into users values (1, 'Ada'), (2, 'Bo'), (3, 'Cy')")
    db.fork("w", meta={"task": "tidy"})
    db.sql(
        "update users set name = 'Ada L.' where id = 1; delete from users where id = 3", branch="w"
    )
    db.fork("c")
    db.sql("update users set name = 'Bob' where id = 2", branch="c")
    db.sql("update users set name = 'Boris' where id = 2")
    db.fork("p")
    db.fork("p-child", source="p")
    db.call("agent", action="create", name="bot", rights=BOT)
    db.call("set_merge_policy", name="careful", rules={"confirm_deletes_over": 0}, agents=["bot"])
    bot = db.as_agent("bot")
    db.call("fork", bot, name="d")
    db.call("sql", bot, branch="d", sql="delete from users where id = 2")
    return db


def state(db: Chronos, folder: Path) -> dict[str, Any]:
    """What a call may change: each branch's rows, the branches, and the events (but when)."""
    branches = db.database.worlds()
    out: dict[str, Any] = {
        "branches": [(w.name, w.parent, _meta(w.meta), w.owner, w.version) for w in branches]
    }
    for name in ["main", *(w.name for w in branches)]:
        for table in sorted(db.database.tables_for(db.database.resolve(name))):
            out[f"{name}/{table}"] = db.query(f'select * from "{table}" order by 1', branch=name)
    conn = sqlite3.connect(f"file:{folder / 'chronos.db'}?mode=ro", uri=True)
    try:
        events = conn.execute("select world, kind, actor, run, rows from _chronos_events")
        out["events"] = sorted(events.fetchall(), key=repr)  # (simulate's worlds run at once)
    finally:
        conn.close()
    return out


Call = Callable[[Chronos], Any]

# name: (the API method's call, the same operation through db.call)
CASES: dict[str, tuple[Call, Call]] = {
    "sql": (
        lambda db: db.sql("update users set name = $1 where id = 1", "Al"),
        lambda db: db.call("sql", sql="update users set name = $1 where id = 1", params=["Al"]),
    ),
    "sql on a world": (
        lambda db: db.sql("insert into users values (7, 'G')", branch="w"),
        lambda db: db.call("sql", sql="insert into users values (7, 'G')", branch="w"),
    ),
    "sql refused: no table": (
        lambda db: db.sql("delete from nobody"),
        lambda db: db.call("sql", sql="delete from nobody"),
    ),
    "sql refused: a branch as it was": (
        lambda db: db.sql("delete from users", branch="main@-1 second"),
        lambda db: db.call("sql", sql="delete from users", branch="main@-1 second"),
    ),
    "query": (
        lambda db: db.query("select name from users where id = $1", 2, branch="w"),
        lambda db: db.call(
            "sql", sql="select name from users where id = $1", params=[2], branch="w"
        ),
    ),
    "find": (
        lambda db: db.find("users", {"name": "Ada L."}, limit=5, branch="w"),
        lambda db: db.call("find", table="users", where={"name": "Ada L."}, limit=5, branch="w"),
    ),
    "find refused: no field": (
        lambda db: db.find("users", {"nick": "Bo"}),
        lambda db: db.call("find", table="users", where={"nick": "Bo"}),
    ),
    "get": (
        lambda db: db.get("users", 1, branch="w"),
        lambda db: db.call("get", table="users", id="1", branch="w"),
    ),
    "get refused: no table": (
        lambda db: db.get("nobody", 1),
        lambda db: db.call("get", table="nobody", id="1"),
    ),
    "put": (
        lambda db: db.put("users", 9, {"name": "Z"}, branch="w"),
        lambda db: db.call("put", table="users", id="9", record={"name": "Z"}, branch="w"),
    ),
    "put refused: no column": (
        lambda db: db.put("users", 1, {"nope": 1}),
        lambda db: db.call("put", table="users", id="1", record={"nope": 1}),
    ),
    "delete": (
        lambda db: db.delete("users", [2]),
        lambda db: db.call("delete", table="users", id="2"),
    ),
    "delete refused: a world that isn't there": (
        lambda db: db.delete("users", 2, branch="gone"),
        lambda db: db.call("delete", table="users", id="2", branch="gone"),
    ),
    "fork": (
        lambda db: db.fork("n", meta={"task": "t"}),
        lambda db: db.call("fork", name="n", meta={"task": "t"}),
    ),
    "fork from a world": (
        lambda db: db.fork("n", source="w"),
        lambda db: db.call("fork", name="n", **{"from": "w"}),
    ),
    "fork for an owner": (
        lambda db: db.fork("n", owner="ana"),
        lambda db: db.call("fork", Caller(name="ana"), name="n"),
    ),
    "fork refused: the name is taken": (
        lambda db: db.fork("w"),
        lambda db: db.call("fork", name="w"),
    ),
    "set_meta": (
        lambda db: db.set_meta("w", {"task": None, "note": "n"}),
        lambda db: db.call("set_meta", branch="w", meta={"task": None, "note": "n"}),
    ),
    "set_meta refused: main": (
        lambda db: db.set_meta("main", {"a": 1}),
        lambda db: db.call("set_meta", branch="main", meta={"a": 1}),
    ),
    "discard": (
        lambda db: db.discard("w"),
        lambda db: db.call("discard", branch="w"),
    ),
    "discard refused: a world forked from it": (
        lambda db: db.discard("p"),
        lambda db: db.call("discard", branch="p"),
    ),
    "discard with cascade": (
        lambda db: db.discard("p", cascade=True),
        lambda db: db.call("discard", branch="p", cascade=True),
    ),
    "branches": (lambda db: db.branches(), lambda db: db.call("branches")),
    "diff": (lambda db: db.diff("w"), lambda db: db.call("diff", branch="w")),
    "diff to": (lambda db: db.diff("w", to="c"), lambda db: db.call("diff", branch="w", to="c")),
    "diff refused: no such world": (
        lambda db: db.diff("gone"),
        lambda db: db.call("diff", branch="gone"),
    ),
    "merge": (lambda db: db.merge("w"), lambda db: db.call("merge", branch="w")),
    "merge refused: a conflict": (
        lambda db: db.merge("c"),
        lambda db: db.call("merge", branch="c"),
    ),
    "merge settled: theirs": (
        lambda db: db.merge("c", resolve="theirs"),
        lambda db: db.call("merge", branch="c", resolve="theirs"),
    ),
    "merge of a part": (
        lambda db: db.merge("w", only_keys=["users/3"]),
        lambda db: db.call("merge", branch="w", only_keys=["users/3"]),
    ),
    "merge refused: a world forked from it": (
        lambda db: db.merge("p"),
        lambda db: db.call("merge", branch="p"),
    ),
    "merge refused: deletes to confirm": (
        lambda db: db.merge("d"),
        lambda db: db.call("merge", branch="d"),
    ),
    "merge refused: a wrong count confirmed": (
        lambda db: db.merge("d", confirm_deletes=3),
        lambda db: db.call("merge", branch="d", confirm_deletes=3),
    ),
    "merge with the count confirmed": (
        lambda db: db.merge("d", confirm_deletes=1),
        lambda db: db.call("merge", branch="d", confirm_deletes=1),
    ),
    "merge refused: a stale version": (
        lambda db: db.merge("w", version=99),
        lambda db: db.call("merge", branch="w", version=99),
    ),
    "rebase": (
        lambda db: db.rebase("c", resolve="ours"),
        lambda db: db.call("rebase", branch="c", resolve="ours"),
    ),
    "rebase refused: a conflict": (
        lambda db: db.rebase("c"),
        lambda db: db.call("rebase", branch="c"),
    ),
    "simulate": (
        lambda db: db.simulate(3, "s", SIM_SCRIPT, SIM_SCORE, keep=2, seed=4, threads=1),
        lambda db: db.call(
            "simulate",
            worlds=3,
            prefix="s",
            script=SIM_SCRIPT,
            score=SIM_SCORE,
            keep=2,
            seed=4,
            threads=1,
        ),
    ),
    "simulate refused: no such branch": (
        lambda db: db.simulate(1, "s", SIM_SCRIPT, SIM_SCORE, source="nope"),
        lambda db: db.call(
            "simulate", worlds=1, prefix="s", script=SIM_SCRIPT, score=SIM_SCORE, **{"from": "nope"}
        ),
    ),
    "replay": (
        lambda db: (db.simulate(2, "s", SIM_SCRIPT, SIM_SCORE, keep=1), db.replay("s_1", "r"))[1],
        lambda db: (
            db.call("simulate", worlds=2, prefix="s", script=SIM_SCRIPT, score=SIM_SCORE, keep=1),
            db.call("replay", world="s_1", **{"as": "r"}),
        )[1],
    ),
    "replay refused: not simulated": (
        lambda db: db.replay("w"),
        lambda db: db.call("replay", world="w"),
    ),
    "hash": (lambda db: db.hash("w"), lambda db: db.call("hash", branch="w")),
    "hash refused: no such branch": (
        lambda db: db.hash("nope"),
        lambda db: db.call("hash", branch="nope"),
    ),
    "verify": (lambda db: db.verify(), lambda db: db.call("verify")),
    "backup refused: the folder exists": (  # (a copy's path and moment are its own: refused)
        lambda db: db.backup("."),
        lambda db: db.call("backup", to="."),
    ),
    "export refused: a folder": (  # (a file's path is its own: refused)
        lambda db: db.export(".", branch="w"),
        lambda db: db.call("export", to=".", branch="w"),
    ),
    "export refused: no such branch": (
        lambda db: db.export("x.db", branch="nope"),
        lambda db: db.call("export", to="x.db", branch="nope"),
    ),
}

# methods not an operation's: the registry's own way in, and a connection's set-up
NOT_OPERATIONS = {"call", "close", "folder", "interrupt", "as_agent", "world"}  # (world: branches)


def outcome(run: Call, db: Chronos) -> tuple[str, Any]:
    try:
        return "done", run(db)
    except ChronosError as exc:
        return "refused", (type(exc).__name__, exc.code, exc.message)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_method_does_what_its_operation_does(tmp_path, case):
    by_method, by_call = CASES[case]
    a, b = build(tmp_path / "a"), build(tmp_path / "b")
    with a, b:
        assert state(a, tmp_path / "a") == state(b, tmp_path / "b")  # (built alike)
        got, want = outcome(by_method, a), outcome(by_call, b)
        assert got[0] == want[0], (got, want)
        if got[0] == "refused":
            assert got[1] == want[1]
        elif case == "query":  # (the last result's rows, as dicts)
            last = want[1].value.results[-1]
            assert got[1] == [dict(zip(last.columns, row)) for row in last.rows]
        else:
            assert _comparable(got[1]) == _comparable(want[1].value)
        assert state(a, tmp_path / "a") == state(b, tmp_path / "b")


def _meta(meta: dict) -> dict:
    """A world's meta but the moment a simulation forked it at (each run its own)."""
    if "simulation" not in meta:
        return meta
    return {**meta, "simulation": {k: v for k, v in meta["simulation"].items() if k != "at"}}


def _comparable(value: Any) -> Any:
    """An engine object as what it says (plans and outcomes hold connections and sessions;
    a world's wid and time are its own)."""
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if isinstance(value, World):
        return (value.name, value.parent, _meta(value.meta), value.owner, value.version)
    if hasattr(value, "kept") and hasattr(value, "base"):  # a Simulation (its ms its own)
        return [(o.name, o.index, o.seed, o.score, o.error, o.kept) for o in value.outcomes]
    if hasattr(value, "recorded"):  # a Replay
        return (value.world, value.differ, value.score, value.recorded, value.kept_as)
    if hasattr(value, "results"):  # a SqlOutcome
        return [(r.sql, r.columns, r.rows, r.tag) for r in value.results]
    if hasattr(value, "outcomes"):  # a merge's Plan
        return (
            value.parent_name,
            value.partial,
            [(o.change.key, o.outcome) for o in value.outcomes],
        )
    if hasattr(value, "summary") and callable(value.summary):  # a Diff
        return (value.count, value.summary())
    return value


def test_a_missing_row_is_none_from_the_api_and_refused_by_the_tool(tmp_path):
    with build(tmp_path / "a") as db:
        assert db.get("users", 3, branch="w") is None
        with pytest.raises(ChronosError, match="no row users/3 on w"):
            db.call("get", table="users", id="3", branch="w")


def test_insert_loads_the_same_rows_by_method_and_by_call(tmp_path):
    data = tmp_path / "more.csv"
    data.write_text("id,name\n4,Di\n5,Ed\n")
    a, b = build(tmp_path / "a"), build(tmp_path / "b")
    with a, b:
        done = a.insert("users", data, pk="id", branch="w")
        reply = b.call("insert", table="users", file=str(data), pk=["id"], branch="w")
        assert (done.rows, done.table) == (reply.value.rows, reply.value.table) == (2, "users")
        assert state(a, tmp_path / "a") == state(b, tmp_path / "b")


def test_insert_takes_the_rows_themselves_as_sqlite_utils_insert_all_does(tmp_path):
    """Dicts load as the same rows in a file would (one transaction, the same history); a
    refusal names the row and changes nothing."""
    data = tmp_path / "more.ndjson"
    data.write_text('{"id": 4, "name": "Di"}\n{"id": 5, "name": "Ed"}\n')
    a, b = build(tmp_path / "a"), build(tmp_path / "b")
    with a, b:
        rows = ({"id": i, "name": name} for i, name in ((4, "Di"), (5, "Ed")))
        done = a.insert("users", rows, branch="w")
        b.insert("users", data, branch="w")
        assert (done.rows, done.file) == (2, "the list of rows")
        assert state(a, tmp_path / "a") == state(b, tmp_path / "b")
        for bad, message in (
            ([{"id": 6, "name": "Fy"}, 7], "row 2 isn't a dict (int 7)"),
            ([{"id": 6, "photo": b"\x00"}], "row 1: Object of type bytes is not JSON"),
            ([{"id": 4, "name": "again"}], "row 1 of the list of rows: UNIQUE constraint"),
        ):
            with pytest.raises(ChronosError, match=re.escape(message)):
                a.insert("users", bad, branch="w")
        assert state(a, tmp_path / "a") == state(b, tmp_path / "b")
        created = a.insert("tags", [{"name": "red", "weight": 1.5}])
        assert created.created == "create table tags (name text, weight real)"


def test_every_method_is_a_case():
    methods = {m for m in vars(Chronos) if not m.startswith("_")} - NOT_OPERATIONS
    covered = {case.split(" ")[0].split(":")[0] for case in CASES} | {"insert"}
    assert methods <= covered, methods - covered
