"""Loading a file into a table (the ``insert`` operation): CSV, TSV, a JSON array or NDJSON.

The file is parsed by sqlite-utils (``rows_from_file``, its format detection) and read as a
stream of rows. A table that doesn't exist yet is created first, from a first pass over the
file: its columns in the order the file first names them, their types detected by sqlite-utils
(``TypeTracker`` for CSV and TSV, whose values are all text; ``suggest_column_types`` for JSON).
On a world the table is made the way a world's ``CREATE TABLE`` is (a schema change of the
world, diffed and merged like any).

The rows then go in through chronos, all in one transaction: on main into the table (its
history triggers keep every row's history), on a world through its views (so its history, diff
and merge see them); one prepared INSERT executed per row. Any bad row and nothing is inserted
(nor created): the error names the row by its number in the file (the first row is 1; a CSV
header isn't counted) and says what was wrong with it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from .. import errors, progress
from ..errors import BAD_ARGUMENT, REFUSED, ChronosError
from ..sqltext import quote_ident
from ..storage import events, faults, guard, worlds
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.schema.catalog import PREFIX, TableInfo
from ..storage.world import placement
from ..storage.world import sql as worldsql
from ..storage.world.schema import find_table
from ..storage.world.sql import Upsert, set_insert_triggers, world_table
from . import ddl as world_ddl
from .sources import Source, detect_types


@dataclass
class Loaded:
    """What an insert did."""

    table: str
    branch: str
    rows: int  # rows of the file written (inserted, or with upsert inserted or updated)
    file: str
    format: str
    created: str | None = None  # the CREATE TABLE statement, when it made the table
    upsert: bool = False
    inserted: int = 0  # of the rows, new rows
    updated: int = 0  # with upsert: rows the table had, updated

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "table": self.table,
            "branch": self.branch,
            "rows": self.rows,
            "created": self.created is not None,
            "file": self.file,
            "format": self.format,
        }
        if self.created is not None:
            out["create"] = self.created
        if self.upsert:
            out.update(inserted=self.inserted, updated=self.updated)
        return out


def insert(
    db: Database,
    branch: str,
    table: str,
    path: str,
    pk: list[str] | str | None = None,
    upsert: bool = False,
    fmt: str | None = None,
    encoding: str | None = None,
) -> Loaded:
    """Load the rows of the file at ``path`` into ``table`` on ``branch`` (see the module)."""
    world = db.resolve(branch)  # (a clear error for name@when: it can only be read)
    keys = _key_list(pk)
    source = Source(path, fmt, encoding, db.bounds)
    found = find_table(db.tables_for(world), table)
    create = None
    if found is None:
        if upsert and not keys:
            raise ChronosError(
                f"upsert matches rows by primary key, and table {table} doesn't exist yet: "
                f"give its key with pk (--pk id) to create it with one",
                BAD_ARGUMENT,
            )
        create = _create_statement(table, keys, source)
    else:
        _check_key(found[2], keys, upsert)
    session = db.session(branch)
    try:
        return _load(db, session, table, keys, source, create, upsert)
    except faults.FAULTS as exc:  # the disk, the file, the lock: each its own error
        raise faults.describe(exc, db) or exc from None
    finally:
        db.end_call(session)


# --- the table --------------------------------------------------------------------------------


def _key_list(pk: list[str] | str | None) -> list[str]:
    if pk is None:
        return []
    if isinstance(pk, str):
        return [p.strip() for p in pk.split(",") if p.strip()]
    return list(pk)


def _check_key(t: TableInfo, keys: list[str], upsert: bool) -> None:
    """pk, for a table there already: its primary key (or, to match by, a UNIQUE column set)."""
    named = _columns(t, keys) if keys else None
    if named is not None:
        key_sets = ([set(t.pk)] if t.key_kind != "rowid" else []) + [set(u) for u in t.uniques]
        if set(named) not in key_sets or (not upsert and set(named) != set(t.pk)):
            has = f"its primary key is {', '.join(t.pk)}" if t.pk else "it has no primary key"
            raise ChronosError(
                f"table {t.name} exists, and {has}: pk ({', '.join(keys)}) is the key of a "
                f"table insert creates, and with upsert the key rows are matched by (the "
                f"table's primary key, or columns it holds UNIQUE)",
                BAD_ARGUMENT,
            )
    elif upsert and t.key_kind == "rowid":
        raise ChronosError(
            f"upsert matches rows by primary key, and table {t.name} has none: give pk with "
            f"columns it holds UNIQUE, or insert without upsert",
            BAD_ARGUMENT,
        )


def _columns(t: TableInfo, names: list[str]) -> list[str]:
    by_lower = {c.lower(): c for c in t.column_names}
    unknown = [n for n in names if n.lower() not in by_lower]
    if unknown:
        raise ChronosError(
            f"table {t.name} has no column {', '.join(repr(u) for u in unknown)}; its columns: "
            f"{', '.join(t.column_names)}",
            BAD_ARGUMENT,
        )
    return [by_lower[n.lower()] for n in names]


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _ident(name: str) -> str:
    """A name as written in the CREATE TABLE statement: bare when SQL reads it as a name."""
    if _PLAIN.fullmatch(name) and name.upper() not in apsw.keywords:
        return name
    return quote_ident(name)


def _create_statement(table: str, keys: list[str], source: Source) -> str:
    """The CREATE TABLE statement for a new table, from a first pass over the file."""
    if table.lower().startswith(PREFIX):
        raise ChronosError(errors.OWN_TABLES, REFUSED)
    if table.lower().startswith("sqlite_"):
        raise ChronosError(f"table names starting sqlite_ are reserved for SQLite: '{table}'")
    types = detect_types(source)
    if not types:
        raise ChronosError(
            f"{source.shown} holds no rows, so there are no columns to create table {table} "
            f"from: create it first (sql 'create table ...'), or give a file with rows",
            BAD_ARGUMENT,
        )
    by_lower = {c.lower(): c for c in types}
    missing = [k for k in keys if k.lower() not in by_lower]
    if missing:
        raise ChronosError(
            f"pk names {', '.join(repr(m) for m in missing)}, which {source.shown} has no "
            f"column for; its columns: {', '.join(types)}",
            BAD_ARGUMENT,
        )
    keys = [by_lower[k.lower()] for k in keys]
    parts = []
    for column, kind in types.items():
        part = f"{_ident(column)} {kind}"
        if keys == [column]:
            part += " primary key" if kind == "integer" else " not null primary key"
        elif column in keys:
            part += " not null"
        parts.append(part)
    if len(keys) > 1:
        parts.append(f"primary key ({', '.join(_ident(k) for k in keys)})")
    return f"create table {_ident(table)} ({', '.join(parts)})"


# --- writing ----------------------------------------------------------------------------------


def _load(
    db: Database,
    session: Session,
    table: str,
    keys: list[str],
    source: Source,
    create: str | None,
    upsert: bool,
) -> Loaded:
    conn, world = session.conn, session.world
    with db.write(conn):
        before = events.positions(conn, db.tables()) if world is None else None
        clock = events.clock(conn) if world is not None else None
        if create is not None:
            _create(db, session, create)
        tables = db.tables_for(world, conn) if world is not None else db.tables()
        found = find_table(tables, table)
        assert found is not None  # (there, or just made)
        _name, n, t = found
        target = (tuple(_columns(t, keys)) if keys else t.pk) if upsert else None
        if world is not None:
            worldsql.begin_world_write(conn, None)
        counted = _count(conn, session, t) if upsert else 0
        writer = _Writer(session, n, t, source, target, create is not None)
        try:
            written = writer.run()
        finally:
            writer.close()
        inserted = _count(conn, session, t) - counted if upsert else written
        if world is not None and written:
            worlds.bump_version(conn, world)
        if written or create is not None:
            detail: dict[str, Any] = {  # (history shows "sql" as the write's detail)
                "sql": f"insert {t.name} from {source.shown}",
                "insert": t.name,
                "file": source.shown,
            }
            if before is not None:
                detail["seqs"] = events.ranges(before, events.positions(conn, db.tables()))
            if clock is not None:
                detail["clock"] = [clock + 1, events.clock(conn)]
            kind = "schema" if create is not None else "write"
            db.record(conn, world.id if world is not None else 0, kind, written, detail)
    return Loaded(
        t.name,
        session.branch,
        written,
        source.shown,
        source.found or "csv",
        create,
        upsert,
        inserted,
        written - inserted,
    )


def _create(db: Database, session: Session, create: str) -> None:
    """Make the new table as the sql operation makes it: on main a statement under the guard
    (as a user's), its history set up in the same transaction; on a world the world's
    schema change."""
    conn = session.conn
    try:
        if session.world is not None:
            world_ddl.run(db, session, create)
            return
        checked = guard.checking(conn, guard.OWNER)
        try:
            conn.execute(guard.OWNER.mark + create)
        except apsw.AuthError:
            if checked.denied is not None:
                raise ChronosError(errors.OWN_TABLES, REFUSED) from None
            raise
        finally:
            checked.done()
        db.follow_schema(conn)
    except apsw.Error as exc:
        if isinstance(exc, faults.FAULTS):
            raise
        raise ChronosError(f"can't {create}: {errors.from_sqlite(exc)}") from None


def _count(conn: apsw.Connection, session: Session, t: TableInfo) -> int:
    """The branch's rows of the table (a world's view, or main's table it reads as its own)."""
    where = "main." if session.world is None else ""
    return one_row(conn.execute(f"select count(*) from {where}{quote_ident(t.name)}"))[0]


def _reported(rows: Iterator[tuple[int, dict]], what: str) -> Iterator[tuple[int, dict]]:
    """The rows as they go, the count of rows read reported now and then (a bar on a
    terminal)."""
    if not progress.listened():
        yield from rows
        return
    for n, row in rows:
        if n % progress.EVERY == 0:
            progress.report(f"{what}: rows", n)
        yield n, row


class _Writer:
    """The rows into the table, one prepared statement executed per row (one per set of
    columns: a JSON file's rows may each name others)."""

    def __init__(
        self,
        session: Session,
        n: int,
        t: TableInfo,
        source: Source,
        target: tuple[str, ...] | None,
        created: bool,
    ) -> None:
        self.session, self.n, self.t = session, n, t
        self.source, self.target, self.created = source, target, created
        self.at = 0  # the row being written (its number in the file)
        self.swapped = False  # a world's INSERT trigger made an upsert for the load
        on_main = session.world is None
        if not on_main and n not in session.materialized:  # (the world's own, to write it)
            placement.materialize(session, n)
        self.into = f"{'main' if on_main else 'temp'}.{quote_ident(t.name)}"
        self.by_lower = {c.name.lower(): c for c in t.columns}
        self.text = source.found not in ("json", "ndjson")

    def run(self) -> int:
        written = 0
        rows = self.source.rows()
        groups = (
            [(None, rows)] if self.text else itertools.groupby(rows, key=lambda nr: tuple(nr[1]))
        )
        for names, group in groups:
            first = next(group, None)  # (a CSV file's rows all have its header's columns)
            if first is None:
                continue
            columns = self._row_columns(first[0], names or tuple(first[1]))
            sql = self._statement(columns)
            try:
                self.session.conn.executemany(sql, self._bindings(first, group))
            except ChronosError:
                raise
            except faults.FAULTS:
                raise
            except OverflowError:
                raise self._row_error(errors.TOO_BIG, BAD_ARGUMENT) from None
            except apsw.Error as exc:
                raise self._sqlite_error(exc) from None
            written = self.at
        return written

    def _bindings(self, first: tuple[int, dict], group: Iterator[tuple[int, dict]]) -> Iterator:
        """Each row's values, as bound: a CSV file's text as it is; JSON's objects and arrays
        as JSON text."""
        rows = _reported(
            itertools.chain([first], group), f"loading {self.source.shown} into {self.t.name}"
        )
        if self.text:
            for self.at, row in rows:
                yield list(row.values())
            return
        for self.at, row in rows:
            yield [
                json.dumps(v, ensure_ascii=False) if type(v) in (dict, list) else v
                for v in row.values()
            ]

    def _row_columns(self, n: int, names: tuple) -> list[str]:
        """The table's columns a row's names are (a name the table hasn't is an error)."""
        out = []
        for name in names:
            column = self.by_lower.get(str(name).lower()) if name is not None else None
            if column is None:
                self.at = n
                shown = "an unnamed column" if not name else f"column '{name}'"
                raise self._row_error(
                    f"{shown}, which table {self.t.name} doesn't have; its columns: "
                    f"{', '.join(self.t.column_names)}",
                    BAD_ARGUMENT,
                    " has",
                )
            if column.generated:
                self.at = n
                raise self._row_error(
                    f"column '{name}', which is generated: SQLite computes it, leave it out of "
                    f"the file",
                    BAD_ARGUMENT,
                    " has",
                )
            out.append(column.name)
        if self.target is not None:
            missing = [c for c in self.target if c not in out]
            if missing:
                self.at = n
                raise self._row_error(
                    f"no {', '.join(missing)}, the key upsert matches rows by",
                    BAD_ARGUMENT,
                    " has",
                )
        return out

    def _statement(self, columns: list[str]) -> str:
        """The INSERT for rows of these columns. A CSV file's empty field is NULL in a numeric
        column (INTEGER, REAL, NUMERIC: '' can't be a number there), '' in a text one."""
        names = ", ".join(quote_ident(c) for c in columns)
        marks = ", ".join(
            "nullif(?, '')" if self.text and _numeric(self.by_lower[c.lower()].decltype) else "?"
            for c in columns
        )
        sql = f"insert into {self.into}({names}) values ({marks})"
        if self.target is None:
            return sql
        rest = [c for c in columns if c not in self.target]
        if self.session.world is not None and self.n not in self.session.native:
            # (a view can't upsert: its INSERT trigger does)
            sets = ", ".join(f"{quote_ident(c)} = NEW.{quote_ident(c)}" for c in rest)
            self._swap_trigger(Upsert(self.target, sets or None, None))
            return sql
        key = ", ".join(quote_ident(c) for c in self.target)
        if not rest:
            return f"{sql} on conflict({key}) do nothing"
        sets = ", ".join(f"{quote_ident(c)} = excluded.{quote_ident(c)}" for c in rest)
        return f"{sql} on conflict({key}) do update set {sets}"

    def _swap_trigger(self, upsert: Upsert | None) -> None:
        conn, world = self.session.conn, self.session.world
        assert world is not None  # (a world's upsert swaps its INSERT trigger)
        assert self.session.schema is not None  # (a world's session is placed on its schema)
        if self.n not in self.session.materialized:
            placement.materialize(self.session, self.n)
        wt = world_table(self.session.schema, world.id, self.n)
        set_insert_triggers(conn, wt, upsert)
        self.swapped = upsert is not None

    def close(self) -> None:
        """The world's own INSERT trigger back, if an upsert replaced it."""
        if self.swapped:
            with contextlib.suppress(apsw.Error):  # (a rollback may have put it back)
                self._swap_trigger(None)

    def _row_error(self, message: str, code: str, verb: str = ":") -> ChronosError:
        nothing = "nothing was inserted"
        if self.created:
            nothing += f" (nor table {self.t.name} created)"
        return ChronosError(
            f"row {self.at} of {self.source.shown}{verb} {message}; {nothing}",
            code,
            {"row": self.at, "file": self.source.shown, "error": message},
        )

    def _sqlite_error(self, exc: apsw.Error) -> ChronosError:
        described = errors.from_sqlite(exc)
        message = described.message
        if message == "datatype mismatch" and self.t.key_kind == "int":
            message += f" ({self.t.pk[0]} is the INTEGER PRIMARY KEY: its values are integers)"
        return self._row_error(message, described.code)


def _numeric(decltype: str) -> bool:
    """SQLite's affinity rules: INTEGER, REAL or NUMERIC (not TEXT, nor BLOB or none)."""
    kind = decltype.upper()
    if "INT" in kind:
        return True
    if "CHAR" in kind or "CLOB" in kind or "TEXT" in kind or "BLOB" in kind or not kind:
        return False
    return True
