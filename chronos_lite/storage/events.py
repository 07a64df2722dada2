"""What happened to each branch: the events behind ``history``.

Every change chronos makes is recorded with who made it (the caller: the database's own user,
``mcp`` for a safe-mode agent, later an agent's name) and its run id, in the same transaction
as the change where it can be: forks, writes (per call, with the rows they changed; on main
with the history seqs they wrote, so writes an app made directly to main, past chronos, show
as an app's), merges, rebases, restores, rollbacks, checkpoints, discards. Main is world 0.

Who acts is the call's own state, kept in a context variable (``current()``) rather than on the
shared ``Database``: a front end that serves calls at once (a thread or a task each) gives
each its own, and a call made inside another (a sql call's statements) sees its caller's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

import apsw

from . import worlds
from .fetch import all_rows, one_row
from .governance import readlog
from .moments import show_moment
from .shadow import SEQ, TIME, history_table
from .worlds import World

APP = "app"  # who wrote main directly (through SQLite itself, not chronos)


# --- the call running now: who acts in it, and what an agent's audited call recorded ---------

OWNER = "owner"


@dataclass
class Tally:
    """The events an audited call recorded, and the rows they changed."""

    events: int = 0
    rows: int = 0

    def add(self, kind: str, rows: int) -> None:
        self.events += 1
        if kind != "merged":  # (a merge's rows once: its world's event tells of the same rows)
            self.rows += rows


@dataclass(frozen=True)
class Call:
    name: str = OWNER  # who acts, whom the events it records name
    run: str | None = None  # the caller's run id, kept with what it writes
    audit: Tally | None = None  # inside an agent's audited call: what it recorded so far


_CURRENT: ContextVar[Call] = ContextVar("chronos_call", default=Call())  # noqa: B039 (frozen)


def current() -> Call:
    return _CURRENT.get()


def acting(name: str, run: str | None) -> Token[Call]:
    """A call by ``name`` (``run``: its run id) begins: the events it records name it; inside
    an audited call, it adds to its tally. Ended by ``done`` with what this returns (plainly,
    not as a context manager: it is on every call's path)."""
    return _CURRENT.set(Call(name, run, _CURRENT.get().audit))


def done(token: Token[Call]) -> None:
    """The call ``acting`` began has ended: the call around it (if any) acts again."""
    _CURRENT.reset(token)


@contextmanager
def audited() -> Iterator[Tally]:
    """An agent's audited call: the events recorded within it (nested calls too) are counted."""
    tally = Tally()
    token = _CURRENT.set(dataclasses.replace(current(), audit=tally))
    try:
        yield tally
    finally:
        _CURRENT.reset(token)


def recorded(kind: str, rows: int) -> None:
    """An event was recorded in the call running now."""
    audit = current().audit
    if audit is not None:
        audit.add(kind, rows)


# --- recording them -------------------------------------------------------------------------


def record(
    conn: apsw.Connection,
    world: int,
    kind: str,
    actor: str,
    rows: int = 0,
    detail: dict[str, Any] | None = None,
    run: str | None = None,
) -> None:
    if world:  # (the reads a world's write may rest on go in with it)
        readlog.write_world(conn, world)
    conn.execute(
        "insert into main._chronos_events(time, world, kind, actor, run, rows, detail) "
        "values (?, ?, ?, ?, ?, ?, ?)",
        (time.time(), world, kind, actor, run, rows, json.dumps(detail or {}, default=str)),
    )


def tick(conn: apsw.Connection) -> int:
    """Move the world clock on (inside the caller's write transaction); the new value."""
    return all_rows(conn.execute("update main._chronos_clock set seq = seq + 1 returning seq"))[0][
        0
    ]


def positions(conn: apsw.Connection, tables: dict) -> dict[int, int]:
    """Each table's last history seq (to bracket the seqs a main write wrote), in one
    statement whatever the number of tables."""
    numbers = [n for n, _t in tables.values()]
    if not numbers:
        return {}
    reads = ", ".join(
        f"(select coalesce(max({SEQ}), 0) from main.{history_table(n)})" for n in numbers
    )
    return dict(zip(numbers, one_row(conn.execute(f"select {reads}")), strict=True))


def clock(conn: apsw.Connection) -> int:
    """The world clock now (a world write's rows are stamped with the ticks after it)."""
    return one_row(conn.execute("select seq from main._chronos_clock"))[0]


def ranges(before: dict[int, int], after: dict[int, int]) -> dict[str, list[int]]:
    return {str(n): [before.get(n, 0) + 1, hi] for n, hi in after.items() if hi > before.get(n, 0)}


def listing(conn: apsw.Connection, world: int, tables: dict, limit: int) -> list[dict[str, Any]]:
    """The branch's newest events first; for main, with the writes apps made directly."""
    rows = all_rows(
        conn.execute(
            "select time, kind, actor, run, rows, detail from main._chronos_events where world = ? "
            "order by id desc limit ?",
            (world, limit),
        )
    )
    out = [
        {
            "time": r[0],
            "event": r[1],
            "by": r[2],
            "run": r[3],
            "rows": r[4],
            "detail": json.loads(r[5]),
        }
        for r in rows
    ]
    if world == 0:
        out += _app_writes(conn, tables, limit)
        out.sort(key=lambda e: e["time"], reverse=True)
    return out[:limit]


def _app_writes(conn: apsw.Connection, tables: dict, limit: int) -> list[dict[str, Any]]:
    """Main's recent history rows no chronos write accounts for: an app's, grouped per table
    and second."""
    covered: dict[int, list[tuple[int, int]]] = {}
    for (detail,) in conn.execute(
        "select detail from main._chronos_events where world = 0 order by id desc limit ?",
        (limit * 20,),
    ):
        for n, (lo, hi) in json.loads(detail).get("seqs", {}).items():
            covered.setdefault(int(n), []).append((lo, hi))
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for name, (n, _t) in tables.items():
        spans = covered.get(n, [])
        for seq, when in conn.execute(
            f"select {SEQ}, {TIME} from main.{history_table(n)} order by {SEQ} desc limit ?",
            (limit * 50,),
        ):
            if any(lo <= seq <= hi for lo, hi in spans):
                continue
            group = groups.setdefault(
                (name, int(when)),
                {
                    "time": when,
                    "event": "write",
                    "by": APP,
                    "run": None,
                    "rows": 0,
                    "detail": {"table": name, "directly": True},
                },
            )
            group["rows"] += 1
            group["time"] = max(group["time"], when)
    return list(groups.values())


# --- showing them (the history tool and SHOW HISTORY) -----------------------------------------

COLUMNS = ["at", "event", "by", "rows", "detail"]


def branch_id(conn: apsw.Connection, branch: str, open_world: Callable[[str], World]) -> int:
    """The world whose events ``branch`` names (0: main); a branch merged or discarded too
    (its latest of that name): its history stays readable. ``open_world``: the lookup whose
    refusal names the branches there are."""
    if branch == "main":
        return 0
    found = worlds.latest_named(conn, branch)
    if found is None:
        return open_world(branch).id  # the usual 'no branch' refusal, naming the branches
    return found


def table_rows(found: list[dict[str, Any]]) -> list[list[Any]]:
    return [[show_moment(e["time"]), e["event"], e["by"], e["rows"], describe(e)] for e in found]


def describe(e: dict[str, Any]) -> str:
    """An event's detail in words."""
    d = e["detail"]
    part = " (part of it)" if d.get("partial") else ""
    if e["event"] in ("write", "schema"):
        if d.get("directly"):
            done = "schema changed" if e["event"] == "schema" else "written"
            return f"{d['table']}: {done} directly, not through chronos"
        return d.get("sql") or d.get("put") and f"put {d['put']}" or f"delete {d.get('delete')}"
    words = {
        "fork": lambda: f"forked from {d.get('from')}",
        "forked": lambda: f"forked {d.get('branch')}",
        "merge": lambda: f"merged {d.get('from')}{part}",
        "merged": lambda: f"merged into {d.get('into')}{part}",
        "discarded": lambda: f"discarded {d.get('branch')}",
        "rebase": lambda: f"rebased onto {d.get('onto')}",
        "restore": lambda: f"restored to {d.get('to')}",
        "rollback": lambda: f"rolled back to checkpoint {d.get('asked')} ({d.get('to')})",
        "checkpoint": lambda: f"checkpoint {d.get('name')}",
        "undo merge": lambda: f"undid the merge of {d.get('from')}",
        "undo agent": lambda: f"undid {d.get('agent')}'s changes since {d.get('since')}",
    }
    return words.get(e["event"], lambda: json.dumps(d))()
