"""undo_merge: put back, in the parent, every row a branch's latest merge changed.

A merge keeps each row it wrote as the parent had it before and after (``_chronos_merge_rows``).
Undoing writes the before rows back, as an ordinary write, where the parent still holds the
after rows; a row changed since is named rather than overwritten (or left alone with
skip_changed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import errors, hints
from ..errors import ChronosError
from ..render import blob_hex
from ..sqltext import quote_ident
from ..storage import events, moments, worlds
from ..storage.codec import row_key
from ..storage.db import Database
from ..storage.fetch import all_rows, one_row
from ..storage.rows import base_row, view_row
from ..storage.schema.catalog import TableInfo
from ..storage.shadow import DEAD, OP, SEQ, WORLD, history_table, overlay_table, world_history_table
from .restore import rewriting


@dataclass
class Undone:
    parent: str
    rows: int = 0
    skipped: list[str] = field(default_factory=list)


def undo_merge(db: Database, branch: str, skip_changed: bool) -> Undone:
    conn = db.main.conn
    merge = conn.execute(
        "select id, world from _chronos_events where kind = 'merge' "
        "and json_extract(detail, '$.from') = ? order by id desc limit 1",
        (branch,),
    ).fetchone()
    if merge is None:
        raise ChronosError(
            f"no merge of {branch} to undo (history <branch> lists merges)", errors.NOT_FOUND
        )
    event, world_id = merge
    if conn.execute(
        "select 1 from _chronos_events where kind = 'undo merge' "
        "and json_extract(detail, '$.event') = ?",
        (event,),
    ).fetchone():
        raise ChronosError(f"the latest merge of {branch} was undone already", errors.IN_USE)
    parent = _parent_name(db, world_id)
    session = db.session(parent)
    tables = {n: (name, t) for name, (n, t) in db.tables_for(session.world).items()}
    done = Undone(parent)
    try:
        with rewriting(db, session, "undo merge", {"from": branch, "event": event}) as rewrite:
            wconn = rewrite.conn
            todo = []
            for n, key_text, row_before, row_after in all_rows(
                wconn.execute(
                    "select table_id, key, before, after from main._chronos_merge_rows "
                    "where event = ?",
                    (event,),
                )
            ):
                if n not in tables or key_text is None:
                    done.skipped.append(f"{tables.get(n, ('a dropped table',))[0]}/(a new row)")
                    continue
                name, t = tables[n]
                key = tuple(_value(v) for v in json.loads(key_text))
                if _given(t, view_row(session, n, t, key)) != _given(t, _row(row_after)):
                    done.skipped.append(row_key(t, key))
                    continue
                todo.append((n, t, key, _row(row_after), _row(row_before)))
            if done.skipped and not skip_changed:
                shown = ", ".join(done.skipped[:20])
                raise ChronosError(
                    f"undoing the merge of {branch} into {parent}: {len(done.skipped)} row"
                    f"{'s' if len(done.skipped) != 1 else ''} changed since the merge "
                    f"({shown}); nothing was changed. Pass {hints.arg('skip_changed')} to leave "
                    f"them as they are and undo the rest",
                    errors.CONFLICT,
                    {"changed": done.skipped},
                )
            for n, t, key, now, row in todo:
                rewrite.put(session, n, t, key, now, row, f"undoing the merge of {branch}")
            done.rows = rewrite.written
    finally:
        db.end_call(session)
    return done


def _parent_name(db: Database, world_id: int) -> str:
    if world_id == 0:
        return "main"
    row = worlds.name_of(db.main.conn, world_id)
    if row is None or row[1] != "open":
        raise ChronosError(
            "the branch that merge went into is gone (merged or discarded): nothing to undo in",
            errors.NOT_FOUND,
        )
    return row[0]


def _row(text: str | None) -> dict | None:
    if text is None:
        return None
    return {k: _value(v) for k, v in json.loads(text).items()}


def _value(kept: Any) -> Any:
    """A value as a merge kept it (``merge.apply._json``: a blob as {"$blob": hex})."""
    hexed = blob_hex(kept)
    return kept if hexed is None else bytes.fromhex(hexed)


# --- UNDO AGENT --------------------------------------------------------------------------------


@dataclass
class AgentUndone:
    rows: int = 0
    named: list[str] = field(default_factory=list)  # changed since by someone else: left alone
    branches: list[str] = field(default_factory=list)


def undo_agent(
    db: Database,
    agent: str,
    since_text: str,
    run: str | None,
    main_refusal: ChronosError | None = None,
) -> AgentUndone:
    """Write back, on main and on every open world, the rows as they were before ``agent``
    (with ``run``) first changed them since the moment; rows someone else changed after the
    agent are named and left alone. ``main_refusal``: raised, before anything is written, if
    the undo would write main (an agent that may not rewrite main)."""
    if agent == events.APP:
        raise ChronosError(
            "writes apps made directly to main can't be told apart per app: restore main to a "
            "moment instead",
            errors.BAD_ARGUMENT,
        )
    since = moments.checked_moment(db, since_text)
    query = (
        "select world, detail from _chronos_events where actor = ? and time >= ? "
        "and kind in ('write', 'schema', 'restore', 'rollback', 'undo merge', 'merge')"
    )
    args: list[Any] = [agent, since]
    if run is not None:
        query += " and run = ?"
        args.append(run)
    spans: dict[int, dict[str, list]] = {}
    for world, detail in all_rows(db.main.conn.execute(query, args)):
        d = json.loads(detail)
        mine = spans.setdefault(world, {"seqs": [], "clock": []})
        for n, (lo, hi) in d.get("seqs", {}).items():
            mine["seqs"].append((int(n), lo, hi))
        if "clock" in d:
            mine["clock"].append(tuple(d["clock"]))
    if main_refusal is not None and spans.get(0, {}).get("seqs"):
        raise main_refusal
    done = AgentUndone()
    for world_id, mine in spans.items():
        if world_id == 0 and mine["seqs"]:
            _undo_on(db, "main", done, agent, since_text, _main_targets(db, mine["seqs"]))
        elif world_id and mine["clock"]:
            name = _open_world(db, world_id)
            if name is not None:
                _undo_on(
                    db, name, done, agent, since_text, _world_targets(db, name, world_id, mine)
                )
    return done


def _main_targets(db: Database, spans: list[tuple[int, int, int]]) -> dict:
    """Per (table id, key): the row before the agent's first change, or a name if someone
    changed it after the agent's last."""
    conn = db.main.conn
    by_table: dict[int, list[tuple[int, int]]] = {}
    for n, lo, hi in spans:
        by_table.setdefault(n, []).append((lo, hi))
    tables = {n: t for n, t in db.tables().values()}
    out: dict = {}
    for n, ranges in by_table.items():
        t = tables.get(n)
        if t is None:
            continue
        cols = ", ".join(quote_ident(c) for c in t.column_names)
        keys = [quote_ident(c) for c in t.key_cols]
        within = " or ".join(f"({SEQ} between {lo} and {hi})" for lo, hi in ranges)
        first: dict[tuple, tuple] = {}
        last: dict[tuple, int] = {}
        for rec in conn.execute(
            f"select {SEQ}, {OP}, {', '.join(keys)}, {cols} from main.{history_table(n)} "
            f"where {within} order by {SEQ}"
        ):
            key = tuple(rec[2 : 2 + len(keys)])
            first.setdefault(key, rec)
            last[key] = rec[0]
        for key, rec in first.items():
            later = conn.execute(
                f"select {SEQ} from main.{history_table(n)} where "
                + " and ".join(f"{k} = ?" for k in keys)
                + f" and {SEQ} > ? and not ({within}) limit 1",
                (*key, last[key]),
            ).fetchone()
            row = dict(zip(t.column_names, rec[2 + len(keys) :])) if rec[1] == 1 else None
            out[(n, key)] = ("changed", None) if later else ("put", row)
    return out


def _world_targets(db: Database, name: str, world_id: int, mine: dict) -> dict:
    """``name``: the open world ``world_id``'s."""
    conn = db.main.conn
    world = db.world(name)
    within = " or ".join(f"({SEQ} between {lo} and {hi})" for lo, hi in mine["clock"])
    out: dict = {}
    for _name, (n, t) in db.tables_for(world).items():
        cols = [c for c in t.column_names if c not in t.key_cols]
        keys = [t.col(c) for c in t.key_cols]
        wh = f"main.{world_history_table(n)}"
        seen: set = set()
        for rec in conn.execute(
            f"select {SEQ}, {OP}, {DEAD}, {', '.join(keys)}"
            + "".join(f", {t.col(c)}" for c in cols)
            + f" from {wh} where {WORLD} = ? and ({within}) order by {SEQ}, rowid",
            (world_id,),
        ):
            key = tuple(rec[3 : 3 + len(keys)])
            if key in seen:
                continue
            seen.add(key)
            mine_last = one_row(
                conn.execute(
                    f"select max({SEQ}) from {wh} where {WORLD} = ? and "
                    + " and ".join(f"{k} = ?" for k in keys)
                    + f" and ({within})",
                    (world_id, *key),
                )
            )[0]
            entry = conn.execute(
                f"select {SEQ} from main.{overlay_table(n)} where {WORLD} = ? and "
                + " and ".join(f"{k} = ?" for k in keys),
                (world_id, *key),
            ).fetchone()
            if entry is not None and entry[0] > mine_last:
                out[(n, key)] = ("changed", None)
                continue
            if rec[1] == 0:  # no entry before: the row the world inherited
                row = base_row(conn, n, t, world, key)[0]
            elif rec[2]:
                row = None
            else:
                row = dict(zip(t.key_cols, key)) | dict(zip(cols, rec[3 + len(keys) :]))
                row = {c: row.get(c) for c in t.column_names}
            out[(n, key)] = ("put", row)
    return out


def _open_world(db: Database, world_id: int) -> str | None:
    row = worlds.name_of(db.main.conn, world_id)
    return row[0] if row and row[1] == "open" else None


def _undo_on(
    db: Database, branch: str, done: AgentUndone, agent: str, since: str, targets: dict
) -> None:
    session = db.session(branch)
    tables = {n: t for n, t in db.tables_for(session.world).values()}
    try:
        with rewriting(db, session, "undo agent", {"agent": agent, "since": since}) as rewrite:
            for (n, key), (what, row) in targets.items():
                t = tables.get(n)
                if t is None:
                    continue
                if what == "changed":
                    done.named.append(f"{branch}:{row_key(t, key)}")
                elif (now := view_row(session, n, t, key)) != row:
                    rewrite.put(session, n, t, key, now, row, f"undoing {agent}'s changes")
        done.rows += rewrite.written
        done.branches.append(branch)
    finally:
        db.end_call(session)


def _given(t: TableInfo, row: dict | None) -> dict | None:
    """A row's values but its generated columns' (SQLite computes those from the rest)."""
    return None if row is None else {k: v for k, v in row.items() if k not in t.generated}
