"""What the benchmark scripts share: their work folder, timing, figures with a ratio against
plain SQLite and a PASS/MISS verdict on their target, the ``--quick`` / ``--json`` options, and
the ``items`` table that bench_worlds, bench_history and bench_merge build.

Not a script: the scripts import it by name (``python benchmarks/bench_x.py`` puts this folder
first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

import apsw

import chronos_lite

WORK = Path(__file__).resolve().parent / "_work"  # gitignored
CHRONOS = str(Path(sys.executable).with_name("chronos"))  # the console script of this venv


# --- the command line and the work folder ---------------------------------------------------


def arguments(doc: str, quick_help: str) -> argparse.ArgumentParser:
    """A parser with the options every script has: ``--quick`` and ``--json PATH``. The
    description is the first line of ``doc`` (the script's docstring)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    return parser


def write_json(path: str | None, data: object) -> None:
    """``data`` as indented JSON in ``path`` (the ``--json`` option), if one was given."""
    if path:
        Path(path).write_text(json.dumps(data, indent=2) + "\n")


@contextlib.contextmanager
def work_folder(prefix: str) -> Iterator[Path]:
    """A fresh folder under benchmarks/_work/, deleted at the end however the run ends."""
    WORK.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=WORK))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def section(name: str) -> Iterator[None]:
    """Prints ``  <name>: <seconds> s`` once the block has run (not if it fails)."""
    start = time.perf_counter()
    yield
    print(f"  {name}: {time.perf_counter() - start:.1f} s", flush=True)


# --- timing ---------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> float:
    """Seconds ``fn()`` took."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_of(rounds: int, jobs: dict[Any, Callable[[], float]]) -> dict[Any, float]:
    """Run every job once per round, interleaved (order reversed every other round);
    each job returns the seconds it measured; keep each job's fastest round."""
    best = dict.fromkeys(jobs, math.inf)
    names = list(jobs)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            best[name] = min(best[name], jobs[name]())
    return best


def best_of_batches(
    rounds: int,
    writers: dict[str, Callable[[str, list[tuple]], float]],
    make_batch: Callable[[], dict[str, tuple[str, list[tuple]]]],
) -> dict[tuple[str, str], float]:
    """Each round a fresh batch of each kind (``make_batch``: kind -> (sql, parameters)),
    given to every writer in turn, the writers' order reversed every other round; each writer
    returns the seconds it measured. The fastest round per (writer, kind)."""
    best: dict[tuple[str, str], float] = {}
    for r in range(rounds):
        batch = make_batch()
        order = list(writers) if r % 2 == 0 else list(reversed(writers))
        for kind, (sql, params) in batch.items():
            for w in order:
                best[(w, kind)] = min(best.get((w, kind), math.inf), writers[w](sql, params))
    return best


def in_transaction(conn: apsw.Connection, sql: str, params: list[tuple]) -> float:
    """Seconds for one write transaction running ``sql`` once per parameter tuple."""

    def run() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, params)
        conn.execute("COMMIT")

    return timed(run)


# --- figures: a ratio against a baseline, a target, PASS or MISS ----------------------------


@dataclass
class Figure:
    """One line of the result table."""

    name: str
    unit: str  # of chronos and base
    chronos: float
    base: float | None
    base_is: str  # what the base is
    ratio: float | None
    target: str
    passed: bool | None  # None: for information only


def figure(
    name: str,
    unit: str,
    value: float,
    base: float,
    base_is: str,
    *,
    at_most: float | None = None,
    at_least: float | None = None,
) -> Figure:
    """``value`` next to ``base``: ratio value / base, the target on that ratio (``<= at_most``,
    or ``>= 1/n`` for ``at_least`` = 1/n, as rates are), or none: "(info)"."""
    ratio = value / base
    if at_most:
        return Figure(name, unit, value, base, base_is, ratio, f"<= {at_most:g}", ratio <= at_most)
    if at_least:
        whole = abs(1 / at_least - round(1 / at_least)) < 1e-9
        target = f">= 1/{round(1 / at_least)}" if whole else f">= {at_least:g}"
        return Figure(name, unit, value, base, base_is, ratio, target, ratio >= at_least)
    return Figure(name, unit, value, base, base_is, ratio, "(info)", None)


def verdict(passed: bool | None) -> str:
    """PASS, MISS, or nothing for a figure with no target."""
    return {True: "PASS", False: "MISS", None: ""}[passed]


def missed(passed: Iterable[bool | None]) -> str:
    """The last line of a run: ``<n> of <m> targets missed``."""
    results = [p for p in passed if p is not None]
    return f"{results.count(False)} of {len(results)} targets missed"


def label(n: int) -> str:
    """A row count as 10k, 1M."""
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1_000}k"


def number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "rows/s":
        return f"{value:,.0f}/s"
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def table(figures: list[Figure]) -> str:
    head = ("benchmark", "chronos", "base", "ratio", "target", "result")
    lines = [head]
    for f in figures:
        ratio = "-" if f.ratio is None else f"{f.ratio:.{2 if f.ratio >= 0.1 else 3}f}x"
        lines.append(
            (
                f.name,
                number(f.chronos, f.unit),
                number(f.base, f.unit),
                ratio,
                f.target,
                verdict(f.passed),
            )
        )
    return aligned(lines)


def aligned(lines: list[tuple[str, ...]]) -> str:
    """A table of text cells: the first line its head, the first column left-aligned."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = []
    for k, line in enumerate(lines):
        rest = zip(line[1:], widths[1:], strict=True)
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in rest]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("-" * len(out[0]))
    return "\n".join(out)


# --- what was measured ----------------------------------------------------------------------


def revision() -> str:
    """The commit of the code measured, '+dirty' if chronos_lite/ has uncommitted changes."""
    package = Path(chronos_lite.__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=package, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--", ".")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def environment(quick: bool, sizes: object) -> dict:
    """The run's date, mode, sizes (a dataclass or a dict) and versions, for the header and
    the JSON."""
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        "sizes": asdict(sizes) if is_dataclass(sizes) else dict(sizes),  # type: ignore[arg-type]
        "python": platform.python_version(),
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version() if hasattr(apsw, "apsw_version") else apsw.apswversion(),
        "chronos_lite": chronos_lite.__version__,
        "revision": revision(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


# --- the items table (bench_worlds, bench_history, bench_merge) -----------------------------


TABLE = "create table items(id integer primary key, category int, price real, name text)"
CATEGORIES = 100
BUSY_TIMEOUT_MS = 60_000
INSERT = "insert into items(category, price, name) values (?, ?, ?)"
UPDATE = "update items set price = ? where id = ?"


def rows(first: int, count: int, rng: random.Random) -> Iterable[tuple]:
    for i in range(first, first + count):
        yield i, rng.randrange(CATEGORIES), rng.randrange(100, 100_000) / 100, f"item {i}"


def build_plain(path: Path, count: int, index: bool = False, seed: int = 1) -> Path:
    """A plain SQLite file (WAL) holding ``items`` with ``count`` rows."""
    conn = apsw.Connection(str(path))
    conn.execute("pragma journal_mode = wal").fetchall()
    conn.execute(TABLE)
    conn.execute("BEGIN")
    conn.executemany("insert into items values (?, ?, ?, ?)", rows(1, count, random.Random(seed)))
    conn.execute("COMMIT")
    if index:
        conn.execute("create index items_category on items(category)")
    conn.close()
    return path


def raw_copy(plain: Path, path: Path, synchronous: str = "full") -> apsw.Connection:
    """A plain SQLite copy of ``plain``, opened with the pragmas of chronos' main connection
    (``synchronous``: a world's connection runs ``normal``)."""
    shutil.copyfile(plain, path)
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute(f"pragma synchronous = {synchronous}; pragma foreign_keys = on")
    return conn


def change_plan(count: int, rng: random.Random) -> list[tuple[str, tuple]]:
    """1% of ``count`` rows changed: 80% of them updated, 10% deleted, and as many new rows
    inserted as were deleted (so the table keeps its size)."""
    ids = rng.sample(range(1, count + 1), max(count // 100, 8))
    plan = []
    for k, i in enumerate(ids):
        if k % 10 == 0:
            plan.append(("delete from items where id = ?", (i,)))
        elif k % 10 == 1:
            plan.append(
                (
                    "insert into items(category, price, name) values (?, ?, ?)",
                    (rng.randrange(CATEGORIES), rng.randrange(100, 100_000) / 100, "new"),
                )
            )
        else:
            plan.append(
                (
                    "update items set price = ?, category = ? where id = ?",
                    (rng.randrange(100, 100_000) / 100, rng.randrange(CATEGORIES), i),
                )
            )
    return plan


def apply(db: chronos_lite.Chronos, world: str, plan: list[tuple[str, tuple]]) -> None:
    """``plan``'s statements on ``world``, in one write transaction."""
    conn = db.database.writable(db.database.session(world), "items").conn
    with db.database.write(conn):
        for sql, params in plan:
            conn.execute(sql, params)


def write_batches(batch: int, rows: int, rng: random.Random) -> dict[str, tuple[str, list]]:
    """A fresh batch of each kind: ``batch`` new rows, and updates of ``batch`` distinct rows
    of the ``rows`` already there."""
    new = [
        (rng.randrange(CATEGORIES), rng.randrange(100, 100_000) / 100, "new") for _ in range(batch)
    ]
    ids = rng.sample(range(1, rows + 1), batch)
    return {
        "insert": (INSERT, new),
        "update": (UPDATE, [(rng.randrange(100, 100_000) / 100, i) for i in ids]),
    }
