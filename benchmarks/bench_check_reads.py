#!/usr/bin/env python3
"""What keeping a world's reads costs (issue 28's check_reads): a world's read rate with
check_reads on beside the same world's with it off, in the same run, and what check_reads
itself takes.

* reads through `sql` (the Python API, as every front end calls it) on a world of a users
  table, each `select * from users where id = $1`: the same query again (kept once: a repeat
  costs a lookup) and a new id each time (each a new query to keep: held in memory until the
  world's next write, or a second, writes it);
* a read over a range with a filter (`where id between $1 and $1 + 99 and plan = 'free'`);
* check_reads over the queries kept, each run twice (at the fork and now).

Target (the issue's): a world's read throughput with check_reads at least 0.8x of without.

    .venv/bin/python benchmarks/bench_check_reads.py            # 100k users, 3,000 reads a shape
    .venv/bin/python benchmarks/bench_check_reads.py --quick
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from common import Figure, arguments, figure, missed, table, work_folder, write_json

import chronos_lite


def build(folder: Path, rows: int) -> chronos_lite.Chronos:
    db = chronos_lite.init(folder)
    db.sql("create table users(id integer primary key, name text, plan text)")
    db.sql(
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < $1) "
        "insert into users(name, plan) select 'user ' || i, "
        "case i % 3 when 0 then 'free' when 1 then 'pro' else 'team' end from n",
        rows,
    )
    db.fork("off")
    db.fork("on", meta={"check_reads": True})
    for w in ("off", "on"):  # (each world changed a little, as a task's would)
        db.sql("update users set plan = 'pro' where id % 1000 = 0", branch=w)
    return db


def rate(db: chronos_lite.Chronos, branch: str, sql: str, params: list) -> float:
    """Reads a second over ``params``."""
    start = time.perf_counter()
    for p in params:
        db.sql(sql, p, branch=branch)
    return len(params) / (time.perf_counter() - start)


def rates(db: chronos_lite.Chronos, sql: str, params: list, rounds: int = 5) -> tuple[float, ...]:
    """The best rate off and on, their rounds interleaved (a busy neighbour slows both alike);
    each round reads new values on the world that keeps its reads."""
    best = {"off": 0.0, "on": 0.0}
    part = len(params) // rounds
    for i in range(rounds):
        for branch in ("off", "on") if i % 2 == 0 else ("on", "off"):
            chunk = params[i * part : (i + 1) * part]
            best[branch] = max(best[branch], rate(db, branch, sql, chunk))
    return best["off"], best["on"]


def main() -> int:
    parser = arguments(__doc__ or "", "10k users, 500 reads a shape")
    ns = parser.parse_args()
    rows, reads = (10_000, 500) if ns.quick else (100_000, 3_000)
    rng = random.Random(7)
    figures: list[Figure] = []
    with work_folder("bench-check-reads") as work:
        db = build(work / "shop", rows)
        shapes = {
            "the same point read again": ("select * from users where id = $1", [42] * reads),
            "a new point read each time": (
                "select * from users where id = $1",
                [rng.randrange(1, rows) for _ in range(reads)],
            ),
            "a filtered range, new each time": (
                "select id from users where id between $1 and $1 + 99 and plan = 'free'",
                [rng.randrange(1, rows - 100) for _ in range(reads)],
            ),
        }
        for name, (sql, params) in shapes.items():
            for branch in ("off", "on"):  # (warm both)
                rate(db, branch, sql, params[:50])
            off, on = rates(db, sql, params)
            figures.append(figure(f"{name}, reads/s", "rows/s", on, off, "off", at_least=0.8))
        kept = db.call("check_reads", branch="on").data["reads"]
        start = time.perf_counter()
        db.call("check_reads", branch="on")
        took = time.perf_counter() - start
        db.close()
    print(f"a world's reads, check_reads on beside off: {rows:,} users, {reads:,} reads a shape")
    print(table(figures))
    print(f"check_reads over {kept:,} kept queries: {took * 1000:.0f} ms")
    print(missed(f.passed for f in figures))
    write_json(ns.json, {"figures": [f.__dict__ for f in figures], "check_ms": took * 1000})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
