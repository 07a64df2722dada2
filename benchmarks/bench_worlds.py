#!/usr/bin/env python3
"""Benchmarks for chronos_lite worlds, each figure a ratio against main or plain SQLite.

What is measured (see benchmarks/README.md for the targets and a recorded run):

1. fork: median time of ``db.fork(name)`` on a small and on a big table. A fork is one row
   in ``_chronos_worlds``, so it must not grow with the table.
2. reads: every query shape of issues 13 and 25 (point lookup, a range over an index, sum,
   count(*), group by, a scanning join, key joins under ORDER BY / GROUP BY / DISTINCT, offsets
   by key and by an index) on main and on four worlds of it: a table *untouched* (neither side
   changed it since the fork) or *changed* (the world changed 1% of its rows), each at depth 1
   (forked from main) and depth 8 (a chain of 8 worlds, each making 1/8 of the changes), at two
   table sizes (under 100k rows: copied whole on the world's connection; 1M: read apart). The
   base is the same query on main in the same run; every world's answer is checked against a
   plain copy first.
3. joins: joins by key of 1 to 5 tables (20k rows each, 1% of each changed) picking one row,
   the same four worlds against main; and the 5-table join's ratio over the 2-table join's.
4. reports (``world_reports``): an invoicing app's reports (``invoicing``: 7 tables; joins of
   up to 5 under GROUP BY / ORDER BY / LIMIT) through ``db.sql`` on a world that changed 1%.
5. writes: rows/s of single-row INSERTs and UPDATEs (executemany, one transaction) on a
   world against a plain file, on ``items`` and on a table with NOT NULL, CHECK, UNIQUE, a
   foreign key and a trigger writing a log table; and on main with 100 open worlds.
6. call: one single-row UPDATE through ``db.sql`` on a world against main, and how many
   statements chronos runs besides the user's.
7. prepare: a statement text never seen before (a unique literal), prepared and run on a
   world against main, on apsw and through ``db.sql``.
8. asof: ``count(*)`` AS OF a moment on main and on a world, against the count now.

Why ratios, and why the best of interleaved rounds: this machine is shared and noisy. The
base is measured in the same run, round by round next to chronos, and each side keeps its
fastest round, so a busy neighbour slows both sides rather than skewing one.

Run from the repository root:

    .venv/bin/python benchmarks/bench_worlds.py                # full sizes (50k and 1M rows)
    .venv/bin/python benchmarks/bench_worlds.py --quick        # small sizes, under a minute
    .venv/bin/python benchmarks/bench_worlds.py --only joins   # one section (or a list: a,b)
    .venv/bin/python benchmarks/bench_worlds.py --json out.json

A missed target prints MISS; the exit status stays 0.
"""

from __future__ import annotations

import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import apsw
import world_reports
from common import (
    Figure,
    arguments,
    best_of,
    best_of_batches,
    build_plain,
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
from world_fixtures import (
    CHAIN,
    DEPTHS,
    ITEMS,
    ORDERS,
    STRICT_TABLES,
    TEXTS,
    Filled,
    Shape,
    WorldWriter,
    adopt,
    apply_plans,
    apsw_job,
    build_file,
    build_strict,
    key_join,
    logged,
    make_worlds,
    plain_copy,
    plans_for,
    run,
    sql_job,
    strict_batches,
    table_shapes,
    wrong_answers,
)

import chronos_lite


@dataclass(frozen=True)
class Sizes:
    fork_small: int  # rows in the table of the small fork database
    fork_big: int  # ... and of the big one
    forks: int  # forks timed per database (the median is kept)
    read_rows: tuple[int, ...]  # rows in items, one database each (orders: a tenth of it)
    lookups: int  # point lookups per round
    big_lookups: int  # ... at the largest size
    chain_rows: int  # rows in each table of the key joins
    join_lookups: int  # key joins per round
    write_rows: int  # rows already in the table the write batches go to
    batch: int  # rows per write batch
    texts: int  # new statement texts per round (prepare)
    rounds: int  # interleaved rounds; each side keeps its fastest
    big_rounds: int  # ... at the largest read size


FULL = Sizes(
    10_000,
    1_000_000,
    41,
    (50_000, 1_000_000),
    2_000,
    1_000,
    20_000,
    2_000,
    100_000,
    5_000,
    100,
    5,
    3,
)
QUICK = Sizes(1_000, 100_000, 15, (10_000, 50_000), 300, 300, 5_000, 300, 10_000, 1_000, 50, 5, 5)
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


# --- 2 and 3. reads and joins ---------------------------------------------------------------


def target_for(name: str, shape: Shape) -> float | None:
    return 1.05 if name.startswith("untouched") else shape.changed


def measure(
    conns: dict[str, apsw.Connection],
    copies: dict[str, apsw.Connection],
    shapes: list[Shape],
    rounds: int,
    tag: str,
) -> tuple[list[Figure], dict[tuple[str, str], float]]:
    """Each shape on main and on each world, interleaved, best of ``rounds``; figures against
    main, and the ratios by (world, shape). A world whose answer differs from its plain copy
    (or main's, from the file's) gets MISS whatever its time."""
    bad = wrong_answers(conns, copies, shapes)  # (also warms the caches)
    figures, ratios = [], {}
    for shape in shapes:
        jobs = {
            name: (lambda conn=conn, shape=shape: timed(lambda: run(conn, shape)))
            for name, conn in conns.items()
        }
        best = best_of(rounds, jobs)
        per = len(shape.params) if shape.params else 1
        unit, scale = ("us", 1e6) if best["main"] / per < 1e-3 else ("ms", 1e3)
        base = best["main"] / per * scale
        for name in conns:
            if name == "main":
                continue
            value = best[name] / per * scale
            ratios[(name, shape.name)] = value / base
            f = figure(
                f"{shape.name}, {tag}, {name}",
                unit,
                value,
                base,
                "same query on main",
                at_most=target_for(name, shape),
            )
            if (name, shape.name) in bad or ("main", shape.name) in bad:
                f.name, f.passed = f.name + " WRONG ANSWER", False
            figures.append(f)
    return figures, ratios


def close_all(db: chronos_lite.Chronos, copies: dict[str, apsw.Connection]) -> None:
    for conn in copies.values():
        conn.close()
    db.close()


def bench_table(n: int, lookups: int, rounds: int, work: Path) -> list[Figure]:
    """The single-table shapes and the items-orders join at ``n`` rows of items."""
    tables = [Filled(ITEMS, n), Filled(ORDERS, n // 10, n)]
    plain = build_file(work / f"reads{n}.sqlite", tables)
    plans = plans_for(tables, seed=2)
    db = adopt(plain, work / f"reads{n}")
    conns = make_worlds(db, plans)
    copies = {
        "untouched": raw_copy(plain, work / f"reads{n}-plain.sqlite"),
        "changed": plain_copy(plain, work / f"reads{n}-changed.sqlite", plans),
    }
    figures, _ = measure(
        conns, copies, table_shapes(n, lookups, random.Random(5)), rounds, label(n)
    )
    figures += sql_count(db, copies, rounds, label(n))
    figures += sql_reads(db, rounds, label(n), n)
    close_all(db, copies)
    return figures


BRANCHES = {  # (make_worlds' worlds by name)
    "main": "main",
    "changed, depth 1": "changed1",
    "changed, depth 8": "chain8",
    "untouched, depth 1": "untouched1",
    "untouched, depth 8": "still8",
}


def sql_count(
    db: chronos_lite.Chronos, copies: dict[str, apsw.Connection], rounds: int, tag: str
) -> list[Figure]:
    """``select count(*) from items`` through ``db.sql`` (chronos' statement path, which every
    front end takes: a changed world's count is computed apart there), on each branch against
    main's, best of ``rounds``; each answer checked against the plain copy."""
    sql = "select count(*) from items"

    def count(branch: str) -> int:
        return db.sql(sql, branch=branch).results[-1].rows[0][0]

    wrong = {
        name
        for name, branch in BRANCHES.items()
        if count(branch)
        != copies[name.split(",")[0] if name != "main" else "untouched"].execute(sql).fetchone()[0]
    }
    jobs = {name: (lambda b=branch: timed(lambda: count(b))) for name, branch in BRANCHES.items()}
    best = best_of(rounds, jobs)
    out = []
    for name in BRANCHES:
        if name == "main":
            continue
        # (an untouched world's count is main's own: what it adds is the world's call, which
        # `prepare` measures)
        target = None if name.startswith("untouched") else 4
        f = figure(
            f"count(*) by db.sql, {tag}, {name}",
            "ms",
            best[name] * 1e3,
            best["main"] * 1e3,
            "db.sql on main",
            at_most=target,
        )
        if name in wrong or "main" in wrong:
            f.name, f.passed = f.name + " WRONG ANSWER", False
        out.append(f)
    return out


BY_SQL = {
    "key join, group by": "select o.id, count(*), sum(o.qty * i.price) from orders o "
    "join items i on i.id = o.item_id where o.id = $1 group by o.id",
    "key join, distinct": "select distinct i.category from orders o "
    "join items i on i.id = o.item_id where o.id = $1",
    "sum(price)": "select sum(price) from items",
    "order by pk offset": "select * from items order by id limit 100 offset 500000",
    "order by index offset": "select * from items order by category, id limit 100 offset 500000",
    "join items-orders": "select sum(o.qty * i.price) from orders o "
    "join items i on i.id = o.item_id",
}


def sql_reads(db: chronos_lite.Chronos, rounds: int, tag: str, rows: int) -> list[Figure]:
    """Shapes that read a table apart whole (at 1M rows), through ``db.sql`` on the changed
    world (depth 1) against main: such a table is copied whole on the connection once its
    reads show the copy costs less (world.demand): the first call (information), then the best
    round of 20 calls."""
    if rows < 1_000_000:
        return []
    out = []
    ids = range(1, 21)
    for name, sql in BY_SQL.items():
        db.database.close_session(db.database.world("changed1").id)  # (read apart again)

        def run(branch: str, i: int, sql: str = sql) -> None:
            db.sql(sql, *([i] if "$1" in sql else []), branch=branch)

        first = {b: timed(lambda b=b: run(b, 1)) for b in ("changed1", "main")}
        jobs = {
            b: (lambda b=b: timed(lambda: [run(b, i) for i in ids])) for b in ("main", "changed1")
        }
        best = best_of(rounds + 1, jobs)
        out.append(
            figure(
                f"{name} by db.sql, {tag}, changed, depth 1",
                "us",
                best["changed1"] / len(ids) * 1e6,
                best["main"] / len(ids) * 1e6,
                "db.sql on main",
                at_most=1.5,
            )
        )
        out.append(
            figure(
                f"{name} by db.sql, {tag}: the first call on a new connection",
                "ms",
                first["changed1"] * 1e3,
                first["main"] * 1e3,
                "the first on main",
            )
        )
    return out


def bench_reads(sizes: Sizes, work: Path) -> list[Figure]:
    figures = []
    for n in sizes.read_rows:
        big = n == max(sizes.read_rows)
        start = time.perf_counter()
        figures += bench_table(
            n,
            sizes.big_lookups if big else sizes.lookups,
            sizes.big_rounds if big else sizes.rounds,
            work,
        )
        print(f"    {label(n)} rows: {time.perf_counter() - start:.1f} s", flush=True)
    return figures


def bench_joins(sizes: Sizes, work: Path) -> list[Figure]:
    """Joins by key of c1..c2 and c1..c5 picking one row; the 5-table join's ratio to main
    over the 2-table join's, on the changed worlds."""
    n = sizes.chain_rows
    tables = [Filled(t, n, n) for t in CHAIN]
    plain = build_file(work / "chain.sqlite", tables)
    plans = plans_for(tables, seed=6)
    db = adopt(plain, work / "chain")
    conns = make_worlds(db, plans)
    copies = {
        "untouched": raw_copy(plain, work / "chain-plain.sqlite"),
        "changed": plain_copy(plain, work / "chain-changed.sqlite", plans),
    }
    rng = random.Random(7)
    ids = [(rng.randrange(1, n + 1),) for _ in range(sizes.join_lookups)]
    shapes = [key_join(k, ids, 1.5) for k in range(1, 6)]
    figures, ratios = measure(conns, copies, shapes, sizes.rounds + 2, label(n))
    for depth in DEPTHS:
        name = f"changed, depth {depth}"
        r5, r2 = ratios[(name, "key join 5 tables")], ratios[(name, "key join 2 tables")]
        figures.append(
            figure(
                f"key join 5 / key join 2, {name}",
                "x",
                r5,
                r2,
                "key join 2's ratio",
                at_most=1.3,
            )
        )
    close_all(db, copies)
    return figures


# --- 4. writes ------------------------------------------------------------------------------


# The plain file each writer is compared with: a world's connection runs synchronous=normal,
# main's full (issue 25: "at the same synchronous")
SAME_SYNC = {"world": "raw, normal"}


def rate_figures(
    best: dict[tuple[str, str], float], batch: int, targets: dict[str, float | None], what: str
) -> list[Figure]:
    figures = []
    for kind in ("insert", "update"):
        for w, limit in targets.items():
            base = SAME_SYNC.get(w, "raw")
            figures.append(
                figure(
                    f"{kind} rows/s{what}, {w}",
                    "rows/s",
                    batch / best[(w, kind)],
                    batch / best[(base, kind)],
                    "plain file, " + ("synchronous normal" if base != "raw" else "full"),
                    at_least=limit,
                )
            )
    return figures


def bench_item_writes(sizes: Sizes, work: Path) -> list[Figure]:
    plain = build_plain(work / "writes.sqlite", sizes.write_rows)
    raw = raw_copy(plain, work / "writes-raw.sqlite")
    normal = raw_copy(plain, work / "writes-normal.sqlite", "normal")
    in_world = adopt(plain, work / "writes-world")
    main0 = adopt(plain, work / "writes-main0")
    main100 = adopt(plain, work / "writes-main100")
    for i in range(100):
        main100.fork(f"open{i}")
    writers: dict[str, Callable[[str, list[tuple]], float]] = {
        "raw": lambda sql, p: in_transaction(raw, sql, p),
        "raw, normal": lambda sql, p: in_transaction(normal, sql, p),
        "world": WorldWriter(in_world),
        "main, 0 worlds": lambda sql, p: in_transaction(
            main0.database.session("main").conn, sql, p
        ),
        "main, 100 worlds": lambda sql, p: in_transaction(
            main100.database.session("main").conn, sql, p
        ),
    }
    rng = random.Random(3)
    best = best_of_batches(
        sizes.rounds, writers, lambda: write_batches(sizes.batch, sizes.write_rows, rng)
    )
    raw.close()
    normal.close()
    for db in (in_world, main0, main100):
        db.close()
    targets = {"world": 0.7, "main, 0 worlds": None, "main, 100 worlds": 1 / 4}
    return rate_figures(best, sizes.batch, targets, "")


def bench_strict_writes(sizes: Sizes, work: Path, triggers: bool = True) -> list[Figure]:
    """``strict``'s writes; without ``triggers`` its tables are copied natively (a foreign key's
    group), with them emulated (the app's triggers fire through event tables)."""
    tag = "" if triggers else "-keys"
    plain = build_strict(work / f"strict{tag}.sqlite", sizes.write_rows, triggers=triggers)
    raw = raw_copy(plain, work / f"strict{tag}-raw.sqlite", "normal")
    in_world = adopt(plain, work / f"strict{tag}-world")
    if not triggers:  # (kinds and strict together hold more than whole_rows' 100k rows)
        in_world.call("config", setting="whole_rows", value=str(2 * sizes.write_rows))
    writers: dict[str, Callable[[str, list[tuple]], float]] = {
        "raw, normal": lambda sql, p: in_transaction(raw, sql, p),
        "world": WorldWriter(in_world, STRICT_TABLES, logged if triggers else None),
    }
    rng, names = random.Random(8), itertools.count()
    best = best_of_batches(
        sizes.rounds,
        writers,
        lambda: strict_batches(sizes.batch, sizes.write_rows, rng, names),
    )
    raw.close()
    in_world.close()
    what = " with constraints and a trigger" if triggers else " with constraints, no trigger"
    return rate_figures(best, sizes.batch, {"world": 0.7}, what)


def bench_writes(sizes: Sizes, work: Path) -> list[Figure]:
    return (
        bench_item_writes(sizes, work)
        + bench_strict_writes(sizes, work)
        + bench_strict_writes(sizes, work, triggers=False)
    )


# --- 5. prepare -----------------------------------------------------------------------------


def bench_prepare(sizes: Sizes, work: Path) -> list[Figure]:
    """A new statement text on a world whose ``items`` changed 1% against main: prepared and
    run with apsw (no statement cache can help), and ``db.sql`` of a new select."""
    tables = [Filled(ITEMS, sizes.write_rows)]
    db = adopt(build_file(work / "prepare.sqlite", tables), work / "prepare")
    db.fork("w")
    apply_plans(db, "w", plans_for(tables, seed=9))
    conns = {"main": db.database.session("main").conn, "world": db.database.session("w").conn}
    n, count = itertools.count(1), sizes.texts
    jobs = {
        kind: {b: apsw_job(c, text, count, n) for b, c in conns.items()}
        for kind, text in TEXTS.items()
    }
    jobs["db.sql select"] = {b: sql_job(db, b if b == "main" else "w", count, n) for b in conns}
    figures = []
    for kind, pair in jobs.items():
        best = best_of(sizes.rounds + 2, pair)
        figures.append(
            figure(
                f"new statement text, {kind}, changed table",
                "us",
                best["world"] / count * 1e6,
                best["main"] / count * 1e6,
                "same on main",
                at_most=2,
            )
        )
    db.close()
    return figures


# --- output ---------------------------------------------------------------------------------

SECTIONS: dict[str, Callable[[Sizes, Path], list[Figure]]] = {
    "fork": bench_fork,
    "reads": bench_reads,
    "joins": bench_joins,
    "reports": lambda s, work: world_reports.bench_reports(s.write_rows, s.rounds, work),
    "writes": bench_writes,
    "call": lambda s, work: world_reports.bench_call(s.write_rows, s.rounds, work),
    "prepare": bench_prepare,
    "asof": lambda s, work: world_reports.bench_as_of(s.write_rows, s.rounds, work),
}


def header(env: dict) -> str:
    s = env["sizes"]
    sizes = " and ".join(label(n) for n in s["read_rows"])
    biggest = label(max(s["read_rows"]))
    return (
        f"chronos_lite {env['chronos_lite']} ({env['revision']}) world benchmarks "
        f"({env['mode']}), {env['date']}\n"
        f"SQLite {env['sqlite']}, apsw {env['apsw']}, Python {env['python']}, "
        f"{env['cpus']} CPUs\n"
        f"fork: median of {s['forks']} forks at {label(s['fork_small'])} and "
        f"{label(s['fork_big'])} rows; reads: items of {sizes} rows (orders a tenth), 1% "
        f"changed, {s['lookups']:,} lookups ({s['big_lookups']:,} at {biggest}); "
        f"joins: {label(s['chain_rows'])} rows a table, {s['join_lookups']:,} joins; writes: "
        f"batches of {s['batch']:,} rows into {s['write_rows']:,}; prepare: "
        f"{s['texts']} texts a round; best of {s['rounds']} interleaved rounds "
        f"({s['big_rounds']} at {biggest}; joins and prepare: "
        f"{s['rounds'] + 2})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, "small sizes, under a minute")
    parser.add_argument(
        "--only", metavar="SECTION", help=f"comma-separated, of: {', '.join(SECTIONS)}"
    )
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else list(SECTIONS)
    unknown = [s for s in only if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}; one of {', '.join(SECTIONS)}")
    sizes = QUICK if args.quick else FULL
    env = environment(args.quick, sizes) | {"sections": only}
    print(header(env), flush=True)
    figures: list[Figure] = []
    with work_folder("run-") as work:
        for name in only:
            with section(name):
                figures += SECTIONS[name](sizes, work)
    print()
    print(table(figures))
    print(f"\n{missed(f.passed for f in figures)}")
    write_json(args.json, {**env, "figures": [asdict(f) for f in figures]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
