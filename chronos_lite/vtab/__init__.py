"""Chronos' system tables in SQL, as table-valued functions in the style of Dolt's.

    select * from chronos_worlds;
    select * from chronos_diff('task-1');
    select * from chronos_conflicts('task-1');
    select * from chronos_history('main');    -- what happened, newest first (time: Unix seconds)

They are eponymous virtual tables registered on every connection chronos opens, so they work
from any branch and in any ``sql`` call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, cast

import apsw

from ..render import row_json
from ..storage import events
from ..storage.branchref import BranchRef
from ..storage.db import Database


def _json(row: dict | None) -> str | None:
    """A row as JSON text for a system table's column; NULL for no row."""
    return None if row is None else row_json(row)


class _Function:
    """``fn`` as a read-only eponymous table: its rows are tuples of ``columns``, its
    parameters hidden columns given in parentheses (``chronos_diff('w')``). What
    ``apsw.ext.make_virtual_module`` makes of it, without importing apsw.ext (which costs a
    start of chronos more than every other import of a connection)."""

    def __init__(self, fn: Callable[..., Iterator[tuple]], columns: tuple[str, ...]) -> None:
        self.fn = fn
        self.columns = columns
        code = fn.__code__
        self.parameters = code.co_varnames[: code.co_argcount]
        names = [*(f'"{c}"' for c in columns), *(f'"{p}" HIDDEN' for p in self.parameters)]
        self.schema = f"CREATE TABLE ignored({', '.join(names)})"

    def Create(self, *_: Any) -> tuple[str, _Table]:
        return self.schema, _Table(self)

    Connect = Create


class _Table:
    def __init__(self, function: _Function) -> None:
        self.function = function

    def BestIndexObject(self, o: apsw.IndexInfo) -> bool:
        """The parameters given, equal to a value, in the order SQLite passes them to
        Filter (named in idxStr); any other constraint on a parameter: no plan."""
        given: list[str] = []
        first = len(self.function.columns)
        for c in range(o.nConstraint):
            column = o.get_aConstraint_iColumn(c)
            if column < first or not o.get_aConstraint_usable(c):
                continue
            name = self.function.parameters[column - first]
            if o.get_aConstraint_op(c) != apsw.SQLITE_INDEX_CONSTRAINT_EQ or name in given:
                return False
            given.append(name)
            o.set_aConstraintUsage_argvIndex(c, len(given))
            o.set_aConstraintUsage_omit(c, True)
        o.idxStr = ",".join(given)
        o.estimatedRows = 2147483647  # (the planner should read it once)
        return True

    def Open(self) -> _Cursor:
        return _Cursor(self.function)

    def Disconnect(self) -> None:
        pass

    Destroy = Disconnect


class _Cursor:
    def __init__(self, function: _Function) -> None:
        self.function = function
        self.rows: Iterator[tuple] | None = None
        self.row: tuple = ()
        self.hidden: list[apsw.SQLiteValue] = []
        self.rowid = 0

    def Filter(self, _: int, names: str | None, values: tuple[apsw.SQLiteValue, ...]) -> None:
        args = dict(zip(names.split(",") if names else [], values, strict=True))
        self.Close()
        self.rows = iter(self.function.fn(**args))
        self.hidden = [args.get(p) for p in self.function.parameters]
        self.rowid = 0
        self.Next()

    def Eof(self) -> bool:
        return self.rows is None

    def Column(self, which: int) -> apsw.SQLiteValue:
        n = len(self.function.columns)
        return self.row[which] if which < n else self.hidden[which - n]

    def Next(self) -> None:
        try:
            self.row = next(self.rows)  # type: ignore[arg-type]
            self.rowid += 1
        except StopIteration:
            self.rows = None

    def Rowid(self) -> int:
        return self.rowid

    def Close(self) -> None:
        rows, self.rows = self.rows, None
        if rows is not None and hasattr(rows, "close"):
            rows.close()


def _register(
    conn: apsw.Connection, fn: Callable[..., Iterator[tuple]], columns: tuple[str, ...]
) -> None:
    """``fn`` as an eponymous table-valued function with those columns."""
    module = cast("apsw.VTModule", _Function(fn, columns))
    conn.create_module(
        fn.__name__, module, use_bestindex_object=True, eponymous_only=True, read_only=True
    )


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
        from ..merge import diff as merge_diff  # (the merge modules when a query reads them)

        kinds = {"insert": "added", "update": "modified", "delete": "removed"}
        for c in merge_diff.diff(db, merge_diff.forked(db, BranchRef.parse(branch))).ordered():
            yield (c.table, c.id, kinds[c.kind], _json(c.base), _json(c.ours), json.dumps(c.fields))

    _register(conn, chronos_diff, ("table_name", "id", "diff_type", "from_row", "to_row", "fields"))

    def chronos_conflicts(branch: str) -> Iterator[tuple]:
        from ..merge import apply as merge_apply
        from ..merge.request import Options

        p = merge_apply.plan(db, db.world(branch), Options())
        for o in p.conflicts:
            c = o.change
            yield (c.table, c.id, o.detail, _json(c.base), _json(c.ours), _json(c.theirs))

    _register(conn, chronos_conflicts, ("table_name", "id", "detail", "base", "ours", "theirs"))

    def chronos_history(branch: str) -> Iterator[tuple]:
        for e in events.listing(
            db.main.conn, events.branch_id(db.main.conn, branch, db.world), db.tables(), 1000
        ):
            detail = json.dumps(e["detail"], ensure_ascii=False, default=str)
            yield (e["time"], e["event"], e["by"], e["run"], e["rows"], detail)

    _register(conn, chronos_history, ("time", "event", "actor", "run", "rows", "detail"))
