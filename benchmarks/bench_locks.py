#!/usr/bin/env python3
"""Writers sharing one database's write lock: does each get its turn?

Three writers insert rows into main of one chronos database at once, for the same number of
seconds, each in a process of its own:

* **tight loop**: a Python program calling ``db.sql("insert ...")`` as fast as it can (what an
  agent's script, or an MCP session hammering ``put``, does);
* **CLI**: ``chronos <folder> sql "insert ..."`` run again and again (a person, or a shell
  script); each run starts a process, so it can't write often even alone;
* **stdlib app**: Python's ``sqlite3`` module, ``insert`` + ``commit`` in a loop, with its own
  busy timeout of 5 s (an app that writes main directly, outside chronos).

Each writer is first measured **alone** for the same time, then **together**. Because the CLI
can't write as often as a loop even with the database to itself (a process start per write),
raw rates say more about process starts than about the lock. So the target is on each
writer's *share*: its rate together divided by its rate alone. Target: the smallest share is
at least 1/10 of the largest (no writer is starved). Failed writes (a busy error) are counted
too; there should be none.

    .venv/bin/python benchmarks/bench_locks.py            # 10 s per phase
    .venv/bin/python benchmarks/bench_locks.py --quick    # 3 s per phase, for CI

A missed target prints MISS; the exit status stays 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from common import CHRONOS, arguments, verdict, work_folder, write_json

import chronos_lite

TARGET = 0.1  # the smallest share at least this fraction of the largest

TIGHT = """
import sys, time, chronos_lite
from chronos_lite.errors import ChronosError
db = chronos_lite.open(sys.argv[1]); end = time.time() + float(sys.argv[2]); ok = bad = 0
while time.time() < end:
    try:
        db.sql("insert into log(who) values ('tight')"); ok += 1
    except ChronosError:
        bad += 1
print(ok, bad)
"""

STDLIB = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=5.0); end = time.time() + float(sys.argv[2]); ok = bad = 0
while time.time() < end:
    try:
        c.execute("insert into log(who) values ('app')"); c.commit(); ok += 1
    except sqlite3.OperationalError:
        c.rollback(); bad += 1
print(ok, bad)
"""

CLI = """
import subprocess, sys, time
end = time.time() + float(sys.argv[2]); ok = bad = 0
while time.time() < end:
    r = subprocess.run([sys.argv[3], sys.argv[1], "sql", "insert into log(who) values ('cli')"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        ok += 1
    else:
        bad += 1
        print(r.stderr.strip(), file=sys.stderr)
print(ok, bad)
"""


def writers(folder: Path, seconds: float) -> dict[str, list[str]]:
    db_file, time_ = str(folder / "chronos.db"), str(seconds)
    return {
        "tight loop (Python API)": [sys.executable, "-c", TIGHT, str(folder), time_],
        "CLI (chronos sql)": [sys.executable, "-c", CLI, str(folder), time_, CHRONOS],
        "stdlib app (sqlite3)": [sys.executable, "-c", STDLIB, db_file, time_],
    }


def run(commands: dict[str, list[str]], seconds: float) -> dict[str, tuple[float, int]]:
    """Start every command at once; each runs ``seconds``: (writes per second, failures)."""
    procs = {
        name: subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name, cmd in commands.items()
    }
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=seconds + 120)
        ok, bad = (int(x) for x in stdout.split())
        if stderr.strip():
            print(f"  {name}: {stderr.decode().strip().splitlines()[-1]}")
        out[name] = (ok / seconds, bad)
    return out


def main() -> None:
    parser = arguments(__doc__, "3 s per phase instead of 10")
    parser.add_argument("--seconds", type=float, default=None)
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    with work_folder("locks-") as tmp:
        folder = tmp / "db"
        db = chronos_lite.init(folder)
        db.sql("create table log(id integer primary key, who text)")
        db.close()
        commands = writers(folder, seconds)
        alone = {name: run({name: cmd}, seconds)[name] for name, cmd in commands.items()}
        together = run(commands, seconds)
    print(f"chronos_lite {chronos_lite.__version__}: writers sharing main, {seconds:g} s a phase")
    print(f"{os.cpu_count()} CPUs; each writer its own process\n")
    head = f"{'writer':<26}{'alone /s':>10}{'together /s':>13}{'share':>8}{'failed':>8}"
    print(head)
    print("-" * len(head))
    shares = {}
    for name in commands:
        rate_alone, _ = alone[name]
        rate, failed = together[name]
        shares[name] = rate / rate_alone if rate_alone else 0.0
        print(f"{name:<26}{rate_alone:>10.1f}{rate:>13.1f}{shares[name]:>8.2f}{failed:>8}")
    low, high = min(shares.values()), max(shares.values())
    ratio = low / high if high else 0.0
    raw = [together[n][0] for n in commands]
    ok = ratio >= TARGET and not any(together[n][1] for n in commands)
    print(
        f"\nsmallest share / largest share: {ratio:.2f} (target >= {TARGET:g}, no failures): "
        f"{verdict(ok)}"
    )
    print(f"(raw rates together, slowest / fastest: {min(raw) / max(raw):.3f}, for information)")
    write_json(args.json, {"seconds": seconds, "alone": alone, "together": together})


if __name__ == "__main__":
    main()
