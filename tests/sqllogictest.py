"""A sqllogictest runner: SQLite's own query-correctness corpus (``../shared/slt``, its format in
that folder's README) run in four modes, so a world is held to what SQLite itself answers.

* ``plain``: a plain SQLite file through apsw (the control);
* ``main``: chronos' main, every record through ``db.sql``;
* ``world``: main for the file's first statements, then a world forked there for the rest;
* ``overlay``: schema statements on main, every row write and query on a world forked after the
  file's first CREATE TABLE.

``python tests/sqllogictest.py [FILE|FOLDER ...] [--modes plain,main,world,overlay]`` prints the
counts per mode; ``run(path, mode)`` is what the tests call. A record that fails in ``plain`` is
left out of the other modes' counts (the corpus holds a few records SQLite itself answers
differently now); every other record must pass in every mode.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

import chronos_lite

# the corpus: ../shared/slt beside the checkout, or where CHRONOS_SLT says
SLT = Path(os.environ.get("CHRONOS_SLT", Path(__file__).resolve().parents[2] / "shared" / "slt"))
MODES = ("plain", "main", "world", "overlay")
_HASHED = re.compile(r"^(\d+) values hashing to ([0-9a-f]{32})$")


@dataclass
class Record:
    kind: str  # statement | query
    sql: str
    line: int
    error: bool = False  # statement error: it must fail
    types: str = ""
    sort: str = "nosort"
    expected: list[str] = field(default_factory=list)
    threshold: int = 0  # hash-threshold in force


def parse(text: str) -> Iterator[Record]:
    """The records SQLite runs (skipif sqlite / onlyif <other engine> ones left out)."""
    lines = text.splitlines()
    i, threshold, skip = 0, 0, False
    while i < len(lines):
        line = lines[i].strip()
        words = line.split()
        i += 1
        if not words or line.startswith("#"):
            continue
        if words[0] == "hash-threshold":
            threshold = int(words[1])
        elif words[0] == "halt":
            if not skip:
                return
            skip = False  # (a halt for another engine)
        elif words[0] == "skipif":
            skip = skip or words[1] == "sqlite"
        elif words[0] == "onlyif":
            skip = skip or words[1] != "sqlite"
        elif words[0] in ("statement", "query"):
            start = i
            body: list[str] = []
            while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
                body.append(lines[i])
                i += 1
            expected: list[str] = []
            if i < len(lines) and lines[i].strip() == "----":
                i += 1
                while i < len(lines) and lines[i].strip():
                    expected.append(lines[i].strip())
                    i += 1
            if not skip:
                record = Record(words[0], "\n".join(body), start, threshold=threshold)
                if words[0] == "statement":
                    record.error = words[1] == "error"
                else:
                    record.types = words[1]
                    record.sort = words[2] if len(words) > 2 else "nosort"
                    record.expected = expected
                yield record
            skip = False


# --- results as sqllogictest prints them --------------------------------------------------


class Formatter:
    """Values as the C runner prints them (sqlite3_column_int64 / _double / _text)."""

    def __init__(self) -> None:
        self.conn = apsw.Connection(":memory:")

    def value(self, v: Any, kind: str) -> str:
        if v is None:
            return "NULL"
        if kind == "I":
            return str(v if type(v) is int else self._cast(v, "integer"))
        if kind == "R":
            return "%.3f" % (v if type(v) in (int, float) else self._cast(v, "real"))
        text = v if type(v) is str else str(self._cast(v, "text"))
        if text == "":
            return "(empty)"
        return "".join(c if " " <= c <= "~" else "@" for c in text)

    def _cast(self, v: Any, to: str) -> Any:
        return self.conn.execute(f"select cast(? as {to})", (v,)).fetchall()[0][0]

    def values(self, rows: list[tuple], record: Record) -> list[str]:
        kinds = record.types
        out = [
            [self.value(v, kinds[i] if i < len(kinds) else "T") for i, v in enumerate(r)]
            for r in rows
        ]
        if record.sort == "rowsort":
            out.sort()
        flat = [v for row in out for v in row]
        return sorted(flat) if record.sort == "valuesort" else flat


def matches(values: list[str], record: Record) -> bool:
    hashed = _HASHED.match(record.expected[0]) if len(record.expected) == 1 else None
    if hashed:
        digest = hashlib.md5("".join(v + "\n" for v in values).encode()).hexdigest()
        return int(hashed.group(1)) == len(values) and digest == hashed.group(2)
    if record.threshold and len(values) > record.threshold:
        digest = hashlib.md5("".join(v + "\n" for v in values).encode()).hexdigest()
        return record.expected == [f"{len(values)} values hashing to {digest}"]
    return values == record.expected


# --- the modes ---------------------------------------------------------------------------------


class Plain:
    def __init__(self, folder: Path) -> None:
        self.conn = apsw.Connection(str(folder / "plain.db"))

    def execute(self, record: Record) -> list[tuple]:
        return self.conn.execute(record.sql).fetchall()

    def close(self) -> None:
        self.conn.close()


class Main:
    """Every record through chronos' ``sql`` on a branch (main unless a mode moves it)."""

    def __init__(self, folder: Path) -> None:
        self.db = chronos_lite.init(folder / "chronos")
        self.branch = "main"

    def run(self, sql: str, branch: str) -> list[tuple]:
        outcome = self.db.sql(sql, branch=branch)
        return list(outcome.results[-1].rows) if outcome.results else []

    def execute(self, record: Record) -> list[tuple]:
        return self.run(record.sql, self.branch)

    def close(self) -> None:
        self.db.close()


class World(Main):
    """The file's first statements on main; from its first query on, a world forked then."""

    def execute(self, record: Record) -> list[tuple]:
        if record.kind == "query" and self.branch == "main":
            self.db.fork("w")
            self.branch = "w"
        return super().execute(record)


class Overlay(Main):
    """Schema statements on main; row writes and queries on a world forked after the first
    CREATE TABLE."""

    SCHEMA = ("CREATE", "DROP", "ALTER", "REINDEX", "ANALYZE")

    def execute(self, record: Record) -> list[tuple]:
        first = record.sql.split(None, 1)[0].upper() if record.sql.split() else ""
        if first in self.SCHEMA:
            rows = self.run(record.sql, "main")
            if self.branch == "main" and re.match(r"(?is)\s*create\s+table", record.sql):
                self.db.fork("w")
                self.branch = "w"
            return rows
        return super().execute(record)


TARGETS = {"plain": Plain, "main": Main, "world": World, "overlay": Overlay}


@dataclass
class Outcome:
    mode: str
    passed: int = 0
    failed: list[str] = field(default_factory=list)  # "line N: what"

    @property
    def total(self) -> int:
        return self.passed + len(self.failed)


def results(path: Path, mode: str) -> dict[int, str | None]:
    """Each record's outcome in a mode: None where it passed, else why not (by its line)."""
    out: dict[int, str | None] = {}
    fmt = Formatter()
    with tempfile.TemporaryDirectory(prefix=f"slt-{mode}-") as scratch:
        target = TARGETS[mode](Path(scratch))
        try:
            for record in parse(path.read_text(errors="replace")):
                try:
                    rows = target.execute(record)
                except (apsw.Error, chronos_lite.ChronosError) as exc:
                    if record.kind == "statement" and record.error:
                        out[record.line] = None
                    else:
                        out[record.line] = f"{type(exc).__name__}: {str(exc)[:200]}"
                    continue
                if record.kind == "statement":
                    out[record.line] = "it ran, but should fail" if record.error else None
                else:
                    values = fmt.values(rows, record)
                    out[record.line] = None if matches(values, record) else "wrong result"
        finally:
            target.close()
    return out


def compare(path: Path, modes: tuple[str, ...] = MODES) -> dict[str, Outcome]:
    """Every mode's outcome on the records that pass in plain SQLite."""
    control = results(path, "plain")
    good = {line for line, why in control.items() if why is None}
    found = {
        "plain": Outcome("plain", len(good), [f"line {n}: {w}" for n, w in control.items() if w])
    }
    for mode in modes:
        if mode == "plain":
            continue
        outcome = Outcome(mode)
        for line, why in results(path, mode).items():
            if line not in good:
                continue
            if why is None:
                outcome.passed += 1
            else:
                outcome.failed.append(f"line {line}: {why}")
        found[mode] = outcome
    return found


def files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths or [str(SLT)]):
        out.extend(sorted(p.rglob("*.test")) if p.is_dir() else [p])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help=f"files or folders (default {SLT})")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--show", type=int, default=3, help="failures shown per file and mode")
    ns = parser.parse_args(argv)
    modes = tuple(ns.modes.split(","))
    totals = {m: Outcome(m) for m in modes}
    for path in files(ns.paths):
        began = time.perf_counter()
        found = compare(path, modes)
        cells = "  ".join(f"{m} {found[m].passed}/{found[m].total}" for m in modes if m in found)
        name = path.relative_to(SLT) if path.is_relative_to(SLT) else path
        print(f"{name}: {cells}  ({time.perf_counter() - began:.1f} s)")
        for m in modes:
            if m not in found:
                continue
            totals[m].passed += found[m].passed
            totals[m].failed += found[m].failed
            for failure in found[m].failed[: ns.show] if m != "plain" else []:
                print(f"    {m}: {failure}")
    print("total: " + "  ".join(f"{m} {o.passed}/{o.total}" for m, o in totals.items()))
    return 0 if all(not o.failed for m, o in totals.items() if m != "plain") else 1


if __name__ == "__main__":
    sys.exit(main())
