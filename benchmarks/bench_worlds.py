#!/usr/bin/env python3
"""Benchmarks for chronos_lite worlds, each figure a ratio against plain SQLite.

What is measured (see benchmarks/README.md for the targets and a recorded run):

1. fork: median time of ``db.fork(name)`` on a small and on a big table. A fork is one row
   in ``_chronos_worlds``, so it must not grow with the table.
2. reads in a world with 1% of its rows changed, at depth 1 (forked from main) and depth 8
   (a chain of 8 worlds, each making 1/8 of the changes, so the deepest sees all of them):
   full scan (summed inside SQLite, and every row fetched to the client), point lookups by
   primary key, and an aggregate over an indexed category. The base is the same query on main
   (chronos' main connection: plain tables, no views).
3. writes in a world: rows/s of a batch of single-row INSERTs and of single-row UPDATEs by
   primary key (executemany, one transaction) on a world, against the same on a plain file.
4. writes to main with 100 open worlds (and with none): the same batches on main.

Why ratios, and why the best of interleaved rounds: this machine is shared and noisy. Raw
SQLite is measured in the same run, round by round next to chronos, and each side keeps its
fastest round, so a busy neighbour slows both sides rather than skewing one.

Run from the repository root:

    .venv/bin/python benchmarks/bench_worlds.py            # full sizes, a few minutes
    .venv/bin/python benchmarks/bench_worlds.py --quick    # small sizes, seconds
    .venv/bin/python benchmarks/bench_worlds.py --json out.json

A missed target prints MISS; the exit status stays 0.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import apsw
from common import (
    CATEGORIES,
    Figure,
    apply,
    arguments,
    best_of,
    best_of_batches,
    build_plain,
    change_plan,
    environment,
    figure,
    in_transaction,
    label,
    missed,
    raw_copy,
    section,
    table,
    timed,
    work_folder,
    write_batches,
    write_json,
)

import chronos_lite


@dataclass(frozen=True)
class Sizes:
    fork_small: int  # rows in the table of the small fork database
    fork_big: int  # ... and of the big one
    forks: int  # forks timed per database (the median is kept)
    read_rows: int  # rows in the table read by the world read benchmarks
    lookups: int  # point lookups per round
    write_rows: int  # rows already in the table the write batches go to
    batch: int  # rows per write batch
    rounds: int  # interleaved rounds; each side keeps its fastest


FULL = Sizes(10_000, 1_000_000, 41, 200_000, 2_000, 100_000, 5_000, 5)
QUICK = Sizes(1_000, 100_000, 15, 10_000, 300, 10_000, 1_000, 3)


def adopt(plain: Path, folder: Path) -> chronos_lite.Chronos:
    """A chronos database whose main is a copy of ``plain`` (no history written)."""
    return chronos_lite.init(folder, from_file=plain)


# --- 1. fork --------------------------------------------------------------------------------


ONE_ROW = "insert into items values (null, 1, 1.0, 'x')"


def bench_fork(sizes: Sizes, work: Path) -> list[Figure]:
    small, big = sizes.fork_small, sizes.fork_big
    dbs = {
        n: adopt(build_plain(work / f"fork{n}.sqlite", n), work / f"fork{n}") for n in (small, big)
    }
    raw = raw_copy(work / f"fork{small}.sqlite", work / "fork-raw.sqlite")
    times: dict[object, list[float]] = {small: [], big: [], "raw": []}
    for i in range(sizes.forks):
        for n, db in dbs.items():
            times[n].append(timed(lambda db=db, i=i: db.fork(f"f{i}")))
        times["raw"].append(in_transaction(raw, ONE_ROW, [()]))
    median = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    raw.close()
    for db in dbs.values():
        db.close()
    figures = [
        Figure(
            f"fork, {label(n)} rows",
            "ms",
            median[n],
            median["raw"],
            "raw 1-row commit",
            median[n] / median["raw"],
            "< 10 ms",
            median[n] < 10,
        )
        for n in (small, big)
    ]
    figures.append(
        figure(
            f"fork {label(big)} / fork {label(small)}",
            "ms",
            median[big],
            median[small],
            f"fork {label(small)}",
            at_most=1.5,
        )
    )
    return figures


# --- 2. reads in a world --------------------------------------------------------------------


def read_jobs(conn: apsw.Connection, ids: list[int], cats: list[int]) -> dict[str, Callable]:
    def scan() -> None:
        conn.execute("select sum(price) from items").fetchall()

    def fetch_all() -> None:
        conn.execute("select * from items").fetchall()

    def lookups() -> None:
        for i in ids:
            conn.execute("select * from items where id = ?", (i,)).fetchall()

    def aggregates() -> None:
        for c in cats:
            conn.execute(
                "select count(*), avg(price) from items where category = ?", (c,)
            ).fetchall()

    return {
        "full scan": scan,
        "full scan, rows to the client": fetch_all,
        "point lookup": lookups,
        "filtered aggregate": aggregates,
    }


def check_same(conns: dict[str, apsw.Connection]) -> None:
    """Both worlds hold the same changes: their totals must agree (else the setup is wrong)."""
    q = "select count(*), sum(price) from items"
    totals = {name: conn.execute(q).fetchone() for name, conn in conns.items()}
    (n1, s1), (n8, s8) = totals["depth 1"], totals["depth 8"]
    if n1 != n8 or not math.isclose(s1, s8, rel_tol=1e-9):
        print(f"warning: worlds disagree: {totals}", file=sys.stderr)


def bench_reads(sizes: Sizes, work: Path) -> list[Figure]:
    n = sizes.read_rows
    db = adopt(build_plain(work / "reads.sqlite", n, index=True), work / "reads")
    rng = random.Random(2)
    plan = change_plan(n, rng)
    db.fork("depth1")
    apply(db, "depth1", plan)
    parent = None
    for d in range(1, 9):  # the chain: each world makes 1/8 of the changes
        db.fork(f"chain{d}", parent)
        apply(db, f"chain{d}", plan[d - 1 :: 8])
        parent = f"chain{d}"
    conns = {
        "main": db.session("main").conn,
        "depth 1": db.session("depth1").conn,
        "depth 8": db.session("chain8").conn,
    }
    check_same(conns)
    ids = [rng.randrange(1, n + 1) for _ in range(sizes.lookups)]
    cats = rng.sample(range(CATEGORIES), 10)
    jobs = {
        (branch, q): (lambda fn=fn: timed(fn))
        for branch, conn in conns.items()
        for q, fn in read_jobs(conn, ids, cats).items()
    }
    # The lookups take most of the time; the short queries get more rounds to find their best.
    lookups = {key: job for key, job in jobs.items() if key[1] == "point lookup"}
    others = {key: job for key, job in jobs.items() if key[1] != "point lookup"}
    best = best_of(sizes.rounds + 2, lookups) | best_of(3 * (sizes.rounds + 2), others)
    db.close()
    figures = []
    per = {
        "full scan": (1, "ms", 1e3, 1.3),
        "full scan, rows to the client": (1, "ms", 1e3, 1.3),
        "point lookup": (len(ids), "us", 1e6, 1.3),
        "filtered aggregate": (len(cats), "ms", 1e3, 1.5),
    }
    for q, (count, unit, scale, limit) in per.items():
        base = best[("main", q)] / count * scale
        for depth in ("depth 1", "depth 8"):
            value = best[(depth, q)] / count * scale
            figures.append(
                figure(
                    f"{q}, world {depth}", unit, value, base, "same query on main", at_most=limit
                )
            )
    return figures


# --- 3 and 4. writes ------------------------------------------------------------------------


class WorldWriter:
    """Times a batch on a world freshly forked from main (the fork is not timed)."""

    def __init__(self, db: chronos_lite.Chronos) -> None:
        self.db = db
        self.count = 0

    def __call__(self, sql: str, params: list[tuple]) -> float:
        self.count += 1
        name = f"writer{self.count}"
        self.db.fork(name)
        session = self.db.writable(self.db.session(name), "items")
        seconds = in_transaction(session.conn, sql, params)
        self.db.discard(name)
        return seconds


def bench_writes(sizes: Sizes, work: Path) -> list[Figure]:
    plain = build_plain(work / "writes.sqlite", sizes.write_rows)
    raw = raw_copy(plain, work / "writes-raw.sqlite")
    in_world = adopt(plain, work / "writes-world")
    main0 = adopt(plain, work / "writes-main0")
    main100 = adopt(plain, work / "writes-main100")
    for i in range(100):
        main100.fork(f"open{i}")
    writers: dict[str, Callable[[str, list[tuple]], float]] = {
        "raw": lambda sql, p: in_transaction(raw, sql, p),
        "world": WorldWriter(in_world),
        "main, 0 worlds": lambda sql, p: in_transaction(main0.session("main").conn, sql, p),
        "main, 100 worlds": lambda sql, p: in_transaction(main100.session("main").conn, sql, p),
    }
    rng = random.Random(3)
    best = best_of_batches(
        sizes.rounds, writers, lambda: write_batches(sizes.batch, sizes.write_rows, rng)
    )
    raw.close()
    for db in (in_world, main0, main100):
        db.close()
    targets = {"world": 1 / 3, "main, 0 worlds": None, "main, 100 worlds": 1 / 4}
    figures = []
    for kind in ("insert", "update"):
        raw_rate = sizes.batch / best[("raw", kind)]
        for w, limit in targets.items():
            rate = sizes.batch / best[(w, kind)]
            figures.append(
                figure(
                    f"{kind} rows/s, {w}",
                    "rows/s",
                    rate,
                    raw_rate,
                    "raw SQLite file",
                    at_least=limit,
                )
            )
    return figures


# --- output ---------------------------------------------------------------------------------


def header(env: dict) -> str:
    s = env["sizes"]
    return (
        f"chronos_lite {env['chronos_lite']} ({env['revision']}) world benchmarks "
        f"({env['mode']}), {env['date']}\n"
        f"SQLite {env['sqlite']}, apsw {env['apsw']}, Python {env['python']}, "
        f"{env['cpus']} CPUs\n"
        f"fork: median of {s['forks']} forks at {label(s['fork_small'])} and "
        f"{label(s['fork_big'])} rows; reads: {s['read_rows']:,} rows, 1% changed, "
        f"{s['lookups']:,} lookups; writes: batches of {s['batch']:,} rows into "
        f"{s['write_rows']:,}; best of {s['rounds']} interleaved rounds (reads: "
        f"{s['rounds'] + 2}, scans and aggregates {3 * (s['rounds'] + 2)})"
    )


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, "small sizes, finishes in seconds").parse_args(argv)
    sizes = QUICK if args.quick else FULL
    env = environment(args.quick, sizes)
    print(header(env), flush=True)
    figures: list[Figure] = []
    with work_folder("run-") as work:
        for name, bench in (
            ("fork", bench_fork),
            ("reads", bench_reads),
            ("writes", bench_writes),
        ):
            with section(name):
                figures += bench(sizes, work)
    print()
    print(table(figures))
    print(f"\n{missed(f.passed for f in figures)}")
    write_json(args.json, {**env, "figures": [asdict(f) for f in figures]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
