#!/usr/bin/env python3
"""What the shell adds to a statement, next to plain SQLite measured in the same run.

* **point select in the shell**: ``Shell.run_input("select * from users where id = ?;")``
  (through the registry's sql operation, psql-style rendering, written to a buffer) against
  apsw running the same query on a plain copy of the file and rendering it the same way.
* **point select, the sql call alone**: the registry's sql operation the shell calls, and its
  text, without the shell: the difference is the shell's own share.
* **script of single-row inserts**: ``Shell.run_script`` of inserts, each its own call and
  transaction (what ``chronos <folder> < file.sql`` does), against apsw running the same
  statements one by one in autocommit on the plain copy (``synchronous = full``, as main).
* **insert, a bar listening off a tty** (issue 30: progress costs nothing off a terminal):
  loading a 50,000-row CSV file with the command line's progress bar listening while its
  stream is no terminal, against the same load with no one listening (plain, here).
* **parsing a chronos statement**: microseconds per ``statements.parse`` (for information).
* **start and answer**: ``chronos <folder> -c "select 1"`` as a new process, against a new
  Python process that opens the file with apsw and runs the same query.
* **starting up** (issue 24: each under 100 ms, beside ``python -c "import apsw"``, the floor,
  timed in the same rounds): the shell's first answer (``chronos <folder> -c "select 1"``), the
  CLI's (``chronos <folder> sql "select 1"``), and ``chronos mcp <folder>`` from its start to
  the answers of ``initialize``, ``tools/list`` and a first ``tools/call`` (``describe``).
  PASS/MISS compares the time itself with 100 ms.

The environment sets PYTHONDONTWRITEBYTECODE=1, so a new process would compile every module of
chronos_lite it imports, each time: the script compiles the package first (``compileall``) and
measures what an installed package does.

The two sides run round by round, interleaved (the order reversed every other round), and
each keeps its fastest round: a busy neighbour slows both instead of skewing one.

    .venv/bin/python benchmarks/bench_shell.py            # the figures in benchmarks/README.md
    .venv/bin/python benchmarks/bench_shell.py --quick    # small sizes, for CI

A missed target prints MISS; the exit status stays 0.
"""

from __future__ import annotations

import compileall
import io
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import apsw
from common import CHRONOS, arguments, best_of, revision, timed, verdict, work_folder, write_json

import chronos_lite
from chronos_lite import progress, render
from chronos_lite.operations.registry import REGISTRY
from chronos_lite.shell.progress import Bars
from chronos_lite.shell.session import Shell
from chronos_lite.statements import chronos_sql as statements

ROWS = 10_000
# The shell's own share (next to the registry's sql call it makes) is for information; issue
# 30: progress costs nothing off a terminal (within the noise of a load timed beside itself)
PROGRESS_CASE = "insert, a bar listening off a tty"
TARGETS: dict[str, float] = {PROGRESS_CASE: 1.05}


def build(folder: Path) -> Path:
    plain = folder.parent / "plain.sqlite"
    conn = apsw.Connection(str(plain))
    conn.execute("pragma journal_mode = wal")
    conn.execute("create table users(id integer primary key, name text, email text unique)")
    with conn:
        conn.executemany(
            "insert into users values (?, ?, ?)",
            ((i, f"user {i}", f"u{i}@x.org") for i in range(1, ROWS + 1)),
        )
    conn.close()
    chronos_lite.init(folder, str(plain)).close()
    return plain


def plain_connection(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.execute("pragma synchronous = full; pragma foreign_keys = on")
    return conn


def point_select(shell: Shell, plain: apsw.Connection, n: int) -> dict[str, Callable[[], float]]:
    sql = "select * from users where id = {};"

    def chronos_side() -> float:
        shell.out = io.StringIO()
        start = time.perf_counter()
        for i in range(n):
            shell.run_input(sql.format(1 + i % ROWS))
        return (time.perf_counter() - start) / n

    def plain_side() -> float:
        out = io.StringIO()
        start = time.perf_counter()
        for i in range(n):
            cursor = plain.execute(sql.format(1 + i % ROWS))
            columns = [d[0] for d in cursor.get_description()]
            rows = cursor.fetchall()
            out.write(render.table(columns, rows) + "\n")
        return (time.perf_counter() - start) / n

    return {"chronos": chronos_side, "plain": plain_side}


def registry_select(db: chronos_lite.Chronos, plain: apsw.Connection, n: int) -> dict:
    """The same point select as one registry sql call and its text: what the shell wraps."""
    sides = point_select(Shell(db.database, out=io.StringIO()), plain, n)

    def chronos_side() -> float:
        start = time.perf_counter()
        for i in range(n):
            reply = REGISTRY.call(
                db.database, "sql", {"sql": f"select * from users where id = {i + 1};"}
            )
            io.StringIO().write(reply.text + "\n")
        return (time.perf_counter() - start) / n

    return {"chronos": chronos_side, "plain": sides["plain"]}


def inserts(shell: Shell, plain: apsw.Connection, n: int) -> dict[str, Callable[[], float]]:
    counter = iter(range(10**9))

    def script() -> list[str]:
        return [
            f"insert into users(name, email) values ('n', 'bench{next(counter)}@x');"
            for _ in range(n)
        ]

    def chronos_side() -> float:
        text = "\n".join(script())
        shell.out = io.StringIO()
        start = time.perf_counter()
        assert shell.run_script(text, "bench", True)
        return (time.perf_counter() - start) / n

    def plain_side() -> float:
        lines = script()
        start = time.perf_counter()
        for line in lines:
            plain.execute(line)
        return (time.perf_counter() - start) / n

    return {"chronos": chronos_side, "plain": plain_side}


def progress_off_a_terminal(db: chronos_lite.Chronos, folder: Path, n: int) -> dict:
    """Loading a CSV file of ``n`` rows (insert, which reports its rows as it goes) with the
    command line's bar listening while stderr is no terminal, against the same load with no one
    listening: what progress costs a script."""
    csv_file = folder.parent / "rows.csv"
    csv_file.write_text("id,name\n" + "".join(f"{i},row {i}\n" for i in range(n)))
    tables = iter(range(10**9))

    def load(listener: Bars | None) -> float:
        table = f"loaded_{next(tables)}"
        start = time.perf_counter()
        with progress.listening(listener):
            db.call("insert", table=table, file=str(csv_file), pk=["id"])
        took = time.perf_counter() - start
        if listener is not None:
            listener.close()
        return took

    return {
        "chronos": lambda: load(Bars("insert", stream=io.StringIO(), after=0)),
        "plain": lambda: load(None),
    }


def parse_cost(n: int) -> float:
    stmt = "MERGE WORLD task-1 AT VERSION 3 RESOLVE theirs BY COLUMNS;"
    start = time.perf_counter()
    for _ in range(n):
        statements.parse(stmt)
    return (time.perf_counter() - start) / n


def startup(folder: Path, plain: Path) -> dict[str, Callable[[], float]]:
    probe = (
        "import apsw, sys; c = apsw.Connection(sys.argv[1]); "
        "print(c.execute('select 1').fetchall())"
    )

    return {
        "chronos": lambda: run([CHRONOS, str(folder), "-c", "select 1"]),
        "plain": lambda: run([sys.executable, "-c", probe, str(plain)]),
    }


STARTUP_TARGET_MS = 100.0


def run(argv: list[str]) -> float:
    """Seconds a new process takes to start, answer and end."""
    return timed(lambda: subprocess.run(argv, check=True, capture_output=True))


def mcp_start(folder: Path) -> dict[str, float]:
    """Seconds from starting `chronos mcp` to the answer of initialize, of tools/list after
    it, and of a first tools/call (describe)."""
    requests = [
        ("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}),
        ("tools/list", {}),
        ("tools/call", {"name": "describe", "arguments": {}}),
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [CHRONOS, "mcp", str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answered = {}
    for n, (method, params) in enumerate(requests, 1):
        message = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        answered[method] = time.perf_counter() - start
        assert reply.get("id") == n and "result" in reply, reply
        assert not reply["result"].get("isError"), reply
        if method == "initialize":
            proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    proc.stdin.close()
    proc.wait(timeout=30)
    return answered


def starting_up(folder: Path, rounds: int) -> list[tuple[str, float, float]]:
    """The fastest round of each start, and of the floor (python -c "import apsw") timed in
    the same rounds: (case, seconds, floor seconds)."""
    mcp: dict[str, float] = {}

    def mcp_side() -> float:
        for method, seconds in mcp_start(folder).items():
            mcp[method] = min(mcp.get(method, seconds), seconds)
        return mcp["initialize"]

    best = best_of(
        rounds,
        {
            "floor": lambda: run([sys.executable, "-c", "import apsw"]),
            "shell": lambda: run([CHRONOS, str(folder), "-c", "select 1"]),
            "sql": lambda: run([CHRONOS, str(folder), "sql", "select 1"]),
            "mcp": mcp_side,
        },
    )
    floor = best["floor"]
    return [
        ('shell\'s first answer (-c "select 1")', best["shell"], floor),
        ('CLI sql "select 1"', best["sql"], floor),
        ("mcp: initialize answered", mcp["initialize"], floor),
        ("mcp: tools/list answered", mcp["tools/list"], floor),
        ("mcp: first tools/call (describe)", mcp["tools/call"], floor),
    ]


def main() -> None:
    ns = arguments(__doc__, "small sizes (for CI)").parse_args()
    rounds, selects, writes, starts = (3, 200, 20, 2) if ns.quick else (7, 2000, 200, 7)
    loads = 2_000 if ns.quick else 50_000  # rows of the CSV file progress is timed on
    launches = 5 if ns.quick else 21  # rounds of starting up
    compileall.compile_dir(Path(chronos_lite.__file__).parent, quiet=1)  # (see the docstring)
    with work_folder("shell-") as tmp:
        folder = tmp / "shop"
        plain_path = build(folder)
        db = chronos_lite.open(folder)
        shell = Shell(db.database, out=io.StringIO(), err=sys.stderr)
        plain = plain_connection(plain_path)
        rows: list[tuple[str, float, float, float | None]] = []
        for label, sides in [
            ("point select in the shell", point_select(shell, plain, selects)),
            ("point select, the sql call alone", registry_select(db, plain, selects)),
            ("script of single-row inserts", inserts(shell, plain, writes)),
            ("start and answer (new process)", startup(folder, plain_path)),
            (PROGRESS_CASE, progress_off_a_terminal(db, folder, loads)),
        ]:
            n = starts if label.startswith("start") else rounds
            best = best_of(n, sides)
            rows.append((label, best["chronos"], best["plain"], TARGETS.get(label)))
        parse_us = parse_cost(2000 if ns.quick else 20000) * 1e6
        starts_ms = starting_up(folder, launches)
        db.close()
        plain.close()
    print(f"chronos shell benchmark ({revision()}, {ROWS:,} rows; fastest of each side's rounds)")
    print(f"{'case':<34}{'chronos':>12}{'plain':>12}{'ratio':>8}  target")
    missed = 0
    figures = {}
    for label, ours, base, target in rows:
        ratio = ours / base
        result = ""
        if target is not None:
            ok = ratio <= target
            missed += not ok
            result = f"<= {target:g}x {verdict(ok)}"
        print(f"{label:<34}{ours * 1e3:>9.3f} ms{base * 1e3:>9.3f} ms{ratio:>7.2f}x  {result}")
        figures[label] = {"chronos_ms": ours * 1e3, "plain_ms": base * 1e3, "ratio": ratio}
    print(f"{'parsing a chronos statement':<34}{parse_us:>9.1f} µs")
    figures["parse_us"] = parse_us
    print()
    print(f"starting up (issue 24; fastest of {launches} rounds; floor: python -c 'import apsw')")
    print(f"{'case':<38}{'chronos':>11}{'floor':>11}  target")
    for label, ours, floor in starts_ms:
        ok = ours * 1e3 < STARTUP_TARGET_MS
        missed += not ok
        target = f"< {STARTUP_TARGET_MS:g} ms {verdict(ok)}"
        print(f"{label:<38}{ours * 1e3:>8.1f} ms{floor * 1e3:>8.1f} ms  {target}")
        figures[f"start: {label}"] = {"chronos_ms": ours * 1e3, "floor_ms": floor * 1e3}
    print(f"targets missed: {missed}")
    write_json(ns.json, figures)


if __name__ == "__main__":
    main()
