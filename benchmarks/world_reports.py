"""bench_worlds' sections on what an app sends through chronos' statement path (``db.sql``, what
the CLI, shell, MCP and Python API take): an invoicing app's reports, one single-row write and
the statements chronos runs around it, and ``count(*)`` as of a moment.

Each compares the same call on main in the same run, interleaved, best of the rounds.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import apsw
import invoicing
from common import Figure, best_of, figure, label, timed
from world_fixtures import ITEMS, Filled, adopt, apply_plans, build_file, plans_for, same

import chronos_lite


def dollars(sql: str) -> str:
    """``?`` parameters as ``$1, $2, ...`` (what chronos' sql takes)."""
    count = iter(range(1, 100))
    return re.sub(r"\?", lambda _m: f"${next(count)}", sql)


def _rows(db: chronos_lite.Chronos, sql: str, params: tuple, branch: str) -> list:
    return list(db.sql(sql, *params, branch=branch).results[-1].rows)


def bench_reports(rows: int, rounds: int, work: Path) -> list[Figure]:
    """The invoicing app's reports on main and on a world that changed 1% of it; each world
    answer checked against a plain SQLite copy that made the same changes."""
    store = invoicing.Store(
        artists=max(10, rows // 200), tracks=rows // 5, customers=rows // 100, invoices=rows // 5
    )
    plain = invoicing.build(work / "store.sqlite", store)
    db = adopt(plain, work / "store")
    db.fork("books")
    changed = apsw.Connection(str(plain))
    with changed:
        for sql, params in invoicing.changes(store):
            db.sql(dollars(sql), *params, branch="books")
            changed.execute(sql, params)
    ids = invoicing.ids(store, 20)
    figures = []
    for report in invoicing.REPORTS:
        sql = dollars(report.sql)
        params = ids[report.params] if report.params else [()]
        wrong = any(
            not same(_rows(db, sql, p, "books"), changed.execute(report.sql, p).fetchall(), True)
            for p in params
        )
        jobs = {
            branch: (
                lambda branch=branch, sql=sql, params=params: timed(
                    lambda: [db.sql(sql, *p, branch=branch) for p in params]
                )
            )
            for branch in ("main", "books")
        }
        best = best_of(rounds, jobs)
        f = figure(
            f"report: {report.name}, {label(store.lines)} lines",
            "ms",
            best["books"] / len(params) * 1e3,
            best["main"] / len(params) * 1e3,
            "same report on main",
            at_most=1.5,
        )
        if wrong:
            f.name, f.passed = f.name + " WRONG ANSWER", False
        figures.append(f)
    changed.close()
    db.close()
    return figures


# --- one write through db.sql ---------------------------------------------------------------

WRITE = "update items set price = price + 1 where id = $1"


def _statements(conn: apsw.Connection, call) -> int:
    """How many statements SQLite prepared and ran on ``conn`` during ``call()`` (a trigger's
    own statements are part of it)."""
    seen = []

    def traced(event: dict) -> None:
        if not event.get("trigger"):
            seen.append(event["sql"])

    conn.trace_v2(apsw.SQLITE_TRACE_STMT, traced)
    try:
        call()
    finally:
        conn.trace_v2(0, None)
    return len(seen)


def bench_call(rows: int, rounds: int, work: Path) -> list[Figure]:
    """One single-row UPDATE through ``db.sql`` on a world whose ``items`` changed 1%, against
    the same call on main; and the statements chronos runs besides the user's one."""
    tables = [Filled(ITEMS, rows)]
    db = adopt(build_file(work / "call.sqlite", tables), work / "call")
    db.fork("w")
    apply_plans(db, "w", plans_for(tables, seed=9))
    count = 200
    jobs = {
        branch: (
            lambda branch=branch: timed(
                lambda: [db.sql(WRITE, 1 + i * 7 % rows, branch=branch) for i in range(count)]
            )
        )
        for branch in ("main", "w")
    }
    best = best_of(rounds, jobs)
    figures = [
        figure(
            f"one db.sql single-row update, {label(rows)} rows",
            "us",
            best["w"] / count * 1e6,
            best["main"] / count * 1e6,
            "same call on main",
            at_most=1.5,
        )
    ]
    for branch in ("main", "w"):
        conn = db.database.session(branch).conn
        ran = _statements(conn, lambda branch=branch: db.sql(WRITE, 3, branch=branch))
        figures.append(
            figure(
                f"statements besides the user's, one db.sql update on {branch}",
                "",
                ran - 1,
                8,
                "the target's 8",
                at_most=1.0,
            )
        )
    db.close()
    return figures


# --- count(*) as of a moment ----------------------------------------------------------------


def bench_as_of(rows: int, rounds: int, work: Path) -> list[Figure]:
    """``count(*)`` AS OF a moment before 1% of ``items`` changed, on main and on a world, each
    against the same count now, through ``db.sql``."""
    tables = [Filled(ITEMS, rows)]
    db = adopt(build_file(work / "asof.sqlite", tables), work / "asof")
    plans = plans_for(tables, seed=10)
    db.fork("w")
    time.sleep(1.1)  # (moments are to the second: after the fork, before the changes)
    moment = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    time.sleep(1.1)
    apply_plans(db, "w", plans)
    with db.database.main.conn:  # (main changes as an app would)
        for sql, params in plans["items"]:
            db.database.main.conn.execute(sql, params)
    figures = []
    for branch in ("main", "w"):
        now = "select count(*) from items"
        then = f"select count(*) from items as of '{moment}'"
        jobs = {
            kind: (lambda sql=sql, branch=branch: timed(lambda: db.sql(sql, branch=branch)))
            for kind, sql in (("now", now), ("then", then))
        }
        best = best_of(rounds, jobs)
        figures.append(
            figure(
                f"count(*) AS OF, {branch}, {label(rows)} rows",
                "ms",
                best["then"] * 1e3,
                best["now"] * 1e3,
                "the count now",
                at_most=2,
            )
        )
    db.close()
    return figures
