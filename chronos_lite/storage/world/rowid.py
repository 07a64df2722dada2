"""``rowid`` (``oid``, ``_rowid_``) on a world's table that is a view.

A table a world reads as main's own answers ``rowid`` as main does. One the world (or main
since the fork) changed is a TEMP view, and SQLite gives a view no rowid: a statement naming
one fails to prepare with "no such column: rowid". Such a statement runs again with each of
the connection's table views swapped for a virtual table of the same name and columns, whose
rows are the view's and whose rowid is the row's: the INTEGER PRIMARY KEY; the hidden rowid of
a table without a primary key; main's rowid of the row for any other rowid table (a row only
the world has gets its rowid when a merge puts it in main: reading it says so). The virtual
table is read-only: a write through ``rowid`` there is refused, saying to write by key. After
the statement the views (and their triggers) are put back exactly as they were.

Reading through the virtual table costs Python per row: the swap is only for the statements
that name a rowid, which would fail otherwise.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from ...errors import REFUSED, ChronosError
from ...sqltext import quote_ident
from .. import guard
from ..fetch import one_row
from ..schema.catalog import ROWID_COL, TableInfo
from .overlay import counter
from .placement import Session
from .views import key_view

MODULE = "chronos_world_rows"
_ROWID = quote_ident(ROWID_COL)
_NO_ROWID = re.compile(r"no such column: (\w+\.)?(rowid|oid|_rowid_)\b", re.IGNORECASE)


def names_rowid(error: BaseException) -> bool:
    """Whether a statement failed to prepare because a view has no rowid."""
    return isinstance(error, apsw.SQLError) and bool(_NO_ROWID.search(str(error)))


@dataclass(frozen=True)
class _Source:
    """What a swapped table reads: its columns' declaration and its rows' query."""

    name: str
    columns: tuple[str, ...]
    rows: str  # SELECT rowid, columns... (rowid NULL: a row main doesn't have)
    writes: str = ""  # the view whose triggers write the table, by the rowid column ("": none)
    rowid: str = ""  # that view's column holding the rowid (quoted)
    writable: tuple[str, ...] = ()  # the columns a write gives (not generated, not the rowid)
    key: str = ""  # an INTEGER PRIMARY KEY's column
    counter: str = ""  # the query of the key a new row last took


@dataclass
class _Saved:
    table: str
    view: str  # the view's CREATE statement, as SQLite keeps it
    triggers: list[str]
    alias: str  # the view's rows, under chronos' name while the table is swapped


class _Module:
    """The virtual tables' module: one per connection, told each table's source first."""

    def __init__(self) -> None:
        self.sources: dict[str, _Source] = {}

    def Create(self, conn: apsw.Connection, _module: str, _db: str, name: str, *_args: str):
        source = self.sources[name.lower()]
        declared = f"CREATE TABLE x({', '.join(quote_ident(c) for c in source.columns)})"
        return declared, _Table(conn, source)

    Connect = Create


class _Table:
    def __init__(self, conn: apsw.Connection, source: _Source) -> None:
        self.conn, self.source = conn, source

    def BestIndex(self, constraints, _orderbys):
        for i, (column, op) in enumerate(constraints):
            if column == -1 and op == apsw.SQLITE_INDEX_CONSTRAINT_EQ:
                used: list[int | None] = [None] * len(constraints)
                used[i] = 0
                return used, 1, None, False, 10.0
        return None, 0, None, False, 1e6

    def Open(self) -> _Cursor:
        return _Cursor(self)

    def UpdateDeleteRow(self, rowid: int) -> None:
        self._write(f"DELETE FROM temp.{self._target()} WHERE {self.source.rowid} = ?", (rowid,))

    def UpdateChangeRow(self, rowid: int, new: int, fields: tuple) -> None:
        cols = self.source.writable
        sets = ", ".join(f"{quote_ident(c)} = ?" for c in cols)
        values = [fields[i] for i, c in enumerate(self.source.columns) if c in cols]
        self._write(
            f"UPDATE temp.{self._target()} SET {sets}, {self.source.rowid} = ? "
            f"WHERE {self.source.rowid} = ?",
            (*values, new, rowid),
        )

    def UpdateInsertRow(self, given: int | None, fields: tuple) -> int:
        source = self.source
        pairs = [(c, fields[i]) for i, c in enumerate(source.columns) if c in source.writable]
        rowid: Any = given
        if rowid is None and source.key:  # (an INTEGER PRIMARY KEY given as its column)
            rowid = fields[source.columns.index(source.key)]
        if rowid is not None:
            pairs.append((source.key or ROWID_COL, rowid))
        names = ", ".join(quote_ident(c) for c, _v in pairs)
        marks = ", ".join("?" * len(pairs))
        target = self._target()
        self._write(f"INSERT INTO temp.{target}({names}) VALUES ({marks})", [v for _c, v in pairs])
        if rowid is None:  # the key the world's trigger took from the shared counter
            rowid = self.conn.execute(source.counter).fetchall()[0][0]
        return int(rowid)

    def _target(self) -> str:
        if not self.source.writes:
            raise self._refused("a write")
        return self.source.writes

    def _write(self, sql: str, args: tuple | list) -> None:
        checks = guard.install(self.conn)
        access, checks.access = checks.access, None  # (chronos' own statement: unchecked)
        try:
            self.conn.execute(sql, args)
        finally:
            checks.access = access

    def _refused(self, what: str) -> ChronosError:
        return ChronosError(
            f"'{self.source.name}': on a world, {what} in a statement that names rowid can't "
            f"go through: the world changed the table, and chronos reads its rowid for the "
            f"statement; write its rows by key (WHERE on the primary key columns)",
            REFUSED,
        )

    def Disconnect(self) -> None:
        pass

    Destroy = Disconnect


class _Cursor:
    def __init__(self, table: _Table) -> None:
        self.table = table
        self.rows: Iterator[tuple] = iter(())
        self.row: tuple | None = None

    def Filter(self, index: int, _name: str | None, args: tuple) -> None:
        sql = self.table.source.rows
        if index == 1:
            sql = f"SELECT * FROM ({sql}) WHERE _r = ?"
        self.rows = iter(self.table.conn.execute(sql, args if index == 1 else ()).fetchall())
        self.Next()

    def Eof(self) -> bool:
        return self.row is None

    def Rowid(self) -> int:
        assert self.row is not None
        rowid = self.row[0]
        if rowid is None:
            raise ChronosError(
                f"'{self.table.source.name}': a row only this world has has no rowid yet (its "
                f"primary key isn't the rowid; main gives it one when a merge puts it there); "
                f"read it by its primary key",
                REFUSED,
            )
        return rowid

    def Column(self, number: int):
        assert self.row is not None
        return self.Rowid() if number == -1 else self.row[number + 1]

    def Next(self) -> None:
        self.row = next(self.rows, None)

    def Close(self) -> None:
        self.rows = iter(())


_MODULES: weakref.WeakKeyDictionary[apsw.Connection, _Module] = weakref.WeakKeyDictionary()


def _module(conn: apsw.Connection) -> _Module:
    found = _MODULES.get(conn)
    if found is None:
        found = _MODULES[conn] = _Module()
        # (apsw's VTModule protocol lists the optional methods too)
        conn.create_module(MODULE, found)  # type: ignore[arg-type]
    return found


def _source(t: TableInfo, n: int, alias: str) -> _Source:
    cols = tuple(c.name for c in t.columns)
    picked = ", ".join(f"v.{quote_ident(c)}" for c in cols)
    if t.key_kind == "int":  # (the view under its alias keeps the triggers that write it)
        pk = quote_ident(t.pk[0])
        rows = f"SELECT v.{pk} AS _r, {picked} FROM temp.{alias} AS v"
        writable = tuple(c.name for c in t.writable if c.name != t.pk[0])
        return _Source(t.name, cols, rows, alias, pk, writable, t.pk[0], _counter(t, n))
    if t.key_kind == "rowid":  # (its key view shows the hidden rowid, and writes by it)
        rows = f"SELECT v.{_ROWID} AS _r, {picked} FROM temp.{key_view(n)} AS v"
        writable = tuple(c.name for c in t.writable)
        return _Source(t.name, cols, rows, key_view(n), _ROWID, writable, "", _counter(t, n))
    same = " AND ".join(f"m.{t.col(c)} = v.{quote_ident(c)}" for c in t.pk)
    rowid = f"(SELECT m.rowid FROM main.{quote_ident(t.stored)} AS m WHERE {same})"
    return _Source(t.name, cols, f"SELECT {rowid} AS _r, {picked} FROM temp.{alias} AS v")


def _counter(t: TableInfo, n: int) -> str:
    table, col, row = counter(t, n)
    return f"SELECT {col} FROM {table} WHERE {row}"


def swap(session: Session) -> list[_Saved]:
    """Each table view of the session (of a rowid table) swapped for a virtual table; what
    ``restore`` needs to put them back."""
    conn, schema = session.conn, session.schema
    if schema is None:
        return []
    module = _module(conn)
    views = {
        name.lower(): sql
        for name, sql in conn.execute(
            "select name, sql from temp.sqlite_schema where type = 'view'"
        )
    }
    saved = []
    for _key, (n, t) in sorted(schema.tables.items()):
        view = views.get(t.name.lower())
        if view is None or t.without_rowid or t.fts_content:
            continue
        triggers = [
            sql
            for (sql,) in conn.execute(
                "select sql from temp.sqlite_schema where type = 'trigger' and tbl_name = ?",
                (t.name,),
            )
        ]
        alias = f"_chronos_r{n}"
        conn.execute(_renamed(view, t.name, alias))
        conn.execute(f"DROP VIEW temp.{quote_ident(t.name)}")  # (its triggers with it)
        if t.key_kind == "int":  # chronos' write triggers, on the alias meanwhile
            on = re.compile(rf" ON {re.escape(quote_ident(t.name))} (?=BEGIN |WHEN )")
            for trigger in triggers:
                if trigger.startswith("CREATE TRIGGER _chronos_w_") and on.search(trigger):
                    conn.execute(_temp(on.sub(f" ON {alias} ", trigger, count=1)))
        module.sources[t.name.lower()] = _source(t, n, alias)
        conn.execute(f"CREATE VIRTUAL TABLE temp.{quote_ident(t.name)} USING {MODULE}")
        saved.append(_Saved(t.name, view, triggers, alias))
    return saved


def _renamed(view: str, name: str, alias: str) -> str:
    head = f"CREATE VIEW {quote_ident(name)} AS "
    if not view.startswith(head):
        raise AssertionError(f"unexpected view text: {view[:80]}")  # (chronos makes them so)
    return f"CREATE TEMP VIEW {alias} AS {view[len(head) :]}"


def restore(session: Session, saved: list[_Saved]) -> None:
    """The views swapped by ``swap`` back as they were, with their triggers."""
    conn = session.conn
    for kept in saved:
        conn.execute(f"DROP TABLE temp.{quote_ident(kept.table)}")
        conn.execute(f"DROP VIEW temp.{kept.alias}")
        conn.execute(_temp(kept.view))
        for trigger in kept.triggers:
            conn.execute(_temp(trigger))
    session.temp_version = one_row(conn.execute("pragma temp.schema_version"))[0]


def _temp(sql: str) -> str:
    """SQLite keeps a TEMP object's text without TEMP: made again as TEMP."""
    return re.sub(r"^\s*CREATE\s+", "CREATE TEMP ", sql, count=1, flags=re.IGNORECASE)
