"""Merge: apply a world's changes to its parent, all or nothing.

The three-way rule, per row the world changed: the parent didn't change it since the fork →
the world's version is applied; the parent changed it too (even to the same value) → a
conflict, and nothing merges unless it is settled (``resolve``, ``by_columns``, ``rows``). A
unique or foreign-key violation that only the combination causes is refused with its SQLSTATE
(23505, 23503). The whole merge is one transaction on the parent. A plain merge finishes the
world; merging part of it (``only_tables``, ``only_keys``) leaves it open with the rest.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import apsw

from .. import errors, hints, progress
from ..errors import ChronosError
from ..render import blob_json
from ..storage import events, lifecycle, rows, worlds
from ..storage.branchref import BranchRef
from ..storage.codec import db_row, find_in, parse_id, split_key
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.rows import write_row
from ..storage.shadow import SEQ, history_table
from ..storage.world import sql as worldsql
from ..storage.worlds import World
from . import checks, partial, replica
from .changes import Change, world_changes
from .diff import ORDER, row_text
from .gate import judge
from .names import Names
from .plan import Outcome, Plan
from .policy import Held
from .request import Options
from .schema import apply_steps, steps
from .schema import conflict_error as schema_conflict_error


def settle_hint(statement: str, preview: str) -> str:
    """How to settle conflicts, spelled for the caller's front end (``hints``)."""
    return (
        f"settle them with {hints.arg('resolve', 'ours')} or {hints.arg('resolve', 'theirs')}"
        f", {hints.arg('by_columns')} (only a column both sides changed conflicts), "
        f'{hints.param("rows")} ({{"table/id": "ours" | "theirs" | "delete" | {{row}}}}), '
        f"or look first with {hints.op('merge_preview')} (in SQL: {statement} RESOLVE theirs, "
        f"... BY COLUMNS{preview})"
    )


def _settle(c: Change, opts: Options, by_hand: Any) -> Outcome:
    if not c.parent_changed and by_hand is None:
        return Outcome(c, "apply", f"{c.kind}: the parent didn't change this row", c.ours)
    if by_hand is not None:
        return _by_hand(c, by_hand)
    if opts.resolve == "ours":
        return Outcome(c, "apply", "both changed it; resolve=ours keeps this branch's", c.ours)
    if opts.resolve == "theirs":
        return Outcome(
            c, "theirs", "both changed it; resolve=theirs keeps the parent's", c.theirs, write=False
        )
    if opts.by_columns and c.base is not None and c.ours is not None and c.theirs is not None:
        both = sorted(set(c.fields) & set(c.parent_fields))
        if not both:
            combined = dict(c.theirs)
            combined.update({f: c.ours[f] for f in c.fields})
            return Outcome(c, "combined", "both changed it, in different columns", combined)
        return Outcome(c, "conflict", f"both changed {', '.join(both)}")
    return Outcome(c, "conflict", _why(c))


def _no_table(c: Change, parent: str, opts: Options) -> Outcome:
    """A row of a table the target doesn't have: it dropped it, or the world inherited the
    table from a branch the target doesn't see."""
    if opts.resolve == "theirs":
        return Outcome(c, "theirs", f"{parent} has no table {c.table}; resolve=theirs", None, False)
    return Outcome(
        c,
        "conflict",
        f"{parent} has no table {c.table} (it dropped it, or the table was made on a branch it "
        f"doesn't see); resolve=theirs leaves these rows out",
    )


def _why(c: Change) -> str:
    if c.theirs is None:
        return "the parent deleted this row since the fork"
    if c.base is None:
        return "the parent inserted a row with this key since the fork"
    same = " (to the same value)" if c.ours == c.theirs else ""
    return f"the parent changed this row since the fork{same}"


def _by_hand(c: Change, choice: Any) -> Outcome:
    if choice == "ours":
        return Outcome(c, "apply", "rows: ours", c.ours)
    if choice == "theirs":
        return Outcome(c, "theirs", "rows: theirs", c.theirs, write=False)
    if choice == "delete":
        return Outcome(c, "by hand", "rows: delete", None)
    where = f"rows[{json.dumps(c.where, ensure_ascii=False)}]"
    if isinstance(choice, dict):
        unknown = [k for k in choice if k not in c.t.column_names]
        if unknown:
            raise ChronosError(
                f"{where} names no column {unknown[0]!r} of {c.table}; its columns: "
                f"{', '.join(c.t.column_names)}"
            )
        row = dict(c.theirs or c.ours or c.base or {})
        row.update(db_row(c.t, choice, where))
        return Outcome(c, "by hand", "rows: a row given by hand", row)
    raise ChronosError(
        f'{where} must be "ours", "theirs", "delete" or a row object, not {choice!r}'
    )


def target_of(db: Database, world: World, opts: Options) -> tuple[Session, bool]:
    """The branch a merge writes (a session on it), and whether it is not the world's parent."""
    parent = world.parent if world.parent_id is not None else "main"
    into = opts.into.writable() if opts.into is not None else parent
    if into == world.name:
        raise ChronosError(f"'into' names {world.name} itself: give its parent or another branch")
    below = {w.name for w in worlds.children(db.main.conn, world)}
    if into in below:
        raise ChronosError(
            f"'into' names {into}, forked from {world.name}: merge it the other "
            f"way (merge {into} into {world.name})"
        )
    return db.session(opts.into or BranchRef(parent)), into != parent


def position(db: Database, session: Session) -> int:
    """Where a branch stands, as one number that moves on with every write to it: a world's
    version, or for main the sum of its tables' history positions."""
    if session.world is not None:
        return worlds.version_of(session.conn, session.world.id) or 0
    conn = session.conn
    return sum(
        one_row(conn.execute(f"select coalesce(max({SEQ}), 0) from main.{history_table(n)}"))[0]
        for n, _t in db.tables().values()
    )


@dataclass
class Reach:
    """What a merge with these options looks at: its tables (None: all), keys (None: all),
    rows settled by hand, and the tables the target has (or gets from the merge)."""

    tables: set[str] | None
    keys: set[tuple] | None
    by_hand: dict[tuple, Any]
    there: set[int]


def prepare(db: Database, world: World, opts: Options) -> tuple[Plan, Reach]:
    """A merge's plan without its rows yet (its target and schema changes), and its reach."""
    parent, other = target_of(db, world, opts)
    tables = _only_tables(db, world, opts.only_tables)
    keys = _only_keys(db, world, opts.only_keys)
    rows = _rows_by_key(db, world, opts.rows)
    if keys is not None:
        tables = {t for t, _ in keys} if tables is None else tables & {t for t, _ in keys}
    p = Plan(world, parent, partial=opts.partial, other=other)
    p.schema = steps(db, world, parent, tables)
    if other and p.schema:
        raise ChronosError(
            f"{world.name} changed the schema ({'; '.join(s.op.sql(s.table) for s in p.schema)}): "
            f"schema changes merge into its parent ({world.parent}) only; merge there, or "
            f"leave those tables out with only_tables"
        )
    created = {s.op.table_id for s in p.schema if s.op.kind == "create"}
    p.names = Names.of(db.tables_for(parent.world), db.tables_for(world))
    there = set(p.names.parent) | created
    return p, Reach(tables, keys, rows, there)


def settle(c: Change, opts: Options, reach: Reach, parent: str) -> Outcome:
    """What the merge does with one changed row."""
    outcome = _settle(c, opts, reach.by_hand.get((c.table, c.key)))
    if c.n not in reach.there and outcome.outcome != "theirs":
        outcome = _no_table(c, parent, opts)
    return outcome


def plan(db: Database, world: World, opts: Options, doing: str = "merging") -> Plan:
    p, reach = prepare(db, world, opts)
    reading = f"{doing} {world.name}: reading its changes"
    for n, c in enumerate(world_changes(db, p.world, p.parent, reach.tables, p.other), 1):
        if n % progress.EVERY == 0:
            progress.report(reading, n)
        if reach.keys is not None and (c.table, c.key) not in reach.keys:
            continue
        p.outcomes.append(settle(c, opts, reach, p.parent.branch))
    p.outcomes.sort(key=lambda o: (ORDER[o.change.kind], o.change.table, o.change.key))
    return p


def _only_tables(db: Database, world: World, names: list[str] | None) -> set[str] | None:
    if names is None:
        return None
    out = set()
    dropped = {s.table for s in steps(db, world, db.main) if s.op.kind == "drop"}
    for name in names:
        found = next((d for d in dropped if d.lower() == name.lower()), None)
        out.add(found or db.table(name, world)[1].name)
    return out


def _split_key(db: Database, world: World, spelled: str, what: str) -> tuple[str, tuple]:
    """A ``table/id`` (``storage/codec.py``) as (the table's name, the key's values)."""
    t, ident = split_key(spelled, find_in(db.tables_for(world)), what)
    return t.name, tuple(parse_id(t, ident))


def _only_keys(db: Database, world: World, spelled: list[str] | None) -> set[tuple] | None:
    if spelled is None:
        return None
    return {_split_key(db, world, s, "only_keys entry") for s in spelled}


def _rows_by_key(db: Database, world: World, rows: dict[str, Any]) -> dict[tuple, Any]:
    return {_split_key(db, world, k, "rows key"): v for k, v in (rows or {}).items()}


def conflict_error(p: Plan, doing: str = "merging") -> ChronosError:
    n = len(p.conflicts)
    where = "into" if doing == "merging" else "onto"
    lines = [
        f"{doing} {p.world.name} {where} {p.parent_name}: {n} conflict"
        f"{'s' if n != 1 else ''} (rows both changed since the fork), nothing was changed:"
    ]
    for o in p.conflicts:
        c = o.change
        lines.append(
            f"! {c.where} ({o.detail}) base {row_text(c.base)} "
            f"ours {row_text(c.ours)} theirs {row_text(c.theirs)}"
        )
    statement = "MERGE WORLD" if doing == "merging" else "REBASE WORLD"
    preview = ", MERGE WORLD ... DRY RUN" if doing == "merging" else ""
    lines.append(settle_hint(f"{statement} {p.world.name}", preview))
    data = [
        {
            "table": o.change.table,
            "id": o.change.id,
            "detail": o.detail,
            "base": o.change.base,
            "ours": o.change.ours,
            "theirs": o.change.theirs,
        }
        for o in p.conflicts
    ]
    return ChronosError("\n".join(lines), errors.CONFLICT, data)


def check_version(world: World, version: int | None) -> None:
    """Refuse when the caller read the world at another version than it is at now."""
    if version is not None and version != world.version:
        raise ChronosError(
            f"{world.name} is at version {world.version}, not {version}: it changed since; "
            f"look at its diff again, then use its version now",
            errors.CONFLICT,
        )


def _flag_interrupted(db: Database, world: World, confirm: bool) -> None:
    """A merge flags its world first, in a transaction of its own; the merge's commit clears
    it. A flag found here means a merge stopped half-way (nothing of it reached the parent,
    but the world's last writes may not have reached the disk either): say so, unless the
    caller confirms after checking the world's diff."""
    conn = db.main.conn
    started = worlds.merge_started(conn, world)
    if started is not None and not confirm:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
        raise ChronosError(
            f"the last merge of {world.name} (started {when}) was interrupted: nothing of it "
            f"was merged, and writes to {world.name} just before may be missing. Check its "
            f"diff, then merge with {hints.arg('confirm')}",
            errors.CONFLICT,
        )
    with db.write(conn):
        worlds.mark_merging(conn, world, True)


def merge(db: Database, world: World, opts: Options) -> Plan:
    """Merge a world into its parent (all of it, finishing it, or a part, leaving it open), as
    ``opts`` asks. ``opts.gate``: what holds it for a person (an agent's policy; a person's
    confirm_deletes_over; a dry run, which only says whether it would be held)."""
    gate, name = opts.gate, world.name
    check_version(world, opts.version)
    children = worlds.children(db.main.conn, world)
    if children and not opts.partial:
        raise ChronosError(
            f"{name} has branches forked from it ({', '.join(w.name for w in children)}): "
            f"merge or discard those first",
            errors.IN_USE,
        )
    session, _other = target_of(db, world, opts)
    conn = session.conn
    # confirm applies to a plain merge only (the spec): it is not needed, nor asked for, when
    # into, only_tables, only_keys, by_columns, rows or version is given
    if not gate.dry:
        _flag_interrupted(db, world, opts.confirm or opts.settled)
    p = None
    try:
        with replica.keys_off(session), db.write(conn):
            if opts.target is not None and position(db, session) != opts.target:
                raise ChronosError(
                    f"{session.branch} changed since the preview (it stood at {opts.target}, "
                    f"now {position(db, session)}): preview the merge again",
                    errors.CONFLICT,
                )
            # inside the write lock, the world as the file has it: nothing moves under it
            world = worlds.again(conn, world)
            check_version(world, opts.version)
            p = plan(db, world, opts)
            clashes = [s for s in p.schema if s.conflict]
            if clashes:
                raise schema_conflict_error(world, p.parent_name, clashes)
            if p.conflicts and not gate.dry:  # (a dry run judges the rest: they aren't a rule)
                raise conflict_error(p)
            held = judge(db, p, gate, opts.confirm_deletes)
            before = events.positions(conn, db.tables()) if session.world is None else None
            touched, gone = checks.touched(p), checks.gone(p)  # (before the merge renames)
            apply_steps(db, world, session, p.schema)
            undo = _apply(db, p)
            apply_steps(db, world, session, p.schema, rows_done=True)
            # (on the merged result: for an agent under a hold, rows found are one more reason)
            held += checks.hold(db, conn, name, touched, gate.hold is not None, gone)
            if held or gate.dry:
                raise Held(name, gate.hold, held, world.version)
            _record_merge(db, p, conn, before, undo)
            if not p.partial:
                lifecycle.finish(conn, world.id, state="merged")
            elif not p.other:
                partial.remember_merged(db, p)
            worlds.mark_merging(conn, world, False)
            if p.parent.world is not None:
                worlds.bump_version(conn, p.parent.world)
            if p.partial and (p.writes or p.schema):
                worlds.bump_version(conn, world)
    except BaseException as exc:
        db.end_call(session)
        # Refused or failed, but not interrupted: the flag goes (a crash leaves it).
        if not gate.dry:
            with db.write(db.main.conn):
                worlds.mark_merging(db.main.conn, world, False)
        if isinstance(exc, apsw.ConstraintError):
            raise _combination_error(name, p, exc) from None
        raise
    db.end_call(session)
    return p


def _apply(db: Database, p: Plan) -> list[tuple]:
    """Write the merge's rows on the parent; for undo_merge, each row's (table id, key there,
    row before, row after)."""
    conn = p.parent.conn
    if p.parent.world is not None:
        worldsql.begin_world_write(conn, "abort")
    with rows.as_data(p.parent):
        undo = _write_all(p)
    replica.check_keys(db, p.parent, p.writes, p.world.name, p.parent_name)  # merged result
    merged = [
        (o.change.t, key, o.change.theirs, o.result) for o, (_n, key, _b, _a) in zip(p.writes, undo)
    ]
    rows.reindex_fts(p.parent, merged)
    return undo


def _write_all(p: Plan) -> list[tuple]:
    """Each of the merge's rows, in the plan's order; a row whose unique value another row
    still holds (the world moved values between rows: row 1 takes row 2's, row 2 another)
    waits, and is tried again once the others are written, until none moves on."""
    done: dict[int, tuple] = {}
    waiting = list(enumerate(p.writes))
    writing = f"merging {p.world.name} into {p.parent_name}: writing rows"
    while waiting:
        clashed = []
        for i, o in progress.counted(writing, waiting):
            try:
                done[i] = _write(p, o, last=False)
            except _Clash:
                clashed.append((i, o))
        if len(clashed) == len(waiting):  # (no row moved on: the clash is real)
            for i, o in clashed:
                done[i] = _write(p, o, last=True)  # (the first one raises its rule)
            break
        waiting = clashed
    return [done[i] for i in range(len(p.writes))]


class _Clash(Exception):
    """A row's unique value is still another row's (it may be free after the rest)."""


def _write(p: Plan, o: Outcome, last: bool = True) -> tuple:
    """One row of the merge on the parent: (table id, key there, row before, row after)."""
    c = o.change
    try:
        # a row new to a table without a primary key takes a rowid of its own
        key = write_row(
            p.parent,
            c.n,
            c.t,
            c.key,
            o.result,
            c.t.key_kind == "rowid" and c.base is None,
            abort=True,
        )
    except apsw.SQLError as exc:  # (a column the parent renamed or dropped since the fork)
        if "no such column" not in str(exc):
            raise
        raise ChronosError(
            f"merging {p.world.name} into {p.parent_name}: {p.parent_name} changed the columns "
            f"of {c.table} since {p.world.name} was forked (SQLite: {exc}); nothing was "
            f"merged: rebase {p.world.name} first (REBASE WORLD {p.world.name}), then merge",
            errors.CONFLICT,
        ) from None
    except apsw.ConstraintError as exc:
        if not last and "UNIQUE" in str(exc):
            raise _Clash from None
        described = errors.from_sqlite(exc)
        raise ChronosError(
            f"merging {p.world.name} into {p.parent_name} would break a rule: "
            f"{described.message} at {c.where} {row_text(o.result)}; both sides "
            f"were valid alone, not together; nothing was merged",
            described.code,
            {"table": c.table, "id": c.id, "row": o.result},
        ) from None
    before = c.theirs if c.t.key_kind != "rowid" or key == c.key else None
    return (c.n, key, before, o.result)


def _record_merge(
    db: Database, p: Plan, conn: apsw.Connection, before: dict | None, undo: list[tuple]
) -> None:
    """The merge as events of both branches, and its rows as they were before, for undo."""
    rows = len(p.writes) + len(p.schema)
    parent = p.parent.world.id if p.parent.world is not None else 0
    detail: dict = {"from": p.world.name, "partial": p.partial, "deletes": p.deletes}
    if p.dropped_values:  # (deletes_per_hour counts them too)
        detail["dropped_values"] = p.dropped_values
    if before is not None:
        detail["seqs"] = events.ranges(before, events.positions(conn, db.tables()))
    db.record(conn, parent, "merge", rows, detail)
    event = conn.last_insert_rowid()
    db.record(conn, p.world.id, "merged", rows, {"into": p.parent_name, "partial": p.partial})
    conn.executemany(
        "insert into main._chronos_merge_rows values (?, ?, ?, ?, ?)",
        [
            (
                event,
                n,
                None if key is None else json.dumps(list(key), default=_blob),
                _json(row_before),
                _json(after),
            )
            for n, key, row_before, after in progress.counted(
                f"merging {p.world.name}: keeping the rows before, for undo_merge", undo
            )
        ],
    )


def _json(row: dict | None) -> str | None:
    return None if row is None else json.dumps(row, default=_blob)


def _blob(value: object) -> object:
    if isinstance(value, bytes):
        return blob_json(value)
    raise TypeError(f"can't keep {type(value).__name__} for undo")


def _combination_error(name: str, p: Plan | None, exc: apsw.ConstraintError) -> ChronosError:
    described = errors.from_sqlite(exc)
    into = p.parent_name if p else "its parent"
    return ChronosError(
        f"merging {name} into {into} would break a rule: {described.message}; both sides "
        f"were valid alone, not together; nothing was merged",
        described.code,
    )
