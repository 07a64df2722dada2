"""Chronos' system tables in SQL, as table-valued functions in the style of Dolt's.

    select * from chronos_worlds;
    select * from chronos_diff('task-1');
    select * from chronos_conflicts('task-1');
    select * from chronos_history('main');    -- what happened, newest first (time: Unix seconds)

They are eponymous virtual tables (``apsw.ext.make_virtual_module``) registered on every
connection chronos opens, so they work from any branch and in any ``sql`` call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import cast

import apsw
import apsw.ext

from ..merge import apply as merge_apply
from ..merge import diff as merge_diff
from ..merge.request import Options
from ..render import row_json
from ..storage import events
from ..storage.branchref import BranchRef
from ..storage.db import Database


def _json(row: dict | None) -> str | None:
    """A row as JSON text for a system table's column; NULL for no row."""
    return None if row is None else row_json(row)


def _register(
    conn: apsw.Connection, fn: Callable[..., Iterator[tuple]], columns: tuple[str, ...]
) -> None:
    """``fn`` as an eponymous table-valued function with those columns, read by index.

    apsw.ext reads them as attributes of the function, which mypy can't type (and its protocol
    says ``columns: tuple[str]``, one name).
    """
    fn.columns = columns  # type: ignore[attr-defined]
    fn.column_access = apsw.ext.VTColumnAccess.By_Index  # type: ignore[attr-defined]
    module = cast(apsw.ext.VirtualModuleCallable, fn)
    apsw.ext.make_virtual_module(conn, fn.__name__, module, eponymous_only=True)


def register(db: Database, conn: apsw.Connection) -> None:
    def chronos_worlds() -> Iterator[tuple]:
        for w in db.worlds():
            yield (
                w.name,
                w.wid,
                w.parent,
                w.version,
                w.owner,
                json.dumps(w.meta, ensure_ascii=False),
                w.created,
            )

    _register(
        conn, chronos_worlds, ("name", "world_id", "parent", "version", "owner", "meta", "created")
    )

    def chronos_diff(branch: str) -> Iterator[tuple]:
        kinds = {"insert": "added", "update": "modified", "delete": "removed"}
        for c in merge_diff.diff(db, merge_diff.forked(db, BranchRef.parse(branch))).ordered():
            yield (c.table, c.id, kinds[c.kind], _json(c.base), _json(c.ours), json.dumps(c.fields))

    _register(conn, chronos_diff, ("table_name", "id", "diff_type", "from_row", "to_row", "fields"))

    def chronos_conflicts(branch: str) -> Iterator[tuple]:
        p = merge_apply.plan(db, db.world(branch), Options())
        for o in p.conflicts:
            c = o.change
            yield (c.table, c.id, o.detail, _json(c.base), _json(c.ours), _json(c.theirs))

    _register(conn, chronos_conflicts, ("table_name", "id", "detail", "base", "ours", "theirs"))

    def chronos_history(branch: str) -> Iterator[tuple]:
        for e in events.listing(db.main.conn, events.branch_id(db, branch), db.tables(), 1000):
            detail = json.dumps(e["detail"], ensure_ascii=False, default=str)
            yield (e["time"], e["event"], e["by"], e["run"], e["rows"], detail)

    _register(conn, chronos_history, ("time", "event", "actor", "run", "rows", "detail"))
