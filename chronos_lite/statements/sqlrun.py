"""Running a ``sql`` call: one or more statements, $n parameters, one transaction.

Statements of a call without an explicit BEGIN run as one implicit transaction (as Postgres runs
a multi-statement query): a failure rolls back the whole call and names the statement. A
transaction the call leaves open is rolled back, and the reply says so.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw

from .. import errors, sqltext
from ..errors import ChronosError
from ..history import timetravel
from ..storage import events, faults, guard, schemasync, worlds
from ..storage.branchref import BranchRef
from ..storage.db import Database, Session, Where
from ..storage.fetch import one_row
from ..storage.governance import reads as readcheck
from ..storage.world import demand, placement
from ..storage.world import rowid as worldrowid
from ..storage.world import sql as worldsql
from ..storage.worlds import World
from . import budget, sqlerrors, worldrun
from . import ddl as world_ddl
from .params import Params, bound
from .worldstmt import adapt_insert, gives_rowid


@dataclass
class StatementResult:
    sql: str
    columns: list[str] | None = None
    rows: list[tuple] = field(default_factory=list)
    tag: str = ""
    more: bool = False  # rows past the budget were left unread
    changed: int = 0  # rows it wrote
    ddl: bool = False  # it changed the schema
    report: Any = None  # a chronos statement's operation's data (what --json shows)
    read: budget.Read | None = None  # how its rows were read (what the budget left out)


@dataclass
class SqlOutcome:
    branch: str
    results: list[StatementResult]
    rolled_back_open: bool = False


def run(
    db: Database,
    branch: Where,
    sql: str | list[str],
    params: Params = None,
    limits: budget.Budget = budget.UNBOUNDED,
    access: Callable[[World | None], guard.Access] | None = None,
) -> SqlOutcome:
    """Run a call's SQL statements (text, or its statements split already) on ``branch``
    (chronos' own statements are the operations layer's). ``limits``: the budget of each
    result (its row cap and characters); ``access``: what the statements may touch on the
    session's world (the rights decide it; None: everything)."""
    statements = sqltext.split_statements(sql) if isinstance(sql, str) else sql
    if not statements:
        raise ChronosError("'sql' holds no statement: give one or more SQL statements")
    session = db.session(branch)
    if session.past:  # a branch as it was: read only, whoever asks
        allowed = guard.Access(False, False, lambda _d: _past_refusal(session))
    else:
        allowed = access(session.world) if access is not None else guard.OWNER
    statements, binds = bound(statements, params)
    try:
        return _run(db, session, statements, binds, limits, allowed)
    except faults.FAULTS as exc:  # (outside a statement: BEGIN waiting for the lock, say)
        raise faults.describe(exc, db) or exc from None
    finally:
        try:
            if not session.conn.get_autocommit():  # whatever happened, no transaction stays
                session.conn.execute("ROLLBACK")
        finally:
            db.end_call(session)


def _past_refusal(session: Session) -> ChronosError:
    return BranchRef.parse(session.branch).read_only()


@dataclass
class _Call:
    """One sql call on one session: what it may do, and what its results may hold."""

    db: Database
    session: Session
    binds: dict
    limits: budget.Budget
    access: guard.Access
    immediate: bool = False  # a BEGIN of the call's own takes the write lock at once
    writes: bool = False  # the call may write (its statements tick a world's clock)
    fresh: bool = False  # a world's transaction began: its next write resets its counters
    ticks: list[int] = field(default_factory=list)  # the world clock's stamps of its writes
    version: int | None = None  # the world's version its last write left (uncommitted)
    read: list[str] = field(default_factory=list)  # what a check_reads world read: kept after


def _run(
    db: Database,
    session: Session,
    statements: list[str],
    binds: dict,
    limits: budget.Budget,
    access: guard.Access,
) -> SqlOutcome:
    conn = session.conn
    explicit = any(sqltext.is_transaction_control(s) for s in statements)
    # (what it may write decides the transaction's kind; what it does write, the guard checks)
    writes = access.write and any(sqltext.may_write(s) for s in statements)
    if len(statements) == 1 and sqltext.keywords(statements[0], 1) == ["VACUUM"]:
        writes = False  # VACUUM runs outside any transaction, and writes no rows
    call = _Call(db, session, binds, limits, access, explicit and writes, writes)
    outcome = SqlOutcome(session.branch, [])
    began = False
    on_main = session.world is None
    if not explicit and (writes or len(statements) > 1):
        conn.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
        began = True
        call.fresh = not on_main
    # main's history seqs before the call: the write's own are those after (inside its
    # transaction, no other writer can add any between)
    before = events.positions(conn, db.tables()) if writes and on_main else None
    # The world clock before the call, ticks after it ours; in the call's own transaction, the
    # ticks its writes took say it (a world's schema change ticks it too: read then)
    clock = (
        events.clock(conn)
        if writes and not on_main and (explicit or _changes_schema(statements))
        else None
    )
    schema = _schema_version(conn) if writes and explicit else None
    recorded = 0  # results already in an event
    committed = False  # some of the call's writes are committed already (its own COMMIT)
    for index, stmt in enumerate(statements, start=1):
        try:
            if not on_main and index > 1:  # (an earlier statement may have rolled back)
                db.keep_placed(session)
            commits = explicit and writes and _commits(stmt) and not conn.get_autocommit()
            if commits and not on_main and not call.fresh:
                worldrun.deferred_keys_kept(conn)
            if commits:  # the call's own COMMIT: its event goes in the transaction it commits
                _record(db, session, conn, outcome.results[recorded:], before, clock)
            result = _statement(call, stmt)
            if commits:  # (what it committed is recorded; a later write starts afresh)
                recorded = len(outcome.results) + 1
                later = any(sqltext.may_write(s) for s in statements[index:])
                before, clock, schema = _positions(db, conn, on_main) if later else (None,) * 3
        except (apsw.Error, KeyError, ChronosError, OverflowError) as exc:
            was_open = not conn.get_autocommit()
            if was_open:
                conn.execute("ROLLBACK")
                readcheck.unsure(conn)
            undone = _undone(began, was_open, committed)
            failed = (index, len(statements), stmt, undone)
            raise sqlerrors.explain(db, session, exc, *failed) from None
        outcome.results.append(result)
        if explicit and conn.get_autocommit() and (commits or result.changed or result.ddl):
            committed = True  # (a COMMIT, or a write outside the call's own transaction)
    if began and not on_main and writes and not call.fresh and worldrun.keyed(session):
        worldrun.ended(conn, worldrun.deferred_keys_kept)
    if writes and began:
        span = None if clock is not None or not call.ticks else (call.ticks[0], call.ticks[-1])
        _record(db, session, conn, outcome.results, before, clock, span)
    if began:
        worldrun.ended(conn, lambda c: c.execute("COMMIT"))
        if not on_main:  # (the world's version as the call left it: this connection's own)
            session.settled = call.version if call.version is not None else session.seen
        if writes:
            db.bounds.committed(conn, session.data_version if not on_main else None)
    elif not conn.get_autocommit():
        conn.execute("ROLLBACK")
        outcome.rolled_back_open = True
    elif writes and explicit and schema is not None and _committed(db, conn, before, clock, schema):
        # writes outside the call's own BEGIN ... COMMIT (each its own transaction, or one a
        # RELEASE committed): recorded after them (committed: no limit of the call stops it)
        with db.bounds.paused(), db.write(db.main.conn) as main:
            _record(db, session, main, outcome.results[recorded:], before, clock)
    readcheck.keep(session, call.read, binds)
    return outcome


def _changes_schema(statements: list[str]) -> bool:
    """Whether a statement of the call may change a schema (a world's ticks its clock)."""
    return any(sqltext.keywords(s, 1) in (["CREATE"], ["ALTER"], ["DROP"]) for s in statements)


def _undone(began: bool, was_open: bool, committed: bool) -> str:
    """What a failing call left: its own transaction rolled back; with the call's own BEGIN ...
    COMMIT, what an earlier COMMIT (or a write outside any transaction) committed stays."""
    if began or not (was_open or committed):
        return "nothing was changed"
    rolled = "an open transaction was rolled back" if was_open else "it changed nothing"
    return f"{rolled}; what the call committed before stays" if committed else rolled


def _commits(stmt: str) -> bool:
    return sqltext.keywords(stmt, 1) in (["COMMIT"], ["END"])


def _positions(db: Database, conn: apsw.Connection, on_main: bool) -> tuple:
    """Where main's history, the world clock and the schema stand (after a COMMIT)."""
    if on_main:
        return events.positions(conn, db.tables()), None, _schema_version(conn)
    return None, events.clock(conn), _schema_version(conn)


def _schema_version(conn: apsw.Connection) -> int:
    return one_row(conn.execute("pragma schema_version"))[0]


def _committed(
    db: Database, conn: apsw.Connection, before: dict | None, clock: int | None, schema: int | None
) -> bool:
    """Whether a call's own transactions left anything written (they may all roll back)."""
    if _schema_version(conn) != schema:
        return True
    if before is not None:
        return events.positions(conn, db.tables()) != before
    return clock is not None and events.clock(conn) != clock


def _record(
    db: Database,
    session: Session,
    conn: apsw.Connection,
    results: list[StatementResult],
    before: dict | None,
    clock: int | None,
    span: tuple[int, int] | None = None,
) -> None:
    """Statements of the call as an event of its branch: their rows, and on main the history
    seqs they wrote (in the transaction that wrote them); on a world the world clock's ticks
    (after ``clock``, or ``span``: the first and last the call's writes took)."""
    rows = sum(r.changed for r in results)
    ddl = any(r.ddl for r in results)
    if not rows and not ddl:
        return
    writing = [r for r in results if r.changed or r.ddl] or results
    first = " ".join(writing[0].sql.split()) if writing else ""  # (not the BEGIN)
    detail: dict = {"sql": first if len(first) <= 200 else first[:197] + "..."}
    if len(results) > 1:
        detail["statements"] = len(results)
    if before is not None:  # (the tables as before, unless the call may have made one)
        tables = db.tables() if ddl else {str(n): (n, None) for n in before}
        detail["seqs"] = events.ranges(before, events.positions(conn, tables))
    if clock is not None:  # the world clock's stamps of the call's writes
        detail["clock"] = [clock + 1, events.clock(conn)]
    elif span is not None:
        detail["clock"] = list(span)
    world = session.world.id if session.world is not None else 0
    db.record(conn, world, "schema" if ddl else "write", rows, detail)


def _statement(call: _Call, stmt: str) -> StatementResult:
    """Run one statement; its result names it as the caller wrote it (not as rewritten)."""
    result = _run_statement(call, stmt)
    result.sql = stmt
    return result


def _run_statement(call: _Call, stmt: str) -> StatementResult:
    db, session = call.db, call.session
    conn = session.conn
    words = sqltext.keywords(stmt, 6)
    if call.immediate and words in (["BEGIN"], ["BEGIN", "TRANSACTION"], ["BEGIN", "DEFERRED"]):
        # A script that writes takes the write lock up front, so it waits for other writers
        # instead of failing with 'database is locked' when it first writes.
        stmt = "BEGIN IMMEDIATE"
    ddl = (
        words[:1]
        and words[0] in ("CREATE", "ALTER", "DROP")
        and "TEMP" not in words[1:2]
        and "TEMPORARY" not in words[1:2]
    )
    if ddl and session.world is not None and world_ddl.is_world_change(session, stmt):
        # a world's schema change: a write, by chronos
        if not call.access.write:
            raise sqlerrors.refused(call.access, guard.Denial("write", words[0]))
        return StatementResult(stmt, tag=world_ddl.run(db, session, stmt), ddl=True)
    if "OF" in sqltext.all_words(stmt):
        stmt = timetravel.as_of(db, session, stmt)
    elif session.world is not None and words[:1] == ["SELECT"]:
        stmt = worldrun.unindexed(session, worldrun.counted(session, stmt))
        return _read_on_world(call, stmt, words)
    if ddl and words[:2] == ["ALTER", "TABLE"] and "DROP" in words and call.access.write:
        _drop_history_triggers_for(conn, stmt)
    control = sqltext.is_transaction_control(stmt)  # writes no rows (changes() would say
    # the last statement's count, and a world's clock must not tick outside the transaction)
    reads = False
    if session.world is not None and not control:
        # (a plain read sets no context: no conflict mode, no clock, no view written)
        reads = not sqltext.may_write(stmt)
        if not reads:
            tick = call.writes
            mode = sqltext.conflict_mode(stmt)
            on_view = worldrun.on_view(session, stmt)
            deferring = worldrun.deferring(session)
            seq = worldsql.begin_world_write(conn, mode, tick, deferring, on_view, call.fresh)
            call.fresh = False
            if seq is not None:
                call.ticks.append(seq)
            if tick:
                worldrun.name_columns(session, stmt)
                return worldrun.keys_kept(
                    session, lambda: _written(call, stmt, words, bool(ddl), control)
                )
    result = _written(call, stmt, words, bool(ddl), control, reads)
    if session.world is not None and words[:1] == ["BEGIN"]:
        call.fresh = True  # (its deferred foreign keys count from zero)
    return result


def _read_on_world(call: _Call, stmt: str, words: list[str]) -> StatementResult:
    """A read on a world, whose tables read apart are copied whole on its connection when its
    reads show a copy costs less (``world.demand``): before it, or after, for the next ones."""
    session = call.session
    now, scanned = demand.before_read(session, stmt, call.binds)
    if now:
        session.bigger |= now
        call.db.place_again(session)
        scanned = frozenset()  # (read as a table now)
    started = time.perf_counter()
    result = _written(call, stmt, words, False, False, reads=True)
    call.read += [stmt] if session.world and readcheck.keeps(session.world.meta) else []
    if scanned and (later := demand.after_read(session, scanned, time.perf_counter() - started)):
        session.bigger |= later
        call.db.place_again(session)
    return result


def _written(
    call: _Call, stmt: str, words: list[str], ddl: bool, control: bool, reads: bool = False
) -> StatementResult:
    """Run a statement (its schema and transaction sides done) and tell what it did
    (``reads``: a plain read, on a world: it wrote nothing)."""
    db, session = call.db, call.session
    conn = session.conn
    world = session.world
    inserts = world is not None and call.access.write and words[:1] in (["INSERT"], ["REPLACE"])
    if inserts and gives_rowid(db, session, stmt):
        columns, got = _execute(call, stmt, _with_rowid)
    elif inserts and world is not None:
        adapted = adapt_insert(db, session, stmt, call.binds, _adapted_execute(call))
        if adapted is not None:
            if adapted.changed:
                call.version = worlds.bump_version(conn, world)
            if not adapted.columns:
                return StatementResult(
                    stmt, tag=f"INSERT 0 {adapted.changed}", changed=adapted.changed
                )
            return StatementResult(stmt, adapted.columns, adapted.rows, changed=adapted.changed)
        columns, got = _execute(call, stmt)
    else:
        columns, got = _execute(call, stmt)
    changed = 0 if ddl or control or reads else worldsql.rows_written(session)
    if changed and session.world is not None:
        call.version = worlds.bump_version(conn, session.world)
    if ddl:
        db.follow_schema(conn)
    if columns is not None:
        return StatementResult(
            stmt, columns, got.rows, more=got.more, changed=changed, ddl=ddl, read=got
        )
    return StatementResult(stmt, tag=_tag(stmt, changed), changed=changed, ddl=ddl)


class _Promote(Exception):
    """A statement on a world would write main's table ``name``: the world may need a copy of
    it first (one of main's FTS5 tables), then the statement runs again (it ran nothing)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _execute(
    call: _Call, stmt: str, run: Callable[[_Call, str], tuple] | None = None
) -> tuple[list[str] | None, budget.Read]:
    """One user statement (after giving a world the copies of main's virtual tables it writes,
    as its guard finds them); ``run``: how it runs (``_execute_once``)."""
    promoted: set[str] = set()
    while True:
        try:
            return (run or _execute_once)(call, stmt)
        except apsw.SQLError as exc:
            if run is not None or call.session.world is None or not worldrowid.names_rowid(exc):
                raise
            run = _with_rowid  # (a rowid on a world's view: again, on virtual tables)
        except _Promote as promote:
            name = promote.name
            why = None if name in promoted else placement.promote(call.session, name)
            if why is not None or name in promoted:
                message = why or guard.main_table_message(name)
                raise ChronosError(message, errors.REFUSED) from None
            promoted.add(name)


def _with_rowid(call: _Call, stmt: str) -> tuple[list[str] | None, budget.Read]:
    """A statement naming the rowid of a table the world reads through a view: run with the
    views swapped for virtual tables that have one (``world.rowid``), then put back."""
    saved = worldrowid.swap(call.session)
    try:
        return _execute_once(call, stmt)
    finally:
        worldrowid.restore(call.session, saved)


def _execute_once(call: _Call, stmt: str) -> tuple[list[str] | None, budget.Read]:
    """One user statement under the guard: its columns (None: it returns none) and its rows,
    read within the call's budget."""
    conn = call.session.conn
    readonly: list[bool] = []  # (the statement's, as prepared)
    prefixed: list[int] = []  # chronos-named objects before an ALTER TABLE (a rename into them)

    def trace(cursor: apsw.Cursor, text: str, _b: Any) -> bool:
        # (its columns are read after its first step: read here, apsw would keep the ones of a
        # cached statement that SQLite then prepares again for a changed schema)
        readonly[:] = [cursor.is_readonly]
        if not cursor.is_readonly and checked.classify(text) is None:
            # SQLite calls it a write, but no action of it was there to authorize (VACUUM): a
            # statement that can't be classified runs only with every right, and then what
            # SQLite does inside it (VACUUM copies every table) isn't judged again
            if not call.access.settings:
                checked.denied = checked.denied or guard.Denial("settings", _lead(stmt))
                return False
            checked.access, checked.unjudged = None, call.access
        if checked.altered:
            prefixed.append(_prefixed_objects(conn))
        checked.acted = checked.altered = False
        return True

    cursor = conn.cursor()
    cursor.exec_trace = trace
    checked = guard.checking(conn, call.access)
    try:
        cursor.execute(call.access.mark + stmt, call.binds or None)
        columns = _columns(cursor, call.access.mark + stmt, call.binds, any(readonly))
        got = budget.read(cursor, call.limits, columns) if columns else budget.Read()
        if got.more:
            cursor.close(force=True)  # (a write is done by its first step)
        if prefixed and _prefixed_objects(conn) > prefixed[0]:  # renamed into chronos' names
            raise sqlerrors.refused(call.access, guard.Denial("own", "ALTER TABLE ... RENAME TO"))
    except apsw.Error as exc:
        denial = checked.denied
        if denial is None and call.session.past and "because it is a view" in str(exc):
            denial = guard.Denial("write")  # (SQLite refused before asking the guard)
        if denial is not None and denial.kind == "main" and call.session.world is not None:
            raise _Promote(denial.name) from None  # (one of main's virtual tables, maybe)
        if denial is not None:
            raise sqlerrors.refused(call.access, denial) from None
        raise
    except OverflowError:
        raise ChronosError(errors.TOO_BIG, errors.BAD_ARGUMENT) from None
    finally:
        checked.done()
    return (columns or None), got


def _columns(cursor: apsw.Cursor, text: str, binds: Any, reads: bool) -> list[str]:
    """The statement's columns as it has them after its first step ([]: none, or it ran to
    its end, a COMMIT say). A read that found no row is prepared again, not run, to name
    them."""
    try:
        return [d[0] for d in cursor.description or ()]
    except apsw.ExecutionCompleteError:
        pass
    if not reads:
        return []
    names: list[str] = []

    def peek(probe: apsw.Cursor, _text: str, _binds: Any) -> bool:
        names.extend(d[0] for d in probe.description or ())
        return False  # (prepared, never run)

    probe = cursor.connection.cursor()
    probe.exec_trace = peek
    with contextlib.suppress(apsw.ExecTraceAbort):
        probe.execute(text, binds or None)
    return names


def _lead(stmt: str) -> str:
    words = sqltext.keywords(stmt, 1)
    return words[0] if words else "this statement"


def _prefixed_objects(conn: apsw.Connection) -> int:
    return one_row(
        conn.execute(
            "select (select count(*) from main.sqlite_schema where name like '\\_chronos\\_%' "
            "escape '\\') + (select count(*) from temp.sqlite_schema where name like "
            "'\\_chronos\\_%' escape '\\')"
        )
    )[0]


def _adapted_execute(call: _Call):
    """How worldstmt runs an INSERT it adapted: as a user statement, under the guard."""

    def execute(_conn: apsw.Connection, stmt: str, _binds: dict) -> tuple[list, tuple]:
        columns, got = _execute(call, stmt)
        return got.rows, tuple((c, None) for c in columns or [])

    return execute


def _tag(stmt: str, changed: int) -> str:
    words = sqltext.keywords(stmt, 1)
    first = words[0] if words else ""
    if first == "WITH":
        order = [
            w for w in ("INSERT", "REPLACE", "UPDATE", "DELETE") if w in sqltext.all_words(stmt)
        ]
        first = order[0] if order else "SELECT"
    if first in ("INSERT", "REPLACE"):
        return f"INSERT 0 {changed}"
    if first in ("UPDATE", "DELETE"):
        return f"{first} {changed}"
    return sqltext.statement_tag(stmt)


def _drop_history_triggers_for(conn: apsw.Connection, stmt: str) -> None:
    """DROP COLUMN refuses while a trigger names the column: take ours off; sync puts them back."""
    names = [w for w, _, _ in sqltext.name_tokens(stmt)]
    upper = [w.upper() for w in names]
    if len(names) > 2 and upper[0] == "ALTER" and upper[1] == "TABLE":
        table = names[3] if upper[2] == "MAIN" and len(names) > 3 else names[2]
        schemasync.drop_triggers(conn, table)
