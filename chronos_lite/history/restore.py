"""Putting a branch back as it was: restore (to a moment), checkpoint (name a moment),
rollback (to a checkpoint).

A restore writes back, through the branch's own tables or views, every row that differs
between the branch now and the branch then, so history keeps both and the restore can itself
be undone. It writes them as data, as a merge does (``rows.as_data``): the app's triggers don't
fire again, for what they did then is among the rows put back (an ``updated_at`` trigger would
otherwise stamp each restored row with now, and the branch would never read as it was); main's
external-content FTS5 indexes are kept in step as the app's triggers would have kept them. Its
cost is the rows changed since the moment: the keys main's history (or the world's) recorded
after it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import apsw

from .. import errors, names, progress
from ..errors import ChronosError
from ..storage import events, moments, worlds
from ..storage import rows as rows_module
from ..storage.codec import row_key
from ..storage.db import Database, Session
from ..storage.rows import view_row, write_row
from ..storage.schema.catalog import TableInfo
from ..storage.shadow import SEQ, TIME, WORLD, history_table, world_history_table
from ..storage.world import sql as worldsql
from ..storage.worlds import World


@dataclass
class Restored:
    branch: str
    when: float
    rows: int


def restore(db: Database, branch: str, when: float, asked: str, kind: str = "restore") -> Restored:
    world = db.resolve(branch)
    if world is not None:
        moments.check_world_moment(db.main.conn, world, when, asked)
    tables = db.tables_for(world)
    keys = {name: _changed_since(db, world, n, t, when) for name, (n, t) in tables.items()}
    doing = f"{'rolling back' if kind == 'rollback' else 'restoring'} {branch}"
    wanted = [(name, key) for name, found in keys.items() for key in found]
    past = db.past_session(branch, when, f"{branch}@{asked}")
    try:
        then = {
            (name, key): view_row(past, tables[name][0], tables[name][1], key)
            for name, key in progress.counted(f"{doing}: reading rows as they were", wanted)
        }
    finally:
        db.end_call(past)
    session = db.session(branch)
    try:
        detail = {"to": moments.show_moment(when), "asked": asked}
        with rewriting(db, session, kind, detail) as done:
            for (name, key), row in progress.counted(f"{doing}: writing rows", [*then.items()]):
                n, t = tables[name]
                now = view_row(session, n, t, key)
                if now != row:
                    done.put(session, n, t, key, now, row, f"restoring {branch}")
    finally:
        db.end_call(session)
    return Restored(branch, when, done.written)


def _changed_since(db: Database, world: World | None, n: int, t: TableInfo, when: float) -> set:
    """Keys of the rows the branch changed since ``when`` (a superset: some changed back)."""
    conn = db.main.conn
    cols = t.stored_list(columns=list(t.key_cols))
    if world is None:
        seq = moments.seq_at(conn, n, when)
        rows = conn.execute(f"select {cols} from {history_table(n)} where {SEQ} > ?", (seq,))
    else:
        rows = conn.execute(
            f"select {cols} from {world_history_table(n)} where {WORLD} = ? and {TIME} > ?",
            (world.id, when),
        )
    return {tuple(r) for r in rows}


@dataclass
class Rewrite:
    """A branch's rows written back in one transaction (restore, rollback, the undos)."""

    conn: apsw.Connection
    written: int = 0
    rows: list[rows_module.Written] = field(default_factory=list)  # (for the FTS5 indexes)

    def put(
        self,
        session: Session,
        n: int,
        t: TableInfo,
        key: tuple,
        now: dict | None,
        row: dict | None,
        doing: str,
    ) -> None:
        """Make the row at ``key`` (``now`` as it is) be ``row`` again (None: no row)."""
        write_back(session, n, t, key, row, doing)
        self.written += 1
        self.rows.append((t, key, now, row))


@contextmanager
def rewriting(db: Database, session: Session, kind: str, detail: dict) -> Iterator[Rewrite]:
    """One write transaction on the session's branch that puts rows back: foreign keys
    checked once at the end on main, the world clock moved on a world; then the event (with
    the history seqs it wrote, on main) and the world's new version."""
    with db.write(session.conn) as conn:
        if session.world is None:
            conn.execute("pragma defer_foreign_keys = on")
            before = events.positions(conn, db.tables())
        else:
            worldsql.begin_world_write(conn, None)
        done = Rewrite(conn)
        with rows_module.as_data(session):
            yield done
        rows_module.reindex_fts(session, done.rows)
        if session.world is None:
            detail = {**detail, "seqs": events.ranges(before, events.positions(conn, db.tables()))}
        elif done.written:
            worlds.bump_version(conn, session.world)
        db.record(conn, session.world.id if session.world else 0, kind, done.written, detail)


def write_back(
    session: Session, n: int, t: TableInfo, key: tuple, row: dict | None, doing: str
) -> None:
    """Write a row back (None: delete it), with a clear refusal if a rule stops it."""
    try:
        write_row(session, n, t, key, row)
    except apsw.ConstraintError as exc:
        described = errors.from_sqlite(exc)
        raise ChronosError(
            f"{doing} would break a rule at {row_key(t, key)}: "
            f"{described.message} (another row holds that value now; change it first); "
            f"nothing was changed",
            described.code,
        ) from None


# --- checkpoints -----------------------------------------------------------------------------


def checkpoint(db: Database, branch: str, name: str) -> float:
    names.check(name, "a checkpoint's name")
    world = db.resolve(branch)
    ident = world.id if world is not None else 0
    with db.write() as conn:
        found = conn.execute(
            "select time from _chronos_checkpoints where world = ? and name = ?", (ident, name)
        ).fetchone()
        if found:
            raise ChronosError(
                f"{branch} already has a checkpoint {name} (at "
                f"{moments.show_moment(found[0])}): pick another name",
                errors.IN_USE,
            )
        when = time.time()
        conn.execute("insert into _chronos_checkpoints values (?, ?, ?)", (ident, name, when))
        db.record(conn, ident, "checkpoint", 0, {"name": name})
    # History is stamped to the millisecond: writes from here on come after the checkpoint.
    time.sleep(0.002)
    return when


def checkpoint_time(db: Database, branch: str, name: str) -> float:
    world = db.resolve(branch)
    ident = world.id if world is not None else 0
    found = db.main.conn.execute(
        "select time from _chronos_checkpoints where world = ? and name = ?", (ident, name)
    ).fetchone()
    if found is None:
        names = [
            r[0]
            for r in db.main.conn.execute(
                "select name from _chronos_checkpoints where world = ? order by time", (ident,)
            )
        ]
        listing = ", ".join(names) if names else "none yet (make one with checkpoint)"
        raise ChronosError(
            f"{branch} has no checkpoint {name}; its checkpoints: {listing}", errors.NOT_FOUND
        )
    return found[0]
