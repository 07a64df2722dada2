#!/usr/bin/env python3
"""Round trips of `chronos mcp` over stdio, next to a reference MCP server and a bare floor.

What is measured (see benchmarks/README.md, "MCP round trips", for a recorded run):

* chronos: ``tools/call get`` (table users, id "1") and ``tools/call sql``
  (``select * from users where id = 1``), on main and on a world "w" that changed 1% of the
  rows (row 1 among them), against a 10k-row users table. One `chronos mcp` process (safe mode,
  the default) answers all four cases.
* reference: the ``mcp-server-sqlite`` package (PyPI, on the ``mcp`` SDK < 2) answering the
  same point select (its ``read_query`` tool) on a copy of the same database file. The script
  installs it in a venv of its own under a cache folder; without network the row is skipped.
* ``--agent``: the same four chronos cases from a second `chronos mcp` process serving as the
  agent ``bench`` (rights read, fork and write_own; every quota set: max_query_ms,
  max_memory_mb, max_concurrent), beside the safe-mode one: what the agent's rights, quotas and
  audit cost a call, as the ratio of their p50s (target: at most 1.10).
* floor: a bare Python line loop, written by this script: read a JSON line, run the same
  query with sqlite3 on the same copy, write a JSON line. Nothing over stdio can be much
  faster in Python; it is the pipe, two JSON codecs and one SQLite lookup.

Every server is driven the same way: spawned, the ``initialize`` handshake (protocol
2025-11-25, or 2025-06-18 if refused), ``notifications/initialized``, warm-up calls, then timed
calls, each timed with ``time.perf_counter_ns`` around writing the request line and reading
the reply line. The timed calls run in blocks, the servers' blocks interleaved round by round
(the order reversed every other round), so a busy neighbour on this shared machine slows every
server alike rather than skewing one. Each reply is checked (id, no error, the expected row)
after its block, outside the timing.

Where the processes run matters more than anything else here: a reply that wakes a process on
another CPU costs tens of microseconds more than one on the same CPU, and left to itself the
scheduler flips between the two from run to run. So each measurement is made twice, pinned
(``sched_setaffinity``), with fresh servers: "one CPU" (the client and every server on the same
CPU) and "two CPUs" (the client on one, the servers on another). ``--placement os`` adds an
unpinned run, the scheduler's choice.

Run from the repository root:

    .venv/bin/python benchmarks/bench_mcp.py             # 2,000 timed calls per case
    .venv/bin/python benchmarks/bench_mcp.py --quick     # 100 per case, for CI
    .venv/bin/python benchmarks/bench_mcp.py --no-reference --json out.json
    .venv/bin/python benchmarks/bench_mcp.py --profile   # also: where one call's time goes
    .venv/bin/python benchmarks/bench_mcp.py --placement one,two,os
    .venv/bin/python benchmarks/bench_mcp.py --no-reference --agent   # --agent beside safe mode

A missed target prints MISS; the exit status stays 0.
"""

from __future__ import annotations

import contextlib
import cProfile
import datetime
import fcntl
import gc
import json
import math
import os
import platform
import pstats
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import apsw
from common import (
    CHRONOS,
    aligned,
    arguments,
    missed,
    revision,
    section,
    verdict,
    work_folder,
    write_json,
)

import chronos_lite

DB_FILE = "chronos.db"  # where chronos keeps a folder's database
ROWS = 10_000
WORLD = "w"
TARGET_MS = 0.5  # the target: chronos p50 under 0.5 ms, on main and on a world
AGENT_TARGET = 1.10  # issue 14: an agent's call at most 10% slower than safe mode's
AGENT = "bench"
AGENT_QUOTAS = {"max_concurrent": 4, "max_query_ms": 30_000, "max_memory_mb": 256}
VERSIONS = ("2025-11-25", "2025-06-18")  # asked in this order at initialize
REFERENCE_PACKAGES = ("mcp-server-sqlite", "mcp<2")
INSTALL_TIMEOUT_S = 300  # each step; pip itself gives up sooner without network
QUERY = "select * from users where id = 1"


@dataclass(frozen=True)
class Sizes:
    calls: int  # timed calls per case
    warmup: int  # untimed calls per case first
    block: int  # calls per case per round; rounds interleave the servers


FULL = Sizes(2_000, 200, 100)
QUICK = Sizes(100, 50, 25)


@dataclass(frozen=True)
class Case:
    name: str
    server: str  # key of the server answering it
    tool: str
    arguments: dict
    expect: str  # text the reply must hold
    target: bool  # the 0.5 ms target applies


@dataclass
class Figure:
    """One line of the result table (times in ms)."""

    placement: str
    name: str
    calls: int
    p50: float
    p99: float
    mean: float
    to_floor: float | None  # p50 / the floor's p50
    to_reference: float | None  # p50 / the reference's p50
    target: str
    passed: bool | None  # None: for information only


# --- the database -----------------------------------------------------------------------------


def build(folder: Path) -> None:
    """A chronos database with a 10k-row users table on main, and a world that changed 1% of
    its rows: 80% updated (row 1 among them, renamed 'renamed 1'), 10% deleted, as many
    inserted."""
    db = chronos_lite.init(folder)
    try:
        db.sql(
            "create table users(id integer primary key, name text not null, "
            "email text unique, age integer, created text)"
        )
        db.sql(
            "insert into users(id, name, email, age, created) "
            f"with recursive n(i) as (select 1 union all select i + 1 from n where i < {ROWS}) "
            "select i, 'user ' || i, 'user' || i || '@example.org', 18 + i % 60, "
            "'2026-01-01' from n"
        )
        db.fork(WORLD)
        rng = random.Random(4)
        changed = [1, *rng.sample(range(2, ROWS + 1), ROWS // 100 - 1)]
        for k, i in enumerate(changed):
            if k % 10 == 1:
                db.sql("delete from users where id = $1", i, branch=WORLD)
            elif k % 10 == 2:
                db.sql(
                    "insert into users(name, email, age, created) values ($1, $2, $3, $4)",
                    f"new {k}",
                    f"new{k}@example.org",
                    rng.randrange(18, 78),
                    "2026-11-30",
                    branch=WORLD,
                )
            else:  # k == 0 is row 1
                db.sql(
                    "update users set name = 'renamed ' || id, age = $1 where id = $2",
                    rng.randrange(18, 78),
                    i,
                    branch=WORLD,
                )
        count = db.query("select count(*) as n from users", branch=WORLD)[0]["n"]
        assert count == ROWS, count
        rights = ["read", "fork", "write_own"]
        db.call("agent", action="create", name=AGENT, rights=rights, **AGENT_QUOTAS)
    finally:
        db.close()


def copy_main(folder: Path, path: Path) -> None:
    """A copy of the chronos file (its main tables as they are) for the reference and the
    floor: SQLite's backup API, so a consistent snapshot; the copy keeps WAL mode."""
    src = apsw.Connection(str(folder / DB_FILE), flags=apsw.SQLITE_OPEN_READONLY)
    dst = apsw.Connection(str(path))
    with dst.backup("main", src, "main") as backup:
        backup.step()
    dst.close()
    src.close()


FLOOR_SERVER = '''\
"""The floor: a bare line loop answering MCP-shaped JSON-RPC with one sqlite3 query."""
import json
import sqlite3
import sys

conn = sqlite3.connect(sys.argv[1])
out = sys.stdout.buffer
for line in iter(sys.stdin.buffer.readline, b""):
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    params = message.get("params") or {}
    if message["method"] == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "0"},
        }
    else:
        cursor = conn.execute(params["arguments"]["query"])
        columns = [d[0] for d in cursor.description]
        rows = [dict(zip(columns, row)) for row in cursor.fetchall()]
        result = {"content": [{"type": "text", "text": json.dumps(rows)}], "isError": False}
    out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())
    out.write(b"\\n")
    out.flush()
'''


# --- the reference server's venv ------------------------------------------------------------


def default_ref_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "chronos-bench" / "ref-venv"


def reference_server(venv: Path) -> tuple[Path | None, str]:
    """The reference server's command in its own venv, installed there on first use; or None
    and why not. The venv is made with this Python, so all servers run the same interpreter."""
    exe = venv / "bin" / "mcp-server-sqlite"
    done = venv / ".chronos-bench-installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / (venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once install once
        if done.exists() and exe.exists():
            return exe, installed_versions(venv)
        print(f"  installing the reference server into {venv} ...", flush=True)
        shutil.rmtree(venv, ignore_errors=True)
        pip = [
            str(venv / "bin" / "python"),
            *("-m", "pip", "install", "--quiet", "--disable-pip-version-check"),
            *("--retries", "1", "--timeout", "30"),
            *REFERENCE_PACKAGES,
        ]
        try:
            for argv in ([sys.executable, "-m", "venv", str(venv)], pip):
                proc = subprocess.run(
                    argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S
                )
                if proc.returncode != 0:
                    lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
                    last = lines[-1] if lines else f"exit status {proc.returncode}"
                    raise RuntimeError(f"{' '.join(argv[:4])} ...: {last}")
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(venv, ignore_errors=True)
            return None, f"could not install {' '.join(REFERENCE_PACKAGES)} ({exc})"
        if not exe.exists():
            return None, f"the install made no {exe}"
        done.write_text(" ".join(REFERENCE_PACKAGES) + "\n")
        return exe, installed_versions(venv)


def installed_versions(venv: Path) -> str:
    code = (
        "import importlib.metadata as m; "
        "print(f\"mcp-server-sqlite {m.version('mcp-server-sqlite')}, mcp {m.version('mcp')}\")"
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True
    )
    return proc.stdout.strip() or "versions unknown"


# --- driving a server ------------------------------------------------------------------------


class Peer:
    """One spawned MCP server, driven over its stdin and stdout, one JSON line each way."""

    def __init__(self, name: str, argv: list[str], work: Path, cpus: frozenset[int] | None) -> None:
        self.name = name
        self.log_path = work / f"{name}.stderr"
        self.log = open(self.log_path, "ab")  # closed in close()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=work,
            # pinned before it starts, so the threads it makes are pinned too
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin: IO[bytes] = self.proc.stdin  # buffered: one write and one flush a call
        self.stdout: IO[bytes] = self.proc.stdout  # buffered: readline reads in blocks
        self.next_id = 0
        self.version = ""

    def send(self, message: dict) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()

    def receive(self) -> dict:
        line = self.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} closed its stdout{self.stderr_tail()}")
        return json.loads(line)

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        reply = self.receive()
        if reply.get("id") != self.next_id:
            raise RuntimeError(f"{self.name}: reply to another id: {reply}")
        return reply

    def handshake(self) -> None:
        for version in VERSIONS:
            reply = self.request(
                "initialize",
                {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "bench_mcp", "version": chronos_lite.__version__},
                },
            )
            agreed = reply.get("result", {}).get("protocolVersion")
            if agreed in VERSIONS:
                self.version = agreed
                break
        else:
            raise RuntimeError(f"{self.name} refused protocols {', '.join(VERSIONS)}: {reply}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def lines(self, tool: str, arguments: dict, count: int) -> list[bytes]:
        """``count`` tools/call requests, encoded before any timing, each with its own id."""
        params = json.dumps({"name": tool, "arguments": arguments})
        first = self.next_id + 1
        self.next_id += count
        return [
            f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{params}}}\n'.encode()
            for i in range(first, first + count)
        ]

    def round_trips(self, lines: list[bytes]) -> tuple[list[int], list[bytes]]:
        """Nanoseconds of each write + readline, and the replies (checked later)."""
        write, flush, readline = self.stdin.write, self.stdin.flush, self.stdout.readline
        clock = time.perf_counter_ns
        times, replies = [], []
        for line in lines:
            start = clock()
            write(line)
            flush()
            reply = readline()
            times.append(clock() - start)
            replies.append(reply)
        if not replies[-1]:
            raise RuntimeError(f"{self.name} closed its stdout{self.stderr_tail()}")
        return times, replies

    def stderr_tail(self) -> str:
        self.log.flush()
        text = self.log_path.read_text(errors="replace").strip()
        return f"; its stderr ends:\n{text[-2000:]}" if text else ""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()
        self.log.close()


def check(case: Case, lines: list[bytes], replies: list[bytes]) -> None:
    """Each reply answers its request, without an error, with the expected row."""
    for line, raw in zip(lines, replies, strict=True):
        reply = json.loads(raw)
        ident = json.loads(line)["id"]
        result = reply.get("result") or {}
        texts = " ".join(c.get("text", "") for c in result.get("content", []))
        if reply.get("id") != ident or "error" in reply or result.get("isError"):
            raise RuntimeError(f"{case.name}: request {ident} got {raw[:500]!r}")
        if case.expect not in texts:
            raise RuntimeError(f"{case.name}: no {case.expect!r} in the reply {raw[:500]!r}")


# --- the cases and the run --------------------------------------------------------------------


def chronos_cases(server: str, label: str) -> list[Case]:
    get = {"table": "users", "id": "1"}
    sql = {"sql": QUERY}
    main_row, world_row = "user 1", "renamed 1"
    return [
        Case(f"{label} get, main", server, "get", get, main_row, True),
        Case(f"{label} sql, main", server, "sql", sql, main_row, True),
        Case(f"{label} get, world", server, "get", {**get, "branch": WORLD}, world_row, True),
        Case(f"{label} sql, world", server, "sql", {**sql, "branch": WORLD}, world_row, True),
    ]


def cases(reference: bool, agent: bool = False) -> list[Case]:
    main_row = "user 1"
    out = chronos_cases("chronos", "chronos")
    if agent:
        out += chronos_cases("agent", "chronos --agent")
    if reference:
        out.append(
            Case(
                "reference mcp-server-sqlite",
                "reference",
                "read_query",
                {"query": QUERY},
                main_row,
                False,
            )
        )
    out.append(
        Case(
            "floor: bare Python line loop", "floor", "read_query", {"query": QUERY}, main_row, False
        )
    )
    return out


@dataclass(frozen=True)
class Placement:
    name: str  # one, two, os
    client: frozenset[int] | None  # the CPUs of this process while it times; None: as it was
    servers: frozenset[int] | None  # the CPUs of the servers

    def describe(self) -> str:
        if self.client is None:
            return "os: unpinned, where the scheduler puts them"
        a, b = min(self.client), min(self.servers or self.client)
        if a == b:
            return f"one CPU: the client and the servers on CPU {a}"
        return f"two CPUs: the client on CPU {a}, the servers on CPU {b}"


def placements(names: list[str]) -> tuple[list[Placement], str]:
    """The placements asked for that this machine allows, and a note on those it doesn't."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    out, skipped = [], []
    for name in names:
        if name == "os":
            out.append(Placement("os", None, None))
        elif name == "one" and usable:
            out.append(Placement("one", frozenset({usable[0]}), frozenset({usable[0]})))
        elif name == "two" and len(usable) >= 2:
            out.append(Placement("two", frozenset({usable[0]}), frozenset({usable[1]})))
        else:
            skipped.append(name)
    note = f"placements {', '.join(skipped)} not possible here" if skipped else ""
    if not out:
        out.append(Placement("os", None, None))
    return out, note


@dataclass
class Run:
    times: dict[str, list[int]] = field(default_factory=dict)  # case name -> ns per call
    versions: dict[str, str] = field(default_factory=dict)  # server -> protocol agreed


def measure(peers: dict[str, Peer], all_cases: list[Case], sizes: Sizes) -> Run:
    run = Run(versions={name: peer.version for name, peer in peers.items()})
    for case in all_cases:  # warm up: the first calls open sessions, fill caches
        peer = peers[case.server]
        lines = peer.lines(case.tool, case.arguments, sizes.warmup)
        check(case, lines, peer.round_trips(lines)[1])
        run.times[case.name] = []
    rounds = math.ceil(sizes.calls / sizes.block)
    for r in range(rounds):
        block = min(sizes.block, sizes.calls - r * sizes.block)
        for case in all_cases if r % 2 == 0 else reversed(all_cases):
            peer = peers[case.server]
            lines = peer.lines(case.tool, case.arguments, block)
            gc.collect()
            gc.disable()  # no collection of the client's garbage inside a block
            try:
                times, replies = peer.round_trips(lines)
            finally:
                gc.enable()
            check(case, lines, replies)
            run.times[case.name] += times
    return run


def percentile(sorted_ns: list[int], q: float) -> float:
    """Nearest-rank percentile, in ms."""
    rank = max(1, math.ceil(q / 100 * len(sorted_ns)))
    return sorted_ns[rank - 1] / 1e6


def figures(placement: str, run: Run, all_cases: list[Case]) -> list[Figure]:
    p50 = {name: statistics.median(ns) / 1e6 for name, ns in run.times.items()}
    floor = next(c.name for c in all_cases if c.server == "floor")
    ref = next((c.name for c in all_cases if c.server == "reference"), None)
    out = []
    for case in all_cases:
        ns = sorted(run.times[case.name])
        median = p50[case.name]
        out.append(
            Figure(
                placement,
                case.name,
                len(ns),
                median,
                percentile(ns, 99),
                statistics.fmean(ns) / 1e6,
                median / p50[floor],
                median / p50[ref] if ref else None,
                f"p50 < {TARGET_MS} ms" if case.target else "",
                median < TARGET_MS if case.target else None,
            )
        )
    return out


@dataclass
class AgentRatio:
    """An agent's case beside safe mode's (times in ms)."""

    placement: str
    case: str
    safe_p50: float
    agent_p50: float
    safe_p99: float
    agent_p99: float
    ratio: float  # agent p50 / safe p50
    passed: bool


def agent_ratios(placement: str, figs: list[Figure]) -> list[AgentRatio]:
    by_name = {f.name: f for f in figs}
    out = []
    for f in figs:
        if not f.name.startswith("chronos --agent "):
            continue
        safe = by_name["chronos " + f.name.removeprefix("chronos --agent ")]
        ratio = f.p50 / safe.p50
        out.append(
            AgentRatio(
                placement,
                safe.name.removeprefix("chronos "),
                safe.p50,
                f.p50,
                safe.p99,
                f.p99,
                ratio,
                ratio <= AGENT_TARGET,
            )
        )
    return out


def agent_table(ratios: list[AgentRatio]) -> str:
    head = ("case", "safe p50", "agent p50", "safe p99", "agent p99", "ratio", "target", "result")
    lines = [head]
    for r in ratios:
        lines.append(
            (
                r.case,
                f"{r.safe_p50:.3f}",
                f"{r.agent_p50:.3f}",
                f"{r.safe_p99:.3f}",
                f"{r.agent_p99:.3f}",
                f"{r.ratio:.3f}x",
                f"<= {AGENT_TARGET:.2f}",
                verdict(r.passed),
            )
        )
    return aligned(lines)


# --- where one chronos call's time goes (--profile) -------------------------------------------


def profile(folder: Path, all_cases: list[Case], calls: int, top: int = 12) -> str:
    """Each chronos case answered in this process (no pipe): Server.answer_line and the reply's
    encoding, timed, then under cProfile; the functions costing the most (own time). cProfile
    slows Python code far more than C code: read the shares as a ranking, not as times."""
    from chronos_lite.mcp import core as mcp
    from chronos_lite.operations.registry import Caller

    db = chronos_lite.open(folder)
    out = []
    try:
        # the caller `chronos mcp` makes (safe mode; the row cap where this version has one)
        cap = {"max_rows": mcp.MAX_ROWS} if hasattr(mcp, "MAX_ROWS") else {}
        server = mcp.Server(db.database, Caller(name="mcp", mode="safe", **cap), str(folder))
        server.answer(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": VERSIONS[0]},
            }
        )

        def one(line: bytes) -> bytes:
            reply = server.answer_line(line)
            return json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()

        for case in (c for c in all_cases if c.server == "chronos"):
            params = json.dumps({"name": case.tool, "arguments": case.arguments})
            line = f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}\n'
            line_b = line.encode()
            for _ in range(200):
                one(line_b)
            ns = []
            for _ in range(calls):
                start = time.perf_counter_ns()
                one(line_b)
                ns.append(time.perf_counter_ns() - start)
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(calls):
                one(line_b)
            prof.disable()
            stats = pstats.Stats(prof)
            total = stats.total_tt
            rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)
            out.append(
                f"\n{case.name}: in process, p50 {statistics.median(ns) / 1e3:.0f} us a call "
                f"(answer_line + encoding); under cProfile {total / calls * 1e6:.0f} us, "
                f"of which by own time:"
            )
            for (filename, lineno, func), (_cc, nc, tt, ct, _callers) in rows[:top]:
                where = f"{Path(filename).name}:{lineno}" if lineno else filename
                out.append(
                    f"  {tt / total:5.1%}  own {tt / calls * 1e6:6.1f} us  "
                    f"cum {ct / calls * 1e6:6.1f} us  x{nc / calls:<5.3g} {func} ({where})"
                )
    finally:
        db.close()
    return "\n".join(out)


# --- output -----------------------------------------------------------------------------------


def table(figs: list[Figure]) -> str:
    head = (
        "server / case",
        "calls",
        "p50 ms",
        "p99 ms",
        "mean ms",
        "p50/floor",
        "p50/ref",
        "target",
        "result",
    )
    lines = [head]
    for f in figs:
        lines.append(
            (
                f.name,
                f"{f.calls:,}",
                f"{f.p50:.3f}",
                f"{f.p99:.3f}",
                f"{f.mean:.3f}",
                f"{f.to_floor:.2f}x" if f.to_floor is not None else "-",
                f"{f.to_reference:.2f}x" if f.to_reference is not None else "-",
                f.target,
                verdict(f.passed),
            )
        )
    return aligned(lines)


def environment(quick: bool, sizes: Sizes) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mode": "quick" if quick else "full",
        "sizes": asdict(sizes),
        "rows": ROWS,
        "python": platform.python_version(),
        "sqlite_chronos": apsw.sqlite_lib_version(),
        "sqlite_floor_and_reference": sqlite3.sqlite_version,
        "chronos_lite": chronos_lite.__version__,
        "package": str(Path(chronos_lite.__file__).resolve().parent),
        "revision": revision(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def header(env: dict[str, Any]) -> str:
    s = env["sizes"]
    return (
        f"chronos_lite {env['chronos_lite']} ({env['revision']}) MCP round trips "
        f"({env['mode']}), {env['date']}\n"
        f"Python {env['python']}, SQLite {env['sqlite_chronos']} (chronos, apsw) and "
        f"{env['sqlite_floor_and_reference']} (reference and floor, sqlite3), "
        f"{env['cpus']} CPUs\n"
        f"users table of {env['rows']:,} rows; world '{WORLD}' changed 1% of them; "
        f"{s['warmup']} warm-up calls then {s['calls']:,} timed calls per case, in blocks of "
        f"{s['block']} interleaved across servers"
    )


@contextlib.contextmanager
def pinned(cpus: frozenset[int] | None):
    """This process on ``cpus`` (None: left as it is) for the block's length."""
    before = os.sched_getaffinity(0) if cpus is not None else None
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)


def run_placement(
    placement: Placement,
    commands: dict[str, list[str]],
    all_cases: list[Case],
    sizes: Sizes,
    work: Path,
) -> Run:
    """Fresh servers pinned as ``placement`` says, this process pinned too while it times."""
    peers: dict[str, Peer] = {}
    try:
        for name, command in commands.items():
            peers[name] = Peer(name, command, work, placement.servers)
            peers[name].handshake()
        with pinned(placement.client):
            return measure(peers, all_cases, sizes)
    finally:
        for peer in peers.values():
            peer.close()


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, "100 calls per case, for CI")
    parser.add_argument("--calls", type=int, help="timed calls per case (default 2,000)")
    parser.add_argument(
        "--placement",
        default="one,two",
        help="where the processes run, comma-separated: one (one CPU for all), two (the "
        "client on one CPU, the servers on another), os (unpinned); default %(default)s",
    )
    parser.add_argument(
        "--no-reference", action="store_true", help="skip mcp-server-sqlite (no install)"
    )
    parser.add_argument(
        "--ref-venv",
        type=Path,
        default=default_ref_venv(),
        help="the reference server's venv, made on first use (default: %(default)s)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also profile one chronos call of each case"
    )
    parser.add_argument(
        "--agent",
        action="store_true",
        help=f"also the chronos cases as the agent {AGENT} (quotas set), against safe mode",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.calls:
        sizes = Sizes(args.calls, sizes.warmup, min(sizes.block, args.calls))
    asked = [p.strip() for p in args.placement.split(",") if p.strip()]
    if not asked or set(asked) - {"one", "two", "os"}:
        parser.error(f"--placement takes one, two and os, not {args.placement}")
    where, where_note = placements(asked)
    env = environment(args.quick, sizes)
    print(header(env), flush=True)
    if where_note:
        print(f"  {where_note}", flush=True)

    reference_note = "skipped (--no-reference)"
    exe = None
    if not args.no_reference:
        exe, reference_note = reference_server(args.ref_venv)
        if exe is None:
            print(f"  reference skipped: {reference_note}", flush=True)
    all_cases = cases(exe is not None, args.agent)

    runs: dict[Placement, Run] = {}
    with work_folder("mcp-") as work:
        with section("database and copy"):
            folder = work / "db"
            build(folder)
            copy = work / "copy.sqlite"
            copy_main(folder, copy)
            floor_script = work / "floor_server.py"
            floor_script.write_text(FLOOR_SERVER)

        # (each its own process on the file, as the reference is: none joins another)
        commands = {"chronos": [CHRONOS, "mcp", str(folder), "--no-join"]}
        if args.agent:
            commands["agent"] = [CHRONOS, "mcp", str(folder), "--agent", AGENT, "--no-join"]
        if exe is not None:
            commands["reference"] = [str(exe), "--db-path", str(copy)]
        commands["floor"] = [sys.executable, str(floor_script), str(copy)]
        for placement in where:
            with section(f"round trips, {placement.describe()}"):
                runs[placement] = run_placement(placement, commands, all_cases, sizes, work)
        profiled = ""
        if args.profile:  # on the first placement's client CPU, alone
            with pinned(where[0].client):
                profiled = profile(folder, all_cases, sizes.calls)

    versions = next(iter(runs.values())).versions
    servers = {"chronos": "chronos mcp (safe mode)", "floor": "floor"}
    if args.agent:
        servers["agent"] = f"chronos mcp --agent {AGENT}"
    if exe is not None:
        servers["reference"] = reference_note
    agreed = "; ".join(f"{label} {versions[name]}" for name, label in servers.items())
    print(f"  protocol agreed: {agreed}")
    if exe is None:
        print(f"  reference: {reference_note}")
    figs: list[Figure] = []
    agent_figs: list[AgentRatio] = []
    for placement, run in runs.items():
        these = figures(placement.name, run, all_cases)
        print(f"\n{placement.describe()}\n")
        print(table(these))
        figs += these
        if args.agent:
            ratios = agent_ratios(placement.name, these)
            print(
                f"\nthe agent {AGENT} (rights and quotas checked, calls audited) beside safe "
                f"mode, {placement.describe()}\n"
            )
            print(agent_table(ratios))
            agent_figs += ratios
    passed = [f.passed for f in figs] + [r.passed for r in agent_figs]
    print(f"\n{missed(passed)}")
    if profiled:
        print(profiled)
    write_json(
        args.json,
        {
            **env,
            "reference": reference_note,
            "protocols": versions,
            "placements": {p.name: p.describe() for p in runs},
            "figures": [asdict(f) for f in figs],
            "agent": [asdict(r) for r in agent_figs],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
