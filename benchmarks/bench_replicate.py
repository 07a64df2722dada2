#!/usr/bin/env python3
"""What Litestream's replication costs chronos' writers (issue 29): the write rate on main while
`chronos <folder> replicate file://...` streams every commit to a file replica, beside the same
folder's rate with no replication, in the same run.

* single-row inserts on main through `sql` (the Python API, as every front end calls it), each
  its own transaction on disk before it returns (main's synchronous=full, on both sides: chronos
  sets it, replicating or not);
* the same on a world (synchronous=normal: WAL batches them), for information;
* main's p99 and slowest single write on each side (a stall: a checkpoint that waited on the
  other), the most frames the WAL held at once (what no checkpoint had let SQLite start the log
  over on yet), and whether the replica restored holds every commit.

Rounds alternate without and with (Litestream started afresh for each round, on a replica of
its own, timed from its first snapshot). Target (ours): main's write rate while replicating at
least 0.8x of without. Needs the optional dependency: pip install 'chronos-lite[replicate]'.

    .venv/bin/python benchmarks/bench_replicate.py            # 2,000 writes a round, 3 rounds
    .venv/bin/python benchmarks/bench_replicate.py --quick    # 300 writes a round, 2 rounds
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import CHRONOS, Figure, arguments, figure, missed, table, work_folder, write_json

import chronos_lite
from chronos_lite.copies import litestream


class WalIndex:
    """Frames in the WAL now (mxFrame of the WAL index's header, in chronos.db-shm): how much
    of the log no checkpoint has let SQLite start over on (the file's size says less: it keeps
    its largest size). Opened once and closed after the database: closing a descriptor of the
    file drops this process' POSIX locks on it, SQLite's included, and another process opening
    it then takes it for unused and resets the index under our mapping (SIGBUS)."""

    def __init__(self, folder: Path) -> None:
        self.fd = os.open(folder / "chronos.db-shm", os.O_RDONLY)

    def frames(self) -> int:
        return int.from_bytes(os.pread(self.fd, 4, 16), sys.byteorder)

    def close(self) -> None:
        os.close(self.fd)


def writes(
    db: chronos_lite.Chronos, index: WalIndex, branch: str, n: int, start: int
) -> tuple[float, list, int]:
    """``n`` single-row commits on ``branch``: (writes a second, each write's seconds, the most
    WAL frames seen)."""
    took, frames = [], 0
    began = time.perf_counter()
    for i in range(start, start + n):
        t = time.perf_counter()
        db.sql(
            "insert into items(name, n) values ($1, $2)", f"item {i} " + "x" * 100, i, branch=branch
        )
        took.append(time.perf_counter() - t)
        if i % 20 == 0:
            frames = max(frames, index.frames())
    return n / (time.perf_counter() - began), took, frames


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


def quantile(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


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
        index = WalIndex(folder)
        best = {(side, b): 0.0 for side in ("off", "on") for b in ("main", "w")}
        took: dict[tuple[str, str], list[float]] = {key: [] for key in best}
        frames = {"off": 0, "on": 0}
        done = starts = 0
        for r in range(rounds):
            for side in ("off", "on") if r % 2 == 0 else ("on", "off"):
                for branch in ("main", "w"):
                    if side == "on":
                        starts += 1
                        url = f"file://{work / f'replica-{starts}'}"
                        with Replicating(folder, url, log):
                            rate, each, most = writes(db, index, branch, n, done)
                    else:
                        rate, each, most = writes(db, index, branch, n, done)
                    done += n
                    best[(side, branch)] = max(best[(side, branch)], rate)
                    took[(side, branch)] += each
                    frames[side] = max(frames[side], most)
        starts += 1  # (a last replica: the restore below checks it holds every commit)
        url = f"file://{work / f'replica-{starts}'}"
        with Replicating(folder, url, log):
            writes(db, index, "main", n, done)
        source = db.sql("select count(*) from items").results[0].rows[0][0]
        db.close()
        index.close()
        replica = restored_count(program, url, work / "restored.db")
        snapshots = log.read_text().count("snapshot complete")
    figures: list[Figure] = [
        figure(
            "main: single-row writes while replicating, writes/s",
            "rows/s",
            best[("on", "main")],
            best[("off", "main")],
            "no replication",
            at_least=0.8,
        ),
        figure(
            "a world: single-row writes while replicating, writes/s",
            "rows/s",
            best[("on", "w")],
            best[("off", "w")],
            "no replication",
        ),
        *(
            figure(f"main: {name} write while replicating", "ms", on * 1000, off * 1000, "no repl.")
            for name, on, off in (
                (
                    "p99",
                    quantile(took[("on", "main")], 0.99),
                    quantile(took[("off", "main")], 0.99),
                ),
                ("the slowest", max(took[("on", "main")]), max(took[("off", "main")])),
            )
        ),
        figure("the most WAL frames at once", "frames", frames["on"], frames["off"], "no repl."),
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
