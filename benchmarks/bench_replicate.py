#!/usr/bin/env python3
"""What Litestream's replication costs chronos' writers (issue 29): the write rate on main while
`chronos <folder> replicate file://...` streams every commit to a file replica, beside the same
folder's rate with no replication, in the same run.

* single-row inserts on main through `sql` (the Python API, as every front end calls it), each
  its own transaction on disk before it returns (main's synchronous=full, on both sides: chronos
  sets it, replicating or not);
* the same on a world (synchronous=normal: WAL batches them), for information;
* the slowest single write on each side (a stall: a checkpoint that waited on the other), the
  WAL file's high-water mark, and whether the replica restored holds every commit.

Rounds alternate without and with (Litestream started afresh for each round, on a replica of
its own, timed from its first snapshot). Target (ours): main's write rate while replicating at
least 0.8x of without. Needs the optional dependency: pip install 'chronos-lite[replicate]'.

    .venv/bin/python benchmarks/bench_replicate.py            # 2,000 writes a round, 3 rounds
    .venv/bin/python benchmarks/bench_replicate.py --quick    # 300 writes a round, 2 rounds
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from common import CHRONOS, Figure, arguments, figure, missed, table, work_folder, write_json

import chronos_lite
from chronos_lite.copies import litestream


def writes(db: chronos_lite.Chronos, branch: str, n: int, start: int) -> tuple[float, float]:
    """``n`` single-row commits on ``branch``: (writes a second, the slowest write in s)."""
    slowest = 0.0
    began = time.perf_counter()
    for i in range(start, start + n):
        t = time.perf_counter()
        db.sql(
            "insert into items(name, n) values ($1, $2)", f"item {i} " + "x" * 100, i, branch=branch
        )
        slowest = max(slowest, time.perf_counter() - t)
    return n / (time.perf_counter() - began), slowest


class Replicating:
    """`chronos <folder> replicate <url>` for the length of a block, from its first snapshot."""

    def __init__(self, folder: Path, url: str, log: Path) -> None:
        self.folder, self.url, self.log = folder, url, log

    def __enter__(self) -> Replicating:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                [CHRONOS, str(self.folder), "replicate", self.url],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        seen = self.log.read_text().count("snapshot complete")
        deadline = time.monotonic() + 60
        while self.log.read_text().count("snapshot complete") == seen:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.__exit__()
                raise SystemExit(f"Litestream didn't start:\n{self.log.read_text()}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def restored_count(program: str, url: str, into: Path) -> int:
    """Main's rows in the replica as Litestream restores it."""
    subprocess.run(
        [program, "restore", "-o", str(into), url], check=True, capture_output=True, timeout=300
    )
    import sqlite3

    conn = sqlite3.connect(into)
    try:
        return conn.execute("select count(*) from items").fetchone()[0]
    finally:
        conn.close()


def main() -> int:
    parser = arguments(__doc__ or "", "300 writes a round, 2 rounds")
    ns = parser.parse_args()
    n, rounds = (300, 2) if ns.quick else (2_000, 3)
    program = litestream.binary()  # (no Litestream: the message says how to install it)
    with work_folder("bench-replicate") as work:
        folder, log = work / "shop", work / "replicate.log"
        db = chronos_lite.init(folder)
        db.sql("create table items(id integer primary key autoincrement, name text, n int)")
        db.fork("w")
        wal = folder / "chronos.db-wal"
        best = {(side, b): (0.0, 0.0) for side in ("off", "on") for b in ("main", "w")}
        slowest = dict.fromkeys(best, 0.0)
        high = {"off": 0, "on": 0}
        done = starts = 0
        for r in range(rounds):
            for side in ("off", "on") if r % 2 == 0 else ("on", "off"):
                for branch in ("main", "w"):
                    if side == "on":
                        starts += 1
                        url = f"file://{work / f'replica-{starts}'}"
                        with Replicating(folder, url, log):
                            got = writes(db, branch, n, done)
                            high[side] = max(high[side], wal.stat().st_size)
                    else:
                        got = writes(db, branch, n, done)
                        high[side] = max(high[side], wal.stat().st_size)
                    done += n
                    best[(side, branch)] = max(best[(side, branch)], got)
                    slowest[(side, branch)] = max(slowest[(side, branch)], got[1])
        starts += 1  # (a last replica: the restore below checks it holds every commit)
        url = f"file://{work / f'replica-{starts}'}"
        with Replicating(folder, url, log):
            writes(db, "main", n, done)
        source = db.sql("select count(*) from items").results[0].rows[0][0]
        db.close()
        replica = restored_count(program, url, work / "restored.db")
        snapshots = log.read_text().count("snapshot complete")
    figures: list[Figure] = [
        figure(
            "main: single-row writes while replicating, writes/s",
            "rows/s",
            best[("on", "main")][0],
            best[("off", "main")][0],
            "no replication",
            at_least=0.8,
        ),
        figure(
            "a world: single-row writes while replicating, writes/s",
            "rows/s",
            best[("on", "w")][0],
            best[("off", "w")][0],
            "no replication",
        ),
        figure(
            "main: the slowest write while replicating",
            "ms",
            slowest[("on", "main")] * 1000,
            slowest[("off", "main")] * 1000,
            "no replication",
        ),
        figure("WAL file's high-water mark", "MB", high["on"] / 1e6, high["off"] / 1e6, "no repl."),
    ]
    print(f"writes on main and a world, {n:,} single-row commits a round, {rounds} rounds")
    print(table(figures))
    print(
        f"the replica restored: {replica:,} of main's {source:,} rows "
        f"({'every commit' if replica == source else 'MISSING COMMITS'}); "
        f"{snapshots} snapshots for {starts} Litestream starts (one each: no WAL restarted under "
        "it)"
    )
    print(missed([*(f.passed for f in figures), replica == source]))
    write_json(
        ns.json,
        {"figures": [f.__dict__ for f in figures], "replica_rows": replica, "rows": source},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
