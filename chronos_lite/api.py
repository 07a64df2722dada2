"""The Python API: ``chronos_lite.open(folder)`` and ``chronos_lite.init(folder)``.

>>> db = chronos_lite.init("./shop")
>>> db.sql("create table users(id integer primary key, name text)")
>>> db.fork("task-1", meta={"task": "fix names"})
>>> db.sql("update users set name = 'Ada L.' where id = 1", branch="task-1")
>>> db.get("users", 1, branch="task-1")
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import BAD_ARGUMENT, ChronosError
from .opening import open_folder
from .operations.data import NoRow
from .operations.registry import REGISTRY, Caller, Reply
from .statements import sources
from .storage import codec
from .storage.folder import create
from .storage.worlds import World

if TYPE_CHECKING:
    from .merge import apply as merge_apply
    from .merge import diff as merge_diff
    from .search.find import Found
    from .statements import loading, simulation, sqlrun


def _id(value: Any) -> str:
    """A method's ``id`` as the tools spell it: text as it is (``"7"``, ``"17,3"``, a JSON
    array), an integer as its digits, a list or tuple of the key's values (or one value of
    another type) as a JSON array of them."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return codec.json_id(list(value) if isinstance(value, list | tuple) else [value])


@contextmanager
def _rows_file(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Rows given as dicts, one JSON object a line in a temporary file (what insert loads):
    a row that isn't a dict, or a value JSON can't hold, is refused by its number."""
    with tempfile.TemporaryDirectory(prefix="chronos-rows-") as folder:
        path = Path(folder, "rows.ndjson")
        with path.open("w", encoding="utf-8") as out:  # (this module's open is chronos')
            for n, row in enumerate(rows, start=1):
                if not isinstance(row, Mapping):
                    raise ChronosError(
                        f"row {n} isn't a dict ({type(row).__name__} {row!r:.40}): give insert "
                        "a file's path, or the rows as dicts ({column: value})",
                        BAD_ARGUMENT,
                    )
                try:
                    out.write(json.dumps(dict(row), ensure_ascii=False, allow_nan=False) + "\n")
                except (TypeError, ValueError) as exc:
                    raise ChronosError(
                        f"row {n}: {exc} (insert's rows hold JSON's values: text, numbers, "
                        "true/false, None; for a BLOB use sql with a parameter)",
                        BAD_ARGUMENT,
                    ) from None
        yield str(path)


class Chronos:
    """An open database folder, with the operations as methods.

    Each method is the operation's own handler, reached through the registry as every front
    end reaches it; ``database`` is the storage underneath (connections on branches, the
    schema), for a program that needs SQLite's own connection."""

    def __init__(self, folder: str | os.PathLike, caller: Caller | None = None) -> None:
        # (a program's connection: its TEMP objects last, as in sqlite3)
        self.database = open_folder(folder, keep_temp=True)
        self.caller = caller or Caller()  # who acts in its calls: the owner unless given

    @property
    def folder(self) -> Path:
        return self.database.folder

    def close(self) -> None:
        self.database.close()

    def interrupt(self) -> None:
        """Stop the call running now (safe from another thread): it fails, nothing changed."""
        self.database.interrupt()

    def __enter__(self) -> Chronos:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _value(self, operation: str, caller: Caller | None = None, **args: Any) -> Any:
        """The operation's own handler, through the registry as every front end reaches it
        (its schema's validation, the rights, bounds, faults as their errors), for its
        engine object: the reply's value (its text and data: ``call``)."""
        given = {key: value for key, value in args.items() if value is not None}
        reply = REGISTRY.call(self.database, operation, given, caller or self.caller, render=False)
        return reply.value

    def sql(self, sql: str, *params: Any, branch: str = "main") -> sqlrun.SqlOutcome:
        """Run one or more statements as one call; ``$1, $2, ...`` (and ``?``) take ``params``
        by position; one dict binds ``:name``, ``@name``, ``$name`` by name, as sqlite3 does."""
        given: list | dict | None = list(params) or None
        if len(params) == 1 and isinstance(params[0], dict):
            given = params[0]
        return self._value("sql", sql=sql, params=given, branch=branch)

    def query(self, sql: str, *params: Any, branch: str = "main") -> list[dict[str, Any]]:
        """The rows of the last statement's result, as dicts."""
        outcome = self.sql(sql, *params, branch=branch)
        last = outcome.results[-1]
        return [dict(zip(last.columns or [], row)) for row in last.rows]

    def find(
        self,
        table: str,
        where: dict[str, Any] | None = None,
        limit: int = 20,
        offset: int = 0,
        branch: str = "main",
        text: str | None = None,
        vector: list[float] | None = None,
        vector_field: str | None = None,
        ef: int = 0,
    ) -> Found:
        """The rows whose fields hold ``where``'s values: ``.matches`` counted, ``.rows`` a
        page of them (``limit`` from ``offset``): in key order, or best first by ``text``
        (BM25) and/or ``vector`` (dot product with ``vector_field``'s vectors), each row's
        ``.scores`` beside it."""
        given: dict[str, Any] = {"table": table, "limit": limit, "offset": offset, "ef": ef}
        optional = {"where": where, "text": text, "vector": vector, "vector_field": vector_field}
        given.update({name: value for name, value in optional.items() if value is not None})
        return self._value("find", **given, branch=branch)

    def get(self, table: str, id: Any, branch: str = "main") -> dict[str, Any] | None:
        """One row by its id (text as the tools take it, an int, or a list of the key's
        values); None if there is none."""
        try:
            return self._value("get", table=table, id=_id(id), branch=branch)
        except NoRow:
            return None

    def put(self, table: str, id: Any, record: dict[str, Any], branch: str = "main") -> bool:
        """Create or replace a whole row; True if it was created."""
        return self._value("put", table=table, id=_id(id), record=record, branch=branch)

    def insert(
        self,
        table: str,
        file: str | os.PathLike | Iterable[Mapping[str, Any]],
        *,
        pk: str | list[str] | None = None,
        upsert: bool = False,
        format: str | None = None,
        encoding: str | None = None,
        branch: str = "main",
    ) -> loading.Loaded:
        """Load a CSV, TSV, JSON or NDJSON file's rows into a table (created if missing, ``pk``
        its primary key); ``upsert``: insert or update by primary key. One transaction.
        ``file`` may be the rows themselves, dicts as sqlite-utils' ``insert_all`` takes them
        (loaded as that file's JSON would be)."""
        if isinstance(file, str | os.PathLike):
            return self._value(
                "insert",
                table=table,
                file=str(file),
                pk=[pk] if isinstance(pk, str) else pk,
                upsert=upsert,
                format=format,
                encoding=encoding,
                branch=branch,
            )
        with _rows_file(file) as path, sources.named(path, "the list of rows"):
            return self.insert(table, path, pk=pk, upsert=upsert, format="ndjson", branch=branch)

    def delete(self, table: str, id: Any, branch: str = "main") -> None:
        self._value("delete", table=table, id=_id(id), branch=branch)

    def fork(
        self,
        name: str,
        source: str | None = None,
        meta: dict | None = None,
        owner: str | None = None,
    ) -> World:
        """Create a branch from main (or from ``source``, another branch; ``name@when``: as it
        was then). Instant: no rows are copied. ``owner``: whom the branch is recorded as
        forked by (the caller's name unless given)."""
        caller = self.caller if owner is None else dataclasses.replace(self.caller, name=owner)
        return self._value("fork", caller, name=name, meta=meta, **{"from": source})

    def set_meta(self, name: str, changes: dict) -> World:
        """Merge ``changes`` into a branch's notes; a None value removes a key."""
        return self._value("set_meta", branch=name, meta=changes)

    def discard(self, name: str, cascade: bool = False) -> list[World]:
        """Throw a branch (and with ``cascade`` the branches forked from it) away."""
        return self._value("discard", branch=name, cascade=cascade)

    def branches(self) -> list[World]:
        """The open worlds (main is not one)."""
        return self._value("branches")

    def world(self, name: str) -> World:
        """One open branch, as it is now (a World is a snapshot: ask again for a later
        version); ChronosError (P0002) if there is none."""
        for world in self.branches():
            if world.name == name:
                return world
        return self.database.world(name)  # (its refusal names the branches there are)

    def as_agent(self, name: str) -> Caller:
        """The agent ``name`` a person made, to act as in ``call``: only its rights, within its
        quotas, audited (an unknown, disabled or dropped agent is refused)."""
        return Caller.for_agent(self.database, name)

    def diff(self, branch: str, to: str | None = None) -> merge_diff.Diff:
        """What changed on a branch since its fork (or between two branches)."""
        return self._value("diff", branch=branch, to=to)

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
        return self._value(
            "merge",
            branch=branch,
            resolve=resolve,
            by_columns=by_columns,
            rows=rows,
            only_tables=only_tables,
            only_keys=only_keys,
            into=into,
            version=version,
            target=target,
            confirm_deletes=confirm_deletes,
            confirm=confirm,
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
        return self._value(
            "rebase", branch=branch, resolve=resolve, by_columns=by_columns, rows=rows
        )

    def simulate(
        self,
        worlds: int,
        prefix: str,
        script: str,
        score: str,
        *,
        source: str = "main",
        keep: int | str = "all",
        order: str = "desc",
        seed: int = 0,
        threads: int = 0,
    ) -> simulation.Simulation:
        """Fork ``worlds`` worlds from ``source`` at one moment, run ``script`` in each
        (``$1`` its index, ``$2`` its seed; ``random()`` seeded per world), score each with
        ``score`` and keep the best ``keep`` (or all) as ``<prefix>_<i>``; the rest are
        discarded. The outcomes best first, the failed last."""
        given: dict[str, Any] = {"worlds": worlds, "prefix": prefix, "script": script}
        given.update(score=score, keep=keep, order=order, seed=seed, threads=threads)
        given["from"] = source
        return self._value("simulate", **given)

    def replay(self, world: str, keep_as: str | None = None) -> simulation.Replay:
        """Make a simulated world again from its recorded inputs; whether it comes out
        identical (``.identical``), and with ``keep_as`` the replay kept under that name."""
        given: dict[str, Any] = {"world": world, "as": keep_as}
        return self._value("replay", **given)

    def backup(self, to: str | os.PathLike, replace: bool = False) -> dict[str, Any]:
        """A checked copy of the whole database in the new folder ``to`` (see ``backup``):
        where, when, its size and its branches."""
        return self._value("backup", to=str(to), replace=replace)

    def export(
        self, to: str | os.PathLike, branch: str = "main", replace: bool = False
    ) -> dict[str, Any]:
        """``branch`` (``name@when`` too) written as a plain SQLite file ``to`` (see
        ``export``): the app's schema and rows, nothing of chronos; the file, its size, its
        tables and rows."""
        return self._value("export", to=str(to), branch=branch, replace=replace)

    def verify(self, against: str | None = None) -> Any:
        """This database checked as a copy: integrity, every branch's hash, and each compared
        with ``against`` (a folder, ``folder@when``) or the source a backup recorded
        (``.ok``, ``.branches``)."""
        given: dict[str, Any] = {"against": against} if against else {}
        return self._value("verify", **given)

    def hash(self, branch: str = "main") -> Any:
        """The content hash of ``branch`` (``name@when`` too): ``.hash``, ``.tables``."""
        return self._value("hash", branch=branch)

    def call(self, operation: str, caller: Caller | None = None, **args: Any) -> Reply:
        """Any registry operation, exactly as the CLI and MCP run it (same checks, same text)."""
        return REGISTRY.call(self.database, operation, args, caller or self.caller)


def open(folder: str | os.PathLike) -> Chronos:
    """Open a database folder made by ``chronos init``."""
    return Chronos(folder)


def init(folder: str | os.PathLike, from_file: str | os.PathLike | None = None) -> Chronos:
    """Create a database folder; with ``from_file`` an existing SQLite file becomes main."""
    create(folder, from_file)
    return Chronos(folder)
