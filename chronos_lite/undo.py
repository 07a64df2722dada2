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

from . import errors, events
from .db import Database
from .errors import ChronosError
from .merge.changes import view_row
from .restore import _write_back
from .rows import format_id


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
        with db.write(session.conn) as wconn:
            if session.world is None:
                wconn.execute("pragma defer_foreign_keys = on")
                before = events.positions(wconn, db.tables())
            else:
                db.begin_world_write(wconn, "abort")
            todo = []
            for n, key_text, row_before, row_after in wconn.execute(
                "select table_id, key, before, after from main._chronos_merge_rows where event = ?",
                (event,),
            ).fetchall():
                if n not in tables or key_text is None:
                    done.skipped.append(f"{tables.get(n, ('a dropped table',))[0]}/(a new row)")
                    continue
                name, t = tables[n]
                key = tuple(json.loads(key_text))
                if view_row(session, n, t, key) != _row(row_after):
                    done.skipped.append(f"{name}/{format_id(t, list(key))}")
                    continue
                todo.append((n, t, key, _row(row_before)))
            if done.skipped and not skip_changed:
                shown = ", ".join(done.skipped[:20])
                raise ChronosError(
                    f"undoing the merge of {branch} into {parent}: {len(done.skipped)} row"
                    f"{'s' if len(done.skipped) != 1 else ''} changed since the merge "
                    f"({shown}); nothing was changed. Pass skip_changed=true to leave them as "
                    f"they are and undo the rest",
                    errors.CONFLICT,
                    {"changed": done.skipped},
                )
            for n, t, key, row in todo:
                _write_back(session, n, t, key, row)
            done.rows = len(todo)
            if session.world is not None and todo:
                db.bump_version(wconn, session.world)
            detail: dict[str, Any] = {"from": branch, "event": event}
            if session.world is None:
                detail["seqs"] = events.ranges(before, events.positions(wconn, db.tables()))
            db.record(wconn, world_id, "undo merge", done.rows, detail)
    finally:
        db.end_call(session)
    return done


def _parent_name(db: Database, world_id: int) -> str:
    if world_id == 0:
        return "main"
    row = db.main.conn.execute(
        "select name, state from _chronos_worlds where id = ?", (world_id,)
    ).fetchone()
    if row is None or row[1] != "open":
        raise ChronosError(
            "the branch that merge went into is gone (merged or discarded): nothing to undo in",
            errors.NOT_FOUND,
        )
    return row[0]


def _row(text: str | None) -> dict | None:
    if text is None:
        return None
    return {
        k: bytes.fromhex(v["$blob"]) if isinstance(v, dict) and "$blob" in v else v
        for k, v in json.loads(text).items()
    }
