"""The Python API: ``chronos_lite.open(folder)`` and ``chronos_lite.init(folder)``.

>>> db = chronos_lite.init("./shop")
>>> db.sql("create table users(id integer primary key, name text)")
>>> db.fork("task-1", meta={"task": "fix names"})
>>> db.sql("update users set name = 'Ada L.' where id = 1", branch="task-1")
>>> db.get("users", 1, branch="task-1")
"""

from __future__ import annotations

import os
from typing import Any

import apsw

from . import loading, prune, rows, sqlrun, vtab
from .db import Database, World
from .folder import create
from .merge import apply as merge_apply
from .merge import diff as merge_diff
from .merge import rebase as merge_rebase
from .registry import REGISTRY, Caller, Reply


class Chronos(Database):
    """An open database folder, with the operations as methods."""

    def __init__(self, folder: str | os.PathLike) -> None:
        super().__init__(folder)
        prune.prune_if_due(self)  # expired history goes, at most once an hour

    def connection_ready(self, conn: apsw.Connection) -> None:
        vtab.register(self, conn)  # chronos_worlds, chronos_diff('w'), chronos_conflicts('w')

    def sql(self, sql: str, *params: Any, branch: str = "main") -> sqlrun.SqlOutcome:
        """Run one or more statements as one call; ``$1, $2, ...`` take ``params``."""
        return sqlrun.run(self, branch, sql, list(params))

    def query(self, sql: str, *params: Any, branch: str = "main") -> list[dict[str, Any]]:
        """The rows of the last statement's result, as dicts."""
        outcome = self.sql(sql, *params, branch=branch)
        last = outcome.results[-1]
        return [dict(zip(last.columns or [], row)) for row in last.rows]

    def get(self, table: str, id: Any, branch: str = "main") -> dict[str, Any] | None:
        return rows.get(self, branch, table, str(id))[1]

    def put(self, table: str, id: Any, record: dict[str, Any], branch: str = "main") -> bool:
        """Create or replace a whole row; True if it was created."""
        return rows.put(self, branch, table, str(id), record)

    def insert(
        self,
        table: str,
        file: str | os.PathLike,
        *,
        pk: str | list[str] | None = None,
        upsert: bool = False,
        format: str | None = None,  # noqa: A002 - the option's name
        encoding: str | None = None,
        branch: str = "main",
    ) -> loading.Loaded:
        """Load a CSV, TSV, JSON or NDJSON file's rows into a table (created if missing, ``pk``
        its primary key); ``upsert``: insert or update by primary key. One transaction."""
        return loading.insert(self, branch, table, str(file), pk, upsert, format, encoding)

    def delete(self, table: str, id: Any, branch: str = "main") -> None:
        rows.delete(self, branch, table, str(id))

    def branches(self) -> list[World]:
        return self.worlds()

    def diff(self, branch: str, to: str | None = None) -> merge_diff.Diff:
        """What changed on a branch since its fork (or between two branches)."""
        return merge_diff.compare(self, branch, to) if to else merge_diff.diff(self, branch)

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
        opts = merge_apply.Options(resolve, by_columns, rows or {}, only_tables, only_keys, into)
        return merge_apply.merge(self, branch, opts, version, confirm_deletes, target, confirm)

    def rebase(
        self,
        branch: str,
        *,
        resolve: str = "fail",
        by_columns: bool = False,
        rows: dict[str, Any] | None = None,
    ) -> int:
        """Move a branch's fork point up to its parent now; the parent's rows it took in."""
        return merge_rebase.rebase(
            self, branch, merge_apply.Options(resolve, by_columns, rows or {})
        )

    def call(self, operation: str, caller: Caller | None = None, **args: Any) -> Reply:
        """Any registry operation, exactly as the CLI and MCP run it (same checks, same text)."""
        return REGISTRY.call(self, operation, args, caller)


def open(folder: str | os.PathLike) -> Chronos:  # noqa: A001 - the natural name
    """Open a database folder made by ``chronos init``."""
    return Chronos(folder)


def init(folder: str | os.PathLike, from_file: str | os.PathLike | None = None) -> Chronos:
    """Create a database folder; with ``from_file`` an existing SQLite file becomes main."""
    create(folder, from_file)
    return Chronos(folder)
