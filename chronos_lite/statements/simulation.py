"""Simulate: many worlds forked at one moment, a script run in each, each scored, the best kept;
and replay: a kept world made again from what it recorded, and compared.

Where the time goes. The forks are one write transaction (a world's fork is a catalog row: no
rows copied, from main or a world). Each world's script is one write transaction on the world's
own connection: its writes go to the overlay (a few rows of a big table cost a few overlay rows,
never a copy of the table; main's row count, which decides that, is counted once for all the
worlds), and SQLite lets one writer at a time commit, so scripts queue on the write lock while
the scores, reads, run beside them on the other threads. The worlds not kept are discarded
together in one last transaction (their overlay rows deleted by index). Each thread has a
database of its own (a ``Database`` isn't shared): a world's connection and its placement (its
TEMP views and triggers) is the fixed cost per world, about two thirds of it. Threads gain
little: SQLite prepares that placement calling the guard (Python, under the GIL) for each
action, and counts its memory under one lock for the whole process (which the memory limit
needs); measured, materializing ahead of the write lock gained nothing.

``random()`` is replaced on those connections (``seeded``): SQLite can't give its own back on a
connection once an app's has replaced it, so the simulation's connections are its own, closed at
the end, never the caller's.
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw

from .. import names, progress, sqltext
from ..errors import BAD_ARGUMENT, IN_USE, NOT_FOUND, ChronosError
from ..merge import diff as merge_diff
from ..storage import guard, lifecycle, limits, moments
from ..storage.branchref import BranchRef
from ..storage.db import Database
from ..storage.faults import QUERY_CANCELED as STOPPED
from ..storage.worlds import World
from . import budget, chronos_sql, more, seeded, sqlrun

META_KEY = "simulation"  # a kept world's meta: the inputs that make it again
SHOWN = 20  # worlds a reply lists, best first


Access = Callable[[World | None], guard.Access]


@dataclass
class Request:
    """A simulate call's inputs (the operation's arguments, checked)."""

    worlds: int
    prefix: str
    script: str
    score: str
    source: str = "main"
    keep: int | None = None  # None: all
    order: str = "desc"
    seed: int = 0
    threads: int = 0


@dataclass
class Outcome:
    """One world's: its score, or why it failed."""

    index: int
    name: str
    seed: int
    score: float | int | None = None
    error: str | None = None
    kept: bool = False


@dataclass
class Simulation:
    base: str
    ms: int
    outcomes: list[Outcome]  # best first, the failed last
    threads: int

    @property
    def kept(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.kept]

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error is not None]


@dataclass
class Replay:
    world: str
    differ: int  # rows that differ between the world and its replay
    score: float | int | None
    recorded: float | int | None
    error: str | None = None
    kept_as: str | None = None
    changes: list[dict] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return self.error is None and self.differ == 0 and self.score == self.recorded


# --- checking a call ----------------------------------------------------------------------------


def script_statements(script: str) -> list[str]:
    """The script's statements: SQL SQLite runs on the world. Chronos' statements (FORK WORLD,
    MERGE WORLD, ...) change worlds, which a simulated world's script doesn't."""
    statements = sqltext.split_statements(script)
    if not statements:
        raise ChronosError("'script' holds no statement: give the SQL to run in each world")
    for stmt in statements:
        if chronos_sql.is_chronos(stmt):
            raise ChronosError(
                f"simulate's script runs SQL in each world; {chronos_sql.lead(stmt)} is a "
                f"world statement (forking, merging, discarding worlds), which a simulated "
                f"world's script can't run: leave it out",
                BAD_ARGUMENT,
            )
    return statements


def score_statement(score: str) -> list[str]:
    statements = sqltext.split_statements(score)
    if len(statements) != 1 or chronos_sql.is_chronos(statements[0]):
        raise ChronosError(
            "'score' is one SELECT giving one number per world, e.g. "
            '"select sum(price) from products"',
            BAD_ARGUMENT,
        )
    return statements


def world_names(db: Database, prefix: str, count: int) -> list[str]:
    """``<prefix>_<i>``, each a free branch name (else refused, nothing made)."""
    chosen = [f"{prefix}_{i}" for i in range(count)]
    names.check(chosen[-1], "'prefix' (world i is named <prefix>_<i>)")
    if "@" in prefix:
        raise ChronosError(f"'prefix' can't contain '@' (it reads as name@when): '{prefix}'")
    taken = sorted(set(chosen) & {w.name for w in db.worlds()}, key=chosen.index)
    if taken:
        more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise ChronosError(
            f"branch '{taken[0]}'{more} already exists: pick another prefix, or discard "
            f"those worlds first",
            IN_USE,
        )
    return chosen


# --- running ------------------------------------------------------------------------------------


def simulate(
    db: Database, request: Request, owner: str, access: Access, own: set[str]
) -> Simulation:
    """Fork, run, score, keep the best and discard the rest (see the module's docstring).
    ``access``: what the caller's statements may do on a world; ``own``: the caller's own
    worlds' ids (safe mode), the worlds kept added to it."""
    started = time.perf_counter()
    statements = script_statements(request.script)
    score = score_statement(request.score)
    chosen = world_names(db, request.prefix, request.worlds)
    ref = BranchRef.parse(request.source)
    made: list[World] = []
    try:
        with db.write():  # one moment for every world
            at = _moment(db, ref)
            for index, name in enumerate(chosen):
                meta = {
                    META_KEY: {
                        "from": ref.name,
                        "at": at,
                        "script": request.script,
                        "score": request.score,
                        "index": index,
                        "seed": seeded.world_seed(request.seed, index),
                        "simulation_seed": request.seed,
                    }
                }
                made.append(lifecycle.fork(db, name, request.source, meta, owner=owner))
        own.update(w.wid for w in made)
        outcomes = [Outcome(i, w.name, w.meta[META_KEY]["seed"]) for i, w in enumerate(made)]
        threads = _threads(request.threads, len(made))
        _run_all(db, made, outcomes, statements, score, access, threads)
        ranked = _ranked(outcomes, request.order)
        keep = len(ranked) if request.keep is None else request.keep
        for o in ranked[:keep]:
            if o.error is None:
                o.kept = True
        with db.write():  # the rest go together; the kept record their score
            for world, o in zip(made, outcomes):
                if o.kept:
                    recorded = {**world.meta[META_KEY], "result": o.score}
                    lifecycle.set_meta(db, world, {META_KEY: recorded}, rescope=False)
                else:
                    lifecycle.discard(db, world)
        own.difference_update(w.wid for w, o in zip(made, outcomes) if not o.kept)
        made = []
    finally:
        if made:  # the call failed as a whole: no world of it stays
            _discard_all(db, made, own)
    ms = round((time.perf_counter() - started) * 1000)
    return Simulation(request.source, ms, ranked, threads)


def _moment(db: Database, ref: BranchRef) -> str:
    """The moment the worlds are forked at, as ``name@when`` reads it again (a time, to the
    microsecond)."""
    when = moments.checked_moment(db, ref.when or "") if ref.past else time.time()
    return moments.exact_moment(when)


def _threads(asked: int, worlds: int) -> int:
    free = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(asked or free or 1, worlds))


def _ranked(outcomes: list[Outcome], order: str) -> list[Outcome]:
    sign = -1 if order == "desc" else 1
    scored = [o for o in outcomes if o.error is None]
    scored.sort(key=lambda o: (sign * float(o.score or 0), o.index))
    return scored + [o for o in outcomes if o.error is not None]


def _discard_all(db: Database, made: list[World], own: set[str]) -> None:
    with db.bounds.paused():  # (chronos' own clean-up: no limit of the call stops it)
        for world in made:
            try:
                lifecycle.discard(db, world)
            except ChronosError:
                pass  # (gone already)
            own.discard(world.wid)


def _run_all(
    db: Database,
    made: list[World],
    outcomes: list[Outcome],
    statements: list[str],
    score: list[str],
    access: Access,
    threads: int,
) -> None:
    """Each world's script and score, on ``threads`` threads each with a database of its own."""
    lock = threading.Lock()
    queue = list(range(len(made)))
    done = [0]
    report = progress.current()  # (the threads don't inherit it)
    errors: list[BaseException] = []
    remaining = _remaining_ms(db)
    privates: list[Database] = []

    def work() -> None:
        own = _private(db, remaining)
        with lock:
            privates.append(own)
        try:
            while True:
                with lock:
                    if not queue or errors or db.bounds.stopped is not None:
                        return
                    index = queue.pop(0)
                o = outcomes[index]
                o.score, o.error = run_world(own, made[index], statements, score, access, o.seed)
                with lock:
                    done[0] += 1
                    if report is not None:
                        report("simulating worlds", done[0], len(made))
        except BaseException as exc:  # (a fault of the database: the call fails)
            with lock:
                errors.append(exc)
        finally:
            with lock:
                privates.remove(own)
            own.bounds.end(True)
            own.close()

    workers = [
        threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True)
        for _ in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        while w.is_alive():
            w.join(0.05)
            if db.bounds.progress():  # (Ctrl-C, or the call's time: the worlds' stop too)
                with lock:
                    for own in privates:
                        own.interrupt()
    if db.bounds.stopped is not None or db.bounds.progress():
        why = db.bounds.stopped
        if why == limits.TIMEOUT:
            why = f"{db.bounds.limit_from or 'its time limit'}, {db.bounds.limit_ms} ms"
        raise ChronosError(
            f"simulate was stopped ({why}) before every world ran: none was kept", STOPPED
        )
    if errors:
        raise errors[0]


def _remaining_ms(db: Database) -> int | None:
    if db.bounds.deadline is None:
        return None
    return max(1, round((db.bounds.deadline - time.monotonic()) * 1000))


def _private(db: Database, remaining_ms: int | None) -> Database:
    """A database of the simulation's own on the folder: its connections' ``random()`` the
    seeded one, the call's time limit left its limit."""
    own = more.another(db, seeded.install)
    own.bounds.begin(limits.Limits(ms=remaining_ms, ms_from=db.bounds.limit_from))
    return own


def run_world(
    db: Database,
    world: World,
    statements: list[str],
    score: list[str],
    access: Access,
    seed: int,
) -> tuple[float | int | None, str | None]:
    """The script, then the score, on ``world`` with ``random()`` seeded by ``seed``: (score,
    None), or (None, why it failed)."""
    index = world.meta.get(META_KEY, {}).get("index", 0)
    params = [index, seed]
    try:
        session = db.session(world)
        with seeded.seeded(session.conn, seed):
            sqlrun.run(db, world, statements, params, budget.UNBOUNDED, access)
        with seeded.seeded(db.session(world).conn, seed):
            outcome = sqlrun.run(db, world, score, params, budget.Budget(2, None), _reads(access))
    except ChronosError as exc:
        if exc.code == STOPPED or db.bounds.stopped is not None:
            raise
        return None, exc.message
    except apsw.Error as exc:
        return None, str(exc)
    return _number(outcome)


def _reads(access: Access) -> Access:
    """The score's access: reads only (SQLite prepares it, the guard refuses any write)."""

    def reads(world: World | None) -> guard.Access:
        given = access(world)
        return dataclasses.replace(given, write=False, settings=False)

    return reads


def _number(outcome: sqlrun.SqlOutcome) -> tuple[float | int | None, str | None]:
    result = outcome.results[-1]
    if result.columns is None:
        return None, "the score isn't a SELECT: it gave no rows"
    if len(result.columns) != 1 or len(result.rows) != 1:
        return None, (
            f"the score gave {len(result.rows)} row(s) of {len(result.columns)} column(s): "
            f"it must give one number"
        )
    value = result.rows[0][0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, f"the score gave {value!r}, not a number"
    if isinstance(value, float) and math.isnan(value):
        return None, "the score gave NaN, not a number"
    return value, None


# --- replay -------------------------------------------------------------------------------------


def recorded(world: World) -> dict[str, Any]:
    record = world.meta.get(META_KEY)
    if not isinstance(record, dict) or not {"from", "at", "script", "score"} <= set(record):
        raise ChronosError(
            f"{world.name} wasn't kept by simulate (its meta holds no '{META_KEY}' record): "
            f"replay makes again only worlds a simulation kept",
            NOT_FOUND,
        )
    return record


def replay(
    db: Database, world: World, keep_as: str | None, owner: str, access: Access, own: set[str]
) -> Replay:
    """World made again from its recorded inputs, compared with it: rows and score."""
    record = recorded(world)
    name = keep_as or f"{world.name[:96]}.replay-{os.urandom(4).hex()}"  # (gone after)
    if keep_as is not None and "@" in keep_as:
        raise ChronosError(f"branch names can't contain '@' (it reads as name@when): '{keep_as}'")
    statements = script_statements(str(record["script"]))
    score = score_statement(str(record["score"]))
    seed = int(record.get("seed", 0))
    meta = {META_KEY: {k: v for k, v in record.items() if k != "result"}}
    again = lifecycle.fork(db, name, f"{record['from']}@{record['at']}", meta, owner=owner)
    own.add(again.wid)
    out = Replay(world.name, 0, None, record.get("result"))
    try:
        private = _private(db, _remaining_ms(db))
        try:
            out.score, out.error = run_world(private, again, statements, score, access, seed)
        finally:
            private.bounds.end(True)
            private.close()
        differ = merge_diff.compare(db, BranchRef.parse(world.name), BranchRef.parse(name))
        out.differ = differ.rows + len(differ.unlike)
        out.changes = [merge_diff.change_data(c) for c in differ.page(0, SHOWN)]
        if keep_as is not None:
            recorded_now = {**meta[META_KEY], "result": out.score}
            lifecycle.set_meta(db, again, {META_KEY: recorded_now}, rescope=False)
            out.kept_as = keep_as
    finally:
        if keep_as is None:
            _discard_all(db, [again], own)
    return out
