#!/usr/bin/env python3
"""What a world's write costs, step by step: each step of the trigger recording a world's
writes to its copy of ``items`` (a native TEMP table: chronos_lite/storage/world/native.py)
taken out in turn, the batch timed again, beside the same batch on a plain SQLite file.

Not a benchmark of the package as it runs (a trigger with a step taken out writes a wrong
world): a study, for the write figures of bench_worlds.py and the misses explained in
benchmarks/README.md. Each row: the batch's time without that step, what the step costs a
row, and the world's rate against plain SQLite's without it. Then the same for the time a
new statement text takes to prepare (SQLite compiles a table's triggers into every statement
that writes it).

Run from the repository root:

    .venv/bin/python benchmarks/study_world_writes.py            # 20k rows, batches of 2,000
    .venv/bin/python benchmarks/study_world_writes.py --quick    # smaller, seconds
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
from common import build_plain, in_transaction, raw_copy, work_folder, write_batches

import chronos_lite
from chronos_lite.sqltext import tokens

TRIGGERS = {"insert": "_chronos_w_ni_1", "update": "_chronos_w_nk_1"}
PREPARED = "insert into items(category, price, name) select {i}, 1.0, 'x' where 0"


def steps_of(sql: str) -> tuple[str, list[str]]:
    """A trigger's head (to BEGIN) and its body's statements, split where SQLite would."""
    found = tokens(sql)
    begin = next(i for i, t in enumerate(found) if t[1] == "word" and t[0].upper() == "BEGIN")
    head, body_start = sql[: found[begin][3]], found[begin][3]
    body_end = max(i for i, t in enumerate(found) if t[1] == "word" and t[0].upper() == "END")
    cuts, depth = [body_start], 0
    for text, kind, start, _end in found[begin + 1 : body_end]:
        if kind == "punct" and text in "()":
            depth += 1 if text == "(" else -1
        elif kind == "punct" and text == ";" and depth == 0:
            cuts.append(start + 1)
    statements = [sql[a:b].strip().rstrip(";").strip() for a, b in zip(cuts, cuts[1:])]
    return head.replace("CREATE TRIGGER", "CREATE TEMP TRIGGER", 1), [s for s in statements if s]


def with_steps(conn: apsw.Connection, name: str, head: str, kept: list[str]) -> None:
    conn.execute(f"DROP TRIGGER temp.{name}")
    conn.execute(f"{head} {'; '.join(kept or ['SELECT 1'])}; END")


class World:
    """A fresh world of ``db`` for each timing, its trigger ``name`` cut to ``keep``."""

    def __init__(self, db: chronos_lite.Chronos) -> None:
        self.db, self.count = db, 0

    def conn(self, name: str, keep: Callable[[list[str]], list[str]] | None) -> apsw.Connection:
        self.count += 1
        world = f"study{self.count}"
        self.db.fork(world)
        conn = self.db.database.writable(self.db.database.session(world), "items").conn
        if keep is not None:
            sql = conn.execute("select sql from temp.sqlite_schema where name = ?", (name,))
            head, steps = steps_of(sql.fetchall()[0][0])
            with_steps(conn, name, head, keep(steps))
        return conn

    def statements(self, name: str) -> list[str]:
        conn = self.conn(name, None)
        sql = conn.execute("select sql from temp.sqlite_schema where name = ?", (name,))
        return steps_of(sql.fetchall()[0][0])[1]


def best(rounds: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(rounds))


def study_writes(kind: str, world: World, raw: apsw.Connection, batches: list, rounds: int) -> None:
    name = TRIGGERS[kind]
    sql, params = batches[0][kind]
    base = best(rounds, lambda: in_transaction(raw, sql, params))
    rows = len(params)

    def timed(keep: Callable[[list[str]], list[str]] | None) -> float:
        return best(rounds, lambda: in_transaction(world.conn(name, keep), sql, params))

    whole = timed(None)
    print(f"\n{kind}: {rows} rows a batch; plain SQLite {base * 1e6 / rows:.2f} us a row")
    print(
        f"  the world's trigger ({name}): {whole * 1e6 / rows:.2f} us a row, "
        f"{base / whole:.3f}x of plain SQLite's rate"
    )
    for i, step in enumerate(world.statements(name)):
        t = timed(lambda steps, i=i: [s for j, s in enumerate(steps) if j != i])
        print(
            f"  without step {i:2d}: {base / t:.3f}x, the step {(whole - t) * 1e6 / rows:6.2f} "
            f"us a row   {step[:70]}"
        )
    empty = timed(lambda steps: [])
    print(f"  an empty trigger: {base / empty:.3f}x of plain SQLite's rate")


def study_prepare(world: World, rounds: int) -> None:
    name = TRIGGERS["insert"]
    conn = world.conn(name, None)
    serial = iter(range(10**9))

    def prepare() -> float:
        start = time.perf_counter()
        for _ in range(100):
            conn.execute(PREPARED.format(i=next(serial)), can_cache=False).fetchall()
        return (time.perf_counter() - start) / 100

    whole = best(rounds, prepare)
    print(f"\nprepare a new INSERT text on a world: {whole * 1e6:.0f} us")
    sql = conn.execute("select sql from temp.sqlite_schema where name = ?", (name,))
    head, steps = steps_of(sql.fetchall()[0][0])
    for i, step in enumerate(steps):
        with_steps(conn, name, head, [s for j, s in enumerate(steps) if j != i])
        t = best(rounds, prepare)
        print(f"  without step {i:2d} of {name}: {t * 1e6:6.0f} us   {step[:70]}")
    with_steps(conn, name, head, steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5k rows, batches of 500")
    args = parser.parse_args(argv)
    rows, batch, rounds = (5_000, 500, 3) if args.quick else (20_000, 2_000, 5)
    with work_folder("study-writes") as work:
        plain = build_plain(Path(work) / "plain.sqlite", rows)
        raw = raw_copy(plain, Path(work) / "raw.sqlite")
        db = chronos_lite.init(Path(work) / "db", plain)
        rng = random.Random(5)
        batches = [write_batches(batch, rows, rng)]
        world = World(db)
        for kind in ("insert", "update"):
            study_writes(kind, world, raw, batches, rounds)
        study_prepare(world, rounds)
        raw.close()
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
