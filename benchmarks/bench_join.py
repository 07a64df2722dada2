#!/usr/bin/env python3
"""A `chronos mcp` joined to the process that has the folder open (issue 27), beside one that
opens the folder itself (`--no-join`), on the same folder in the same run.

* a new session's first answer: from starting the process to the reply of its first `sql`
  (initialize first);
* a new session's first text `find` on a world: the host's databases keep the world's search
  index from an earlier session, a process of its own builds it again;
* one call's round trip (`get` on main, p50 of a session's calls): a joined call crosses the
  relay and the socket twice more;
* two sessions writing main at once (`sql` inserts, one row a call), each its own process:
  the calls a second both sessions made together.

The host is an idle `chronos mcp --allow-merge` that has the folder open. Ratios are joined
over alone: below 1 joining is faster (for rates, above 1). No targets: the issue asks what
joining buys, measured.

    .venv/bin/python benchmarks/bench_join.py            # 5 sessions a shape, 1,000 calls
    .venv/bin/python benchmarks/bench_join.py --quick
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from common import Figure, arguments, figure, table, work_folder, write_json

import chronos_lite

ROOT = Path(__file__).resolve().parent.parent
CHRONOS = str(ROOT / ".venv" / "bin" / "chronos")
WORDS = "apple banana cherry delta echo foxtrot golf hotel india juliet kilo lima".split()


def build(folder: Path, rows: int) -> None:
    """users (``rows``, a note of three words each), a world w that changed 1% of them."""
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text, note text)")
        db.sql(
            "with recursive n(i) as (select 1 union all select i + 1 from n where i < $1) "
            "insert into users(name, note) select 'user ' || i, "
            "i % 12 || ' ' || (i * 7) % 12 || ' ' || (i * 13) % 12 from n",
            rows,
        )
        words = ", ".join(f"({i}, '{w}')" for i, w in enumerate(WORDS))
        db.sql(
            f"with w(i, word) as (values {words}) update users set note = "
            "(select group_concat(word, ' ') from w where instr(' ' || note || ' ', "
            "' ' || i || ' ') > 0)"
        )
        db.fork("w")
        db.sql("update users set name = name || ' (w)' where id % 100 = 0", branch="w")


class Session:
    """One `chronos mcp` process, spoken to line by line."""

    def __init__(self, folder: Path, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [CHRONOS, "mcp", str(folder), "--allow-merge", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.n = 0

    def request(self, method: str, params: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.n += 1
        line = {"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply.get("id") == self.n and "result" in reply, reply
        assert not reply["result"].get("isError"), reply
        return reply["result"]

    def initialize(self) -> None:
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
        self.request("initialize", params)

    def call(self, name: str, arguments: dict) -> dict:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def first_answer(folder: Path, flags: tuple[str, ...]) -> float:
    start = time.perf_counter()
    session = Session(folder, *flags)
    session.initialize()
    session.call("sql", {"sql": "select name from users where id = 1"})
    took = time.perf_counter() - start
    session.close()
    return took


def first_find(folder: Path, flags: tuple[str, ...]) -> float:
    session = Session(folder, *flags)
    session.initialize()
    start = time.perf_counter()
    session.call("find", {"table": "users", "text": "cherry golf", "branch": "w", "limit": 5})
    took = time.perf_counter() - start
    session.close()
    return took


def round_trip(folder: Path, flags: tuple[str, ...], calls: int) -> float:
    session = Session(folder, *flags)
    session.initialize()
    times = []
    for i in range(calls + 50):
        start = time.perf_counter_ns()
        session.call("get", {"table": "users", "id": str(1 + i % 1000)})
        times.append(time.perf_counter_ns() - start)
    session.close()
    return statistics.median(times[50:]) / 1000


def writing_together(folder: Path, flags: tuple[str, ...], calls: int) -> float:
    """Calls a second of two sessions inserting into main at once."""
    sessions = [Session(folder, *flags) for _ in range(2)]
    for s in sessions:
        s.initialize()
    ready = threading.Barrier(3)

    def write(s: Session) -> None:
        ready.wait()
        for _ in range(calls):
            s.call("sql", {"sql": "insert into users(name, note) values ('new', 'kilo')"})

    threads = [threading.Thread(target=write, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    ready.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    for s in sessions:
        s.close()
    return 2 * calls / took


def main() -> int:
    parser = arguments(__doc__ or "", "3 sessions a shape and 300 calls")
    ns = parser.parse_args()
    sessions, calls, rows = (3, 300, 20_000) if ns.quick else (5, 1000, 100_000)
    with work_folder("bench-join") as work:
        folder = work / "shop"
        build(folder, rows)
        alone = ("--no-join",)
        figures: list[Figure] = []

        def both(name: str, unit: str, measure: Any) -> None:
            solo = measure(folder, alone)
            host = Session(folder)  # (the owner, idle: it has the folder open)
            try:
                host.initialize()
                measure(folder, ())  # (warm: the host's databases, as any earlier session)
                joined = measure(folder, ())
            finally:
                host.close()
            figures.append(figure(name, unit, joined, solo, "alone"))

        def best(fn: Any) -> Any:
            return lambda f, flags: min(fn(f, flags) for _ in range(sessions))

        both("a session's first answer", "ms", lambda f, fl: 1000 * best(first_answer)(f, fl))
        both("first text find on a world", "ms", lambda f, fl: 1000 * best(first_find)(f, fl))
        both("get round trip, p50", "us", lambda f, fl: round_trip(f, fl, calls))
        both(
            "two sessions inserting, calls/s",
            "rows/s",
            lambda f, fl: writing_together(f, fl, calls),
        )
    print(f"chronos mcp joined beside alone: {rows:,} users, best of {sessions} sessions")
    print(table(figures))
    write_json(ns.json, [f.__dict__ for f in figures])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
