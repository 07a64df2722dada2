#!/usr/bin/env python3
"""History and time travel benchmarks for chronos_lite (issue 5), each figure a ratio against
a baseline measured in the same run.

What is measured (see benchmarks/README.md for the targets and a recorded run):

1. AS OF on main: a 1M-row table built through chronos, a moment noted, then 1,000 changes
   (single-row updates through ``db.sql``). ``select ... from items as of '<moment>'`` (a full
   count, a filtered aggregate, point lookups) against the same query on main now, both through
   ``db.sql``; also ``branch='main@<moment>'``, the same AS OF view timed inside SQLite alone,
   and main now against a plain SQLite file holding the same rows.
2. AS OF on a world: world ``w`` forked from main changes 1% of the rows, a moment is noted,
   then 1,000 more changes; the same queries AS OF the moment on ``w`` against ``w`` now.
3. Writes to main with history kept: rows/s of batches of single-row INSERTs and UPDATEs on
   the big table (its history triggers fire) against the same batches on the plain file
   (bench_worlds.py's method: executemany in one transaction, apsw on both sides).
4. File growth: bytes of history per updated row (file sizes after a WAL checkpoint), and the
   file after pruning all history and VACUUM against the plain file of the same live rows.

This machine is shared and noisy, so chronos and its baseline run round by round, interleaved
(the order reversed every other round), and each keeps its fastest round.

Run from the repository root:

    .venv/bin/python benchmarks/bench_history.py            # full sizes, about a minute
    .venv/bin/python benchmarks/bench_history.py --quick    # small sizes, seconds
    .venv/bin/python benchmarks/bench_history.py --json out.json

A missed target prints MISS; the exit status stays 0.
"""

from __future__ import annotations

import datetime
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import apsw
from common import (
    BUSY_TIMEOUT_MS,
    CATEGORIES,
    TABLE,
    Figure,
    apply,
    arguments,
    best_of,
    best_of_batches,
    change_plan,
    environment,
    figure,
    in_transaction,
    label,
    missed,
    section,
    table,
    work_folder,
    write_batches,
    write_json,
)

import chronos_lite
from chronos_lite.history import prune
from chronos_lite.storage import moments, shadow
from chronos_lite.storage.world import views as worldviews

INDEX = "create index items_category on items(category)"
# The same rows on both sides, without random(): chronos' table and the plain file must agree.
LOAD = (
    "with recursive c(i) as (select 1 union all select i + 1 from c where i < {n}) "
    "insert into items(id, category, price, name) select i, (i * 37) % 100, "
    "((i * 7919) % 99900 + 100) / 100.0, {name} from c"
)
SHORT_NAME = "'item ' || i"
# 40 bytes of text: 'item 0000001, a typical forty-byte note.'
LONG_NAME = "printf('item %07d, a typical forty-byte note.', i)"
CHANGE = "update items set price = $1, category = $2 where id = $3"
MAIN_AT, WORLD_AT = 2.0, 2.0  # targets: AS OF at most this many times the query now


@dataclass(frozen=True)
class Sizes:
    rows: int  # rows of the table read AS OF (built through chronos)
    changes: int  # changes after the moment, on main and again on the world
    lookups: int  # point lookups per round
    rounds: int  # interleaved rounds of the reads; each side keeps its fastest
    batch: int  # rows per write batch
    write_rounds: int  # rounds of the write batches
    growth_rows: int  # live rows of the file-growth table
    growth_updates: int  # single-row updates made to it


FULL = Sizes(1_000_000, 1_000, 200, 7, 5_000, 5, 100_000, 100_000)
QUICK = Sizes(20_000, 200, 50, 3, 1_000, 3, 10_000, 10_000)


# --- building the data ----------------------------------------------------------------------


def build_chronos(folder: Path, rows: int, name: str = SHORT_NAME) -> chronos_lite.Chronos:
    """A chronos database whose ``items`` was created and loaded through ``db.sql`` (so its
    history triggers recorded every insert)."""
    db = chronos_lite.init(folder)
    db.sql(TABLE)
    db.sql(LOAD.format(n=rows, name=name))
    return db


def build_plain(path: Path, rows: int, name: str = SHORT_NAME) -> apsw.Connection:
    """A plain SQLite file (WAL) with the same rows, opened with the pragmas of chronos' main
    connection (``synchronous = full``, ``foreign_keys = on``)."""
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("pragma journal_mode = wal").fetchall()
    conn.execute("pragma synchronous = full; pragma foreign_keys = on")
    conn.execute(TABLE)
    conn.execute("BEGIN")
    conn.execute(LOAD.format(n=rows, name=name))
    conn.execute("COMMIT")
    return conn


def note_moment() -> str:
    """Now, as local time text (what a user would type), 10 ms clear of writes either side."""
    time.sleep(0.01)
    moment = datetime.datetime.fromtimestamp(time.time()).isoformat(sep=" ")
    time.sleep(0.01)
    return moment


def random_changes(count: int, rows: int, rng: random.Random) -> list[tuple]:
    """``count`` updates of random rows (price and category): parameters of CHANGE."""
    return [
        (rng.randrange(100, 100_000) / 100, rng.randrange(CATEGORIES), rng.randrange(1, rows + 1))
        for _ in range(count)
    ]


# --- the queries ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    name: str
    sql: str  # {table} is the table, with or without its AS OF clause
    params: list[tuple]
    unit: str
    scale: float  # seconds per query to unit


def queries(sizes: Sizes, changes: list[tuple], rng: random.Random) -> list[Query]:
    """The queries timed, over 10 random categories and ``sizes.lookups`` ids: half of them
    rows the changes after the moment will touch (read AS OF from history), half any row."""
    changed = sorted({c[2] for c in changes})
    ids = rng.sample(changed, min(sizes.lookups // 2, len(changed)))
    ids += [rng.randrange(1, sizes.rows + 1) for _ in range(sizes.lookups - len(ids))]
    rng.shuffle(ids)
    cats = rng.sample(range(CATEGORIES), 10)
    return [
        Query("full count", "select count(*) from {table}", [()], "ms", 1e3),
        Query(
            "filtered aggregate",
            "select count(*), avg(price) from {table} where category = $1",
            [(c,) for c in cats],
            "ms",
            1e3,
        ),
        Query(
            "point lookup", "select * from {table} where id = $1", [(i,) for i in ids], "us", 1e6
        ),
    ]


def through_chronos(db: chronos_lite.Chronos, q: Query, table_: str, branch: str) -> Callable:
    sql = q.sql.format(table=table_)

    def run() -> list:
        return [db.sql(sql, *p, branch=branch).results[-1].rows for p in q.params]

    return run


def through_conn(conn: apsw.Connection, q: Query, table_: str) -> Callable:
    sql = q.sql.format(table=table_)

    def run() -> list:
        return [conn.execute(sql, p).fetchall() for p in q.params]

    return run


def same(a: object, b: object) -> bool:
    """Query answers equal (averages within float rounding: the rows may come in another
    order)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def check(what: str, got: object, want: object) -> None:
    if not same(got, want):
        print(f"warning: {what} gave other answers than expected", file=sys.stderr)


def time_reads(
    qs: list[Query], runners: dict[str, Callable[[Query], Callable]], rounds: int
) -> tuple[dict, dict]:
    """Best seconds per (runner, query), and each runner's answers (from its last round)."""
    fns = {(r, q.name): make(q) for r, make in runners.items() for q in qs}
    answers: dict = {}

    def job(key: tuple) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            answers[key] = fns[key]()
            return time.perf_counter() - start

        return run

    best = best_of(rounds, {key: job(key) for key in fns})
    return best, answers


def query_figure(
    name: str,
    q: Query,
    best: dict,
    mine: str,
    base: str,
    base_is: str,
    limit: float | None,
) -> Figure:
    """Query ``q``'s time per query through runner ``mine`` next to runner ``base``."""
    per = len(q.params)
    value = best[(mine, q.name)] / per * q.scale
    base_value = best[(base, q.name)] / per * q.scale
    return figure(name, q.unit, value, base_value, base_is, at_most=limit)


# --- 1. AS OF on main -----------------------------------------------------------------------


class Setup:
    """The big database, shared by the sections (built once: it is most of the set-up time)."""

    def __init__(self, sizes: Sizes, work: Path) -> None:
        self.sizes, self.work = sizes, work
        self.folder = work / "big"
        self.db = build_chronos(self.folder, sizes.rows)
        self.db.sql(INDEX)
        self.plain = build_plain(work / "big-plain.sqlite", sizes.rows)
        self.plain.execute(INDEX)
        self.rng = random.Random(5)


def bench_main_as_of(s: Setup) -> list[Figure]:
    sizes, db, rng = s.sizes, s.db, s.rng
    changes = random_changes(sizes.changes, sizes.rows, rng)
    qs = queries(sizes, changes, rng)
    then = {q.name: through_chronos(db, q, "items", "main")() for q in qs}
    moment = note_moment()
    for params in changes:  # each its own call, as an agent or an app would make them
        db.sql(CHANGE, *params)
    s.plain.execute("BEGIN")
    s.plain.executemany(CHANGE, changes)
    s.plain.execute("COMMIT")

    # The AS OF view by itself, on a connection of its own: the SQL that chronos runs for it.
    sqlconn = apsw.Connection(str(db.database.path), flags=apsw.SQLITE_OPEN_READONLY)
    n, t = db.database.table("items")
    seq = moments.seq_at(sqlconn, n, moments.parse_moment(moment))
    sqlconn.execute(f"create temp view asof as {worldviews.main_as_of(t, n, seq)}")

    as_of = f"items as of '{moment}'"
    runners = {
        "main": lambda q: through_chronos(db, q, "items", "main"),
        "as of": lambda q: through_chronos(db, q, as_of, "main"),
        "main@": lambda q: through_chronos(db, q, "items", f"main@{moment}"),
        "plain": lambda q: through_conn(s.plain, q, "items"),
        "sql main": lambda q: through_conn(sqlconn, q, "main.items"),
        "sql as of": lambda q: through_conn(sqlconn, q, "temp.asof"),
    }
    best, answers = time_reads(qs, runners, sizes.rounds)
    sqlconn.close()
    for q in qs:
        for r in ("as of", "main@", "sql as of"):
            check(f"{q.name} ({r})", answers[(r, q.name)], then[q.name])
        check(f"{q.name} (main now)", answers[("main", q.name)], answers[("plain", q.name)])
    figures = []
    for q in qs:
        figures += [
            query_figure(f"{q.name}, AS OF", q, best, "as of", "main", "main now", MAIN_AT),
            query_figure(f"{q.name}, main@when", q, best, "main@", "main", "main now", None),
            query_figure(
                f"{q.name}, AS OF in SQLite alone",
                q,
                best,
                "sql as of",
                "sql main",
                "main.items, same connection",
                None,
            ),
            query_figure(
                f"{q.name}, main now / plain", q, best, "main", "plain", "plain file", None
            ),
        ]
    return figures


# --- 2. AS OF on a world --------------------------------------------------------------------


def bench_world_as_of(s: Setup) -> list[Figure]:
    sizes, db, rng = s.sizes, s.db, s.rng
    db.fork("w")
    apply(db, "w", change_plan(sizes.rows, rng))  # 1%: 80% updated, 10% deleted, 10% new
    changes = random_changes(sizes.changes, sizes.rows, rng)
    qs = queries(sizes, changes, rng)
    then = {q.name: through_chronos(db, q, "items", "w")() for q in qs}
    moment = note_moment()
    for params in changes:
        db.sql(CHANGE, *params, branch="w")

    world = db.database.world("w")
    n, t = db.database.table("items", world)
    base = world.base.get(n, 0)
    when = moments.parse_moment(moment)
    sqlconn = apsw.Connection(str(db.database.path), flags=apsw.SQLITE_OPEN_READONLY)
    # (a world as it is now is TEMP tables on its own connection: here, the same view at now)
    now = worldviews.world_at(t, n, world.id, base, time.time())
    sqlconn.execute(f"create temp view wnow as {now}")
    sqlconn.execute(f"create temp view wasof as {worldviews.world_at(t, n, world.id, base, when)}")

    as_of = f"items as of '{moment}'"
    runners = {
        "w": lambda q: through_chronos(db, q, "items", "w"),
        "as of": lambda q: through_chronos(db, q, as_of, "w"),
        "w@": lambda q: through_chronos(db, q, "items", f"w@{moment}"),
        "sql w": lambda q: through_conn(sqlconn, q, "temp.wnow"),
        "sql as of": lambda q: through_conn(sqlconn, q, "temp.wasof"),
    }
    best, answers = time_reads(qs, runners, sizes.rounds)
    sqlconn.close()
    for q in qs:
        for r in ("as of", "w@", "sql as of"):
            check(f"{q.name} on w ({r})", answers[(r, q.name)], then[q.name])
        check(f"{q.name} on w (now, in SQLite)", answers[("sql w", q.name)], answers[("w", q.name)])
    db.discard("w")
    figures = []
    for q in qs:
        figures += [
            query_figure(f"{q.name}, world AS OF", q, best, "as of", "w", "world now", WORLD_AT),
            query_figure(f"{q.name}, w@when", q, best, "w@", "w", "world now", None),
            query_figure(
                f"{q.name}, world AS OF in SQLite alone",
                q,
                best,
                "sql as of",
                "sql w",
                "the same view at now, same connection",
                None,
            ),
        ]
    return figures


# --- 3. writes to main with history ---------------------------------------------------------


def bench_writes(s: Setup) -> list[Figure]:
    sizes, rng = s.sizes, s.rng
    main = s.db.database.session("main").conn
    sides = {
        "chronos": lambda sql, p: in_transaction(main, sql, p),
        "raw": lambda sql, p: in_transaction(s.plain, sql, p),
    }
    best = best_of_batches(
        sizes.write_rounds, sides, lambda: write_batches(sizes.batch, sizes.rows, rng)
    )
    figures = []
    for kind in ("insert", "update"):
        rate = sizes.batch / best[("chronos", kind)]
        raw_rate = sizes.batch / best[("raw", kind)]
        figures.append(
            figure(
                f"{kind} rows/s, main with history",
                "rows/s",
                rate,
                raw_rate,
                "plain file",
                at_least=1 / 4,
            )
        )
    return figures


# --- 4. file growth -------------------------------------------------------------------------


def file_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def checkpoint(conn: apsw.Connection) -> None:
    conn.execute("pragma wal_checkpoint(TRUNCATE)").fetchall()


def vacuum(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("VACUUM")
    checkpoint(conn)
    conn.close()


def bench_growth(sizes: Sizes, work: Path) -> list[Figure]:
    rows, count = sizes.growth_rows, sizes.growth_updates
    db = build_chronos(work / "growth", rows, LONG_NAME)
    main = db.database.session("main").conn
    plain_path = work / "growth-plain.sqlite"
    plain = build_plain(plain_path, rows, LONG_NAME)
    checkpoint(main)
    checkpoint(plain)
    loaded, plain_loaded = file_size(db.database.path), file_size(plain_path)
    rng = random.Random(11)
    changes = random_changes(count, rows, rng)
    for i in range(0, count, 1_000):  # as an app writes: short transactions
        for conn in (main, plain):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(CHANGE, changes[i : i + 1_000])
            conn.execute("COMMIT")
    checkpoint(main)
    checkpoint(plain)
    updated, plain_updated = file_size(db.database.path), file_size(plain_path)
    deleted = prune.prune(
        db.database, now=time.time() + 8 * 86400
    )  # past the 7-day window: all expire
    history = shadow.history_table(db.database.table("items")[0])
    left = main.execute(f"select count(*) from {history}").fetchone()[0]
    if deleted < rows + count - 1 or left != 1:
        print(f"warning: prune deleted {deleted:,} history rows, left {left}", file=sys.stderr)
    db.close()
    plain.close()
    vacuum(db.database.path)
    vacuum(plain_path)
    pruned, plain_vacuumed = file_size(db.database.path), file_size(plain_path)
    per_row = plain_loaded / rows
    mb = 1e6
    return [
        Figure(
            "history bytes per updated row",
            "B",
            (updated - loaded) / count,
            per_row,
            "plain file bytes per live row",
            (updated - loaded) / count / per_row,
            "(info)",
            None,
        ),
        Figure(
            "history bytes per inserted row",
            "B",
            (loaded - plain_loaded) / rows,
            per_row,
            "plain file bytes per live row",
            (loaded - plain_loaded) / rows / per_row,
            "(info)",
            None,
        ),
        Figure(
            "file size after the updates",
            "MB",
            updated / mb,
            plain_updated / mb,
            "plain file, same updates",
            updated / plain_updated,
            "(info)",
            None,
        ),
        Figure(
            "file size after prune + VACUUM",
            "MB",
            pruned / mb,
            plain_vacuumed / mb,
            "plain file after VACUUM",
            pruned / plain_vacuumed,
            "(info)",
            None,
        ),
    ]


# --- output ---------------------------------------------------------------------------------


def header(env: dict) -> str:
    s = env["sizes"]
    return (
        f"chronos_lite {env['chronos_lite']} ({env['revision']}) history benchmarks "
        f"({env['mode']}), {env['date']}\n"
        f"SQLite {env['sqlite']}, apsw {env['apsw']}, Python {env['python']}, "
        f"{env['cpus']} CPUs\n"
        f"AS OF: {label(s['rows'])} rows built through chronos, {s['changes']:,} changes since "
        f"the moment (world: 1% changed before it), {s['lookups']:,} lookups, 10 categories, "
        f"best of {s['rounds']} interleaved rounds; writes: batches of {s['batch']:,} rows, "
        f"best of {s['write_rounds']}; growth: {s['growth_updates']:,} updates of "
        f"{s['growth_rows']:,} rows"
    )


def main(argv: list[str] | None = None) -> int:
    args = arguments(__doc__, "small sizes, finishes in seconds").parse_args(argv)
    sizes = QUICK if args.quick else FULL
    env = environment(args.quick, sizes)
    print(header(env), flush=True)
    figures: list[Figure] = []
    with work_folder("history-") as work:
        with section(f"build {label(sizes.rows)} rows"):
            setup = Setup(sizes, work)
        for name, bench in (
            ("AS OF on main", bench_main_as_of),
            ("AS OF on a world", bench_world_as_of),
            ("writes", bench_writes),
        ):
            with section(name):
                figures += bench(setup)
        setup.db.close()
        setup.plain.close()
        with section("file growth"):
            figures += bench_growth(sizes, work)
    print()
    print(table(figures))
    print(f"\n{missed(f.passed for f in figures)}")
    write_json(args.json, {**env, "figures": [asdict(f) for f in figures]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
