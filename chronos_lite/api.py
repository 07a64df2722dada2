"""The Python API: ``chronos_lite.open(folder)`` and ``chronos_lite.init(folder)``.

>>> db = chronos_lite.init("./shop")
>>> db.sql("create table users(id integer primary key, name text)")
>>> db.fork("task-1", meta={"task": "fix names"})
>>> db.sql("update users set name = 'Ada L.' where id = 1", branch="task-1")
>>> db.get("users", 1, branch="task-1")
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import apsw

from . import vtab
from .history import prune
from .merge import apply as merge_apply
from .merge import diff as merge_diff
from .merge import rebase as merge_rebase
from .operations import reviewing
from .operations.registry import REGISTRY, Args, Caller, Reply
from .operations.sql import run_sql
from .statements import sqlrun
from .storage import codec, lifecycle, rows
from .storage.db import Database
from .storage.folder import create
from .storage.worlds import World

if TYPE_CHECKING:
    from .statements import loading

T = TypeVar("T")


def _id(value: Any) -> str:
    """A method's ``id`` as the tools spell it: text as it is (``"7"``, ``"17,3"``, a JSON
    array), an integer as its digits, a list or tuple of the key's values (or one value of
    another type) as a JSON array of them."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return codec.json_id(list(value) if isinstance(value, list | tuple) else [value])


class Chronos(Database):
    """An open database folder, with the operations as methods."""

    def __init__(self, folder: str | os.PathLike) -> None:
        super().__init__(folder)
        self.keep_temp = True  # a program's connection: its TEMP objects last, as in sqlite3
        prune.prune_if_due(self)  # expired history goes, at most once an hour

    def connection_ready(self, conn: apsw.Connection) -> None:
        vtab.register(self, conn)  # chronos_worlds, chronos_diff('w'), chronos_conflicts('w')

    def _run(self, operation: str, args: dict[str, Any], body: Callable[[Args], T]) -> T:
        """One way in: the registry's checks for ``operation`` (its schema's validation, the
        rights, bounds, faults as their errors), then ``body``, the engine's call, whose
        objects the methods return (the registry's text and data: ``call``)."""
        given = {key: value for key, value in args.items() if value is not None}
        op = REGISTRY.get(operation)
        return REGISTRY.run(self, op, given, self._caller(), body)

    def _caller(self) -> Caller:
        """Who acts in a method's call: ``caller_name`` and ``caller_run`` (the owner unless
        set), whom history names."""
        return Caller(name=self.caller_name, run=self.caller_run)

    def sql(self, sql: str, *params: Any, branch: str = "main") -> sqlrun.SqlOutcome:
        """Run one or more statements as one call; ``$1, $2, ...`` take ``params``."""
        args = {"sql": sql, "params": list(params) or None, "branch": branch}
        return self._run(
            "sql", args, lambda a: run_sql(self, branch, sql, list(params), self._caller())
        )

    def query(self, sql: str, *params: Any, branch: str = "main") -> list[dict[str, Any]]:
        """The rows of the last statement's result, as dicts."""
        outcome = self.sql(sql, *params, branch=branch)
        last = outcome.results[-1]
        return [dict(zip(last.columns or [], row)) for row in last.rows]

    def get(self, table: str, id: Any, branch: str = "main") -> dict[str, Any] | None:
        """One row by its id (text as the tools take it, an int, or a list of the key's
        values); None if there is none."""
        args = {"table": table, "id": _id(id), "branch": branch}
        return self._run("get", args, lambda a: rows.get(self, branch, table, a["id"])[1])

    def put(self, table: str, id: Any, record: dict[str, Any], branch: str = "main") -> bool:
        """Create or replace a whole row; True if it was created."""
        args = {"table": table, "id": _id(id), "record": record, "branch": branch}
        return self._run("put", args, lambda a: rows.put(self, branch, table, a["id"], record))

    def insert(
        self,
        table: str,
        file: str | os.PathLike,
        *,
        pk: str | list[str] | None = None,
        upsert: bool = False,
        format: str | None = None,
        encoding: str | None = None,
        branch: str = "main",
    ) -> loading.Loaded:
        """Load a CSV, TSV, JSON or NDJSON file's rows into a table (created if missing, ``pk``
        its primary key); ``upsert``: insert or update by primary key. One transaction."""
        from .statements import loading  # (sqlite-utils, ~0.1 s to import: only to load a file)

        args = {
            "table": table,
            "file": str(file),
            "pk": [pk] if isinstance(pk, str) else pk,
            "upsert": upsert,
            "format": format,
            "encoding": encoding,
            "branch": branch,
        }
        return self._run(
            "insert",
            args,
            lambda a: loading.insert(self, branch, table, str(file), pk, upsert, format, encoding),
        )

    def delete(self, table: str, id: Any, branch: str = "main") -> None:
        args = {"table": table, "id": _id(id), "branch": branch}
        self._run("delete", args, lambda a: rows.delete(self, branch, table, a["id"]))

    def fork(
        self,
        name: str,
        source: str | None = None,
        meta: dict | None = None,
        owner: str | None = None,
    ) -> World:
        """Create a branch from main (or from ``source``, another branch; ``name@when``: as it
        was then). Instant: no rows are copied."""
        args = {"name": name, "from": source, "meta": meta}
        return self._run("fork", args, lambda a: lifecycle.fork(self, name, source, meta, owner))

    def set_meta(self, name: str, changes: dict) -> World:
        """Merge ``changes`` into a branch's notes; a None value removes a key."""
        args = {"branch": name, "meta": changes}
        return self._run("set_meta", args, lambda a: lifecycle.set_meta(self, name, changes))

    def discard(self, name: str, cascade: bool = False) -> list[World]:
        """Throw a branch (and with ``cascade`` the branches forked from it) away."""
        args = {"branch": name, "cascade": cascade}
        return self._run("discard", args, lambda a: lifecycle.discard(self, name, cascade))

    def branches(self) -> list[World]:
        return self.worlds()

    def diff(self, branch: str, to: str | None = None) -> merge_diff.Diff:
        """What changed on a branch since its fork (or between two branches)."""
        args = {"branch": branch, "to": to}
        if to:
            return self._run("diff", args, lambda a: merge_diff.compare(self, branch, to))
        return self._run("diff", args, lambda a: merge_diff.diff(self, branch))

    def merge(
        self,
        branch: str,
        *,
        resolve: str = "fail",
        by_columns: bool = False,
        rows: dict[str, Any] | None = None,
        only_tables: list[str] | None = None,
        only_keys: list[str] | None = None,
        into: str | None = None,
        version: int | None = None,
        target: int | None = None,
        confirm_deletes: int | None = None,
        confirm: bool = False,
    ) -> merge_apply.Plan:
        """Merge a branch into its parent (or ``into`` another branch); raises ChronosError
        (code 40001, the conflicts as ``data``) when rows both sides changed are unsettled.
        ``version``, ``target``, ``confirm_deletes`` and ``confirm`` as for the merge tool."""
        args = {
            "branch": branch,
            "resolve": resolve,
            "by_columns": by_columns,
            "rows": rows,
            "only_tables": only_tables,
            "only_keys": only_keys,
            "into": into,
            "version": version,
            "target": target,
            "confirm_deletes": confirm_deletes,
            "confirm": confirm,
        }
        opts = merge_apply.Options(resolve, by_columns, rows or {}, only_tables, only_keys, into)
        return self._run(
            "merge",
            args,
            lambda a: merge_apply.merge(
                self,
                branch,
                opts,
                version,
                confirm_deletes,
                target,
                confirm,
                reviewing.gate_for(self, branch, self._caller()),  # (as the merge tool's)
            ),
        )

    def rebase(
        self,
        branch: str,
        *,
        resolve: str = "fail",
        by_columns: bool = False,
        rows: dict[str, Any] | None = None,
    ) -> int:
        """Move a branch's fork point up to its parent now; the parent's rows it took in."""
        args = {"branch": branch, "resolve": resolve, "by_columns": by_columns, "rows": rows}
        opts = merge_apply.Options(resolve, by_columns, rows or {})
        return self._run("rebase", args, lambda a: merge_rebase.rebase(self, branch, opts))

    def call(self, operation: str, caller: Caller | None = None, **args: Any) -> Reply:
        """Any registry operation, exactly as the CLI and MCP run it (same checks, same text)."""
        return REGISTRY.call(self, operation, args, caller)


def open(folder: str | os.PathLike) -> Chronos:
    """Open a database folder made by ``chronos init``."""
    return Chronos(folder)


def init(folder: str | os.PathLike, from_file: str | os.PathLike | None = None) -> Chronos:
    """Create a database folder; with ``from_file`` an existing SQLite file becomes main."""
    create(folder, from_file)
    return Chronos(folder)
