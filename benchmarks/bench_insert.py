#!/usr/bin/env python3
"""Loading a CSV file: ``chronos <folder> insert`` against ``sqlite-utils insert``.

A CSV file of 100,000 rows and 5 columns (id, name, email, age, score) is loaded

1. by ``chronos <folder> insert t data.csv --pk id`` into main (a new table: its types are
   detected in a first pass over the file, then the rows go in with main's history kept);
2. by the same command with ``-b w`` into a world (the table is the world's schema change, its
   rows go through the world's views into its overlay and history);
3. by ``sqlite-utils insert plain.db t data.csv --csv --pk id`` into a plain SQLite file (it
   detects the types too: it inserts the text, then transforms the table);

each as a command of its own (the process' start included), timed by the wall clock and by
the CPU the process used (user + system). In-process figures split the chronos time: the same
loads through ``db.call("insert", ...)``, into main with the table already there (one pass: no
type detection), and the floor, apsw's executemany of the same rows into a plain file in one
transaction.

The machine is shared and noisy: the loads run round by round, and each keeps its fastest
round. Wall-clock figures on a slow disk mostly measure fsync: sqlite-utils commits every batch
of rows, chronos commits once.

Run from the repository root:

    .venv/bin/python benchmarks/bench_insert.py               # 100,000 rows, 3 rounds
    .venv/bin/python benchmarks/bench_insert.py --rows 10000 --rounds 1
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw

import chronos_lite

BIN = Path(sys.executable).parent
CHRONOS = str(BIN / "chronos")
SQLITE_UTILS = str(BIN / "sqlite-utils")


def make_csv(path: Path, rows: int) -> None:
    rng = random.Random(1)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "name", "email", "age", "score"])
        for i in range(1, rows + 1):
            out.writerow(
                [
                    i,
                    f"user {i}",
                    f"u{i}@example.org",
                    rng.randint(18, 90),
                    rng.randint(0, 9999) / 100,
                ]
            )


def command(args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a command run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def fresh(work: Path, name: str) -> Path:
    path = work / name
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    for extra in (f"{name}-wal", f"{name}-shm", f"{name}-journal"):
        (work / extra).unlink(missing_ok=True)
    return path


def chronos_main(work: Path, data: Path) -> tuple[float, float]:
    folder = fresh(work, "shop")
    chronos_lite.init(folder).close()
    return command([CHRONOS, str(folder), "insert", "t", str(data), "--pk", "id"])


def chronos_world(work: Path, data: Path) -> tuple[float, float]:
    folder = fresh(work, "shop")
    db = chronos_lite.init(folder)
    db.fork("w")
    db.close()
    return command([CHRONOS, str(folder), "insert", "t", str(data), "--pk", "id", "-b", "w"])


def sqlite_utils(work: Path, data: Path) -> tuple[float, float]:
    plain = fresh(work, "plain.db")
    return command([SQLITE_UTILS, "insert", str(plain), "t", str(data), "--csv", "--pk", "id"])


def in_process(work: Path, data: Path, branch: str, existing: bool) -> float:
    folder = fresh(work, "shop")
    db = chronos_lite.init(folder)
    try:
        if branch != "main":
            db.fork(branch)
        if existing:
            db.sql(
                "create table t(id integer primary key, name text, email text, age integer, "
                "score real)",
                branch=branch,
            )
        start = time.perf_counter()
        db.call("insert", table="t", file=str(data), pk=["id"], branch=branch)
        return time.perf_counter() - start
    finally:
        db.close()


def floor(work: Path, data: Path) -> float:
    """apsw alone: the rows (as text, parsed by the csv module) into a plain file."""
    plain = fresh(work, "floor.db")
    conn = apsw.Connection(str(plain))
    conn.execute("pragma journal_mode = wal").fetchall()  # (as chronos' file)
    conn.execute(
        "create table t(id integer primary key, name text, email text, age integer, score real)"
    )
    start = time.perf_counter()
    with open(data, newline="") as f:
        reader = csv.reader(f)
        next(reader)
        with conn:
            conn.executemany("insert into t values (?, ?, ?, ?, ?)", reader)
    took = time.perf_counter() - start
    conn.close()
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    ns = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_insert_"))
    try:
        data = work / "data.csv"
        make_csv(data, ns.rows)
        size = data.stat().st_size
        print(f"{ns.rows:,} rows, 5 columns, {size / 1e6:.1f} MB of CSV ({work})")
        commands = {
            "chronos insert into main": chronos_main,
            "chronos insert into a world": chronos_world,
            "sqlite-utils insert (plain file)": sqlite_utils,
        }
        loads = {
            "db.call insert, main, new table": lambda: in_process(work, data, "main", False),
            "db.call insert, main, table there": lambda: in_process(work, data, "main", True),
            "db.call insert, world, new table": lambda: in_process(work, data, "w", False),
            "db.call insert, world, table there": lambda: in_process(work, data, "w", True),
            "apsw executemany, plain file": lambda: floor(work, data),
        }
        best: dict[str, tuple[float, float]] = {}
        inner: dict[str, float] = {}
        for round_ in range(ns.rounds):
            order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
            for name in order:
                wall, cpu = commands[name](work, data)
                old = best.get(name)
                best[name] = (min(wall, old[0]), min(cpu, old[1])) if old else (wall, cpu)
            for name, load in loads.items():
                inner[name] = min(load(), inner.get(name, float("inf")))
        base_wall, base_cpu = best["sqlite-utils insert (plain file)"]
        print(f"\n{'command (process start included)':<36}{'wall s':>9}{'cpu s':>9}{'rows/s':>11}")
        for name, (wall, cpu) in best.items():
            print(f"{name:<36}{wall:>9.2f}{cpu:>9.2f}{ns.rows / wall:>11,.0f}")
        print("\nratio to sqlite-utils insert (lower is faster)     wall     cpu")
        for name in ("chronos insert into main", "chronos insert into a world"):
            wall, cpu = best[name]
            print(f"  {name:<47}{wall / base_wall:>6.2f}x{cpu / base_cpu:>7.2f}x")
        print(f"\n{'in-process (the load alone)':<40}{'s':>8}{'rows/s':>11}")
        for name, took in inner.items():
            print(f"{name:<40}{took:>8.2f}{ns.rows / took:>11,.0f}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
