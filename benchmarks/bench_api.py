#!/usr/bin/env python3
"""A Python API call's own cost: each method runs its operation's handler through the registry
(validation, rights, bounds, the file check), beside apsw doing the same on a plain file.

A table of 200 rows (id, name) on main and in a world that changed 20 of them. Each call is
repeated ``--calls`` times per round, in-process and warm; each keeps its fastest round. The
bases are apsw's own statements on a plain copy of the same rows, with the same
``synchronous`` (NORMAL) and a commit per write, as each API write is its own transaction:

- ``get``: one row by its key (base: ``select ... where id = ?``);
- ``query``: ``select name from t where id = ?`` (base: the same select);
- ``put``: replace one row (base: ``insert or replace`` in its own transaction);
- ``diff``: a world's diff (20 changed rows) as the engine's object, counted (no base: info).

The target is on the overhead of a read: at most 10x apsw's own time for a one-row read on
main. Run from the repository root:

    .venv/bin/python benchmarks/bench_api.py            # 2,000 calls, 5 rounds
    .venv/bin/python benchmarks/bench_api.py --quick    # 200 calls, 3 rounds
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

import apsw
from common import (
    Figure,
    arguments,
    best_of,
    environment,
    figure,
    missed,
    table,
    timed,
    work_folder,
    write_json,
)

import chronos_lite

ROWS = 200


def build(folder):
    db = chronos_lite.init(folder / "db")
    db.sql("create table t(id integer primary key, name text)")
    db.sql(
        "insert into t with recursive n(i) as (select 1 union all select i + 1 from n "
        "where i < $1) select i, 'name ' || i from n",
        ROWS,
    )
    db.fork("w")
    db.sql("update t set name = name || '!' where id <= 20", branch="w")
    plain = apsw.Connection(str(folder / "plain.db"))
    plain.execute("pragma journal_mode = wal; pragma synchronous = normal")
    plain.execute("create table t(id integer primary key, name text)")
    plain.executemany("insert into t values (?, ?)", [(i, f"name {i}") for i in range(1, ROWS + 1)])
    return db, plain


def repeat(calls: int, fn: Callable[[int], object]) -> Callable[[], float]:
    def run() -> float:
        return timed(lambda: [fn(i % ROWS + 1) for i in range(calls)]) / calls

    return run


def main() -> None:
    parser = arguments(__doc__, "200 calls, 3 rounds")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    calls, rounds = (200, 3) if opts.quick else (opts.calls, opts.rounds)
    with work_folder("api-") as folder:
        db, plain = build(folder)
        select = "select id, name from t where id = ?"
        jobs = {
            "get main": repeat(calls, lambda i: db.get("t", i)),
            "get world": repeat(calls, lambda i: db.get("t", i, branch="w")),
            "query main": repeat(calls, lambda i: db.query("select name from t where id = $1", i)),
            "put main": repeat(calls // 10, lambda i: db.put("t", i, {"name": "x"})),
            "put world": repeat(calls // 10, lambda i: db.put("t", i, {"name": "x"}, branch="w")),
            "diff world": repeat(calls // 10, lambda i: db.diff("w").count),
            "apsw select": repeat(calls, lambda i: plain.execute(select, (i,)).fetchall()),
            "apsw replace": repeat(
                calls // 10,
                lambda i: plain.execute(
                    "begin; insert or replace into t values (?, 'x'); commit", (i,)
                ),
            ),
        }
        best = best_of(rounds, jobs)
        db.close()
        plain.close()
    us = {name: seconds * 1e6 for name, seconds in best.items()}
    sel, rep = us["apsw select"], us["apsw replace"]
    figures: list[Figure] = [
        figure("get, main", "µs", us["get main"], sel, "apsw select", at_most=10),
        figure("get, world", "µs", us["get world"], sel, "apsw select"),
        figure("query, main", "µs", us["query main"], sel, "apsw select"),
        figure("put, main", "µs", us["put main"], rep, "apsw replace"),
        figure("put, world", "µs", us["put world"], rep, "apsw replace"),
        figure("diff, world (20 rows)", "µs", us["diff world"], sel, "apsw select"),
    ]
    print(table(figures))
    print(missed(f.passed for f in figures))
    env = environment(opts.quick, {"rows": ROWS, "calls": calls, "rounds": rounds})
    write_json(opts.json, {**env, "figures": [asdict(f) for f in figures]})


if __name__ == "__main__":
    main()
