"""export: a branch written as a plain SQLite file, with the app's schema and rows and nothing of
chronos (no ``_chronos_*`` table, trigger or view, none of Litestream's ``_litestream_*``).

The branch's schema is SQLite's own text: main's statements with the world's schema changes
replayed on them (``world.schema.scratch``: the tables, with their constraints, defaults,
generated columns, WITHOUT ROWID and STRICT as written), made in the new file in the order
SQLite made them. The rows are read in one read transaction on the branch's connection (main,
a world, ``name@when``), so the file is the branch at one moment while writers go on; tables
first, then the indexes, then the app's views and triggers (made after the rows are in: no
trigger fires on the copy). Rowid tables keep their rowids, AUTOINCREMENT tables their
``sqlite_sequence``; main's ``user_version`` and ``application_id`` go along.

Virtual tables: an FTS5 table with its own content gets the branch's rows; one indexing an
external table is rebuilt from the rows copied there; any other (a contentless FTS5 table, an
R*Tree), which every branch reads as main has it, is copied as main has it (its shadow tables).

The file is made under a hidden name beside the destination (``staging``), checked
(``integrity_check``; ``foreign_key_check`` is reported), synced, then named: an export that
fails or is killed leaves nothing at the destination.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from .. import progress
from ..errors import BAD_ARGUMENT, IN_USE, ChronosError
from ..sqltext import quote_ident
from ..storage import faults
from ..storage.branchref import BranchRef
from ..storage.db import Database, Session
from ..storage.fetch import all_rows, one_row
from ..storage.schema.catalog import ROWID_COL
from ..storage.schema.virtual import fts_tables, virtual_tables
from ..storage.world import rowid as worldrowid
from ..storage.world import schema as worldschema
from ..storage.world.schema import Op
from ..storage.world.views import key_view
from ..storage.worlds import World
from . import staging

SQLITE_HEADER = b"SQLite format 3\x00"
MOST_LISTED = 20  # integrity_check's and foreign_key_check's findings kept
_AUTOINCREMENT = re.compile(r"\bAUTOINCREMENT\b", re.IGNORECASE)


@dataclass
class Exported:
    path: Path  # the file written
    branch: str
    tables: list[tuple[str, int]]  # (table, rows), in the order made
    bytes: int
    foreign_keys: list[tuple[str, int | None, str]]  # foreign_key_check: (table, rowid, parent)
    left_out: list[str] = field(default_factory=list)  # what the file couldn't hold, and why

    @property
    def rows(self) -> int:
        return sum(n for _t, n in self.tables)


def destination(db: Database, to: str, replace: bool) -> Path:
    """The file an export goes to, checked (nothing made yet)."""
    dest = Path(to).expanduser().absolute()
    folder = db.folder.absolute()
    if dest == folder or folder in dest.parents:
        raise ChronosError(
            f"an export can't go into the database's own folder ({folder}): give a file outside it",
            BAD_ARGUMENT,
        )
    if dest.is_dir():
        raise ChronosError(
            f"{dest} is a folder: give the path of the file to write (e.g. {dest / 'data.db'})",
            BAD_ARGUMENT,
        )
    if dest.exists() and not replace:
        raise ChronosError(
            f"{dest} exists already: give a new file name, or replace it (--replace; it is "
            f"replaced only once the new file is complete and checked)",
            IN_USE,
        )
    if dest.exists() and not _sqlite_or_empty(dest):
        raise ChronosError(
            f"{dest} isn't an SQLite file: an export replaces only an SQLite file; give a "
            f"new file name",
            IN_USE,
        )
    beside = [Path(f"{dest}{s}") for s in ("-wal", "-journal")]
    for journal in beside if dest.exists() else ():
        if journal.is_file() and journal.stat().st_size > 0:  # (SQLite would apply it)
            raise ChronosError(
                f"{journal.name} is beside {dest}: something has that database open or didn't "
                f"close it cleanly, and SQLite would apply it to the new file; close what uses "
                f"it (or give a new file name)",
                IN_USE,
            )
    return dest


def export(
    db: Database, branch: World | BranchRef, label: str, dest: Path, replace: bool
) -> Exported:
    """``branch`` (a world looked up, or a reference) written to ``dest``, which
    ``destination`` checked (``label``: the branch as the caller named it)."""
    session = db.session(branch)
    conn = session.conn
    temp: Path | None = None
    try:
        conn.execute("BEGIN")  # (the branch at one moment, whatever writers do meanwhile)
        reader = _Reader(db, session)
        try:
            objects, missing = _objects(session)
            temp = staging.hidden(dest, "exporting", folder=False)
            out = apsw.Connection(str(temp))
            try:
                made = _build(reader, out, objects)
                made.left_out += missing
                found = [str(r[0]) for r in out.execute(f"pragma integrity_check({MOST_LISTED})")]
                keys = [(r[0], r[1], r[2]) for r in out.execute("pragma foreign_key_check")]
            finally:
                out.close()
        finally:
            if not conn.get_autocommit():
                conn.execute("COMMIT")
        if found != ["ok"]:
            raise ChronosError(
                f"the exported file failed SQLite's integrity_check, and was thrown away "
                f"(nothing was written to {dest}): {'; '.join(found)}",
                faults.CORRUPT,
            )
        staging.synced(temp)
        size = temp.stat().st_size
        staging.publish(temp, dest, replace)
    except BaseException as exc:
        if temp is not None:
            staging.discard(temp)
        if not conn.get_autocommit():
            conn.execute("ROLLBACK")
        if isinstance(exc, faults.FAULTS):
            raise faults.describe(exc, db) or exc from None
        raise
    finally:
        db.end_call(session)
    return Exported(dest, label, made.tables, size, keys[:MOST_LISTED], made.left_out)


# --- the branch's schema ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Object:
    kind: str  # table, index, view, trigger
    name: str
    sql: str

    @property
    def virtual(self) -> bool:
        return self.kind == "table" and self.sql[:21].upper().startswith("CREATE VIRTUAL TABLE")


def _objects(session: Session) -> tuple[list[_Object], list[str]]:
    """The branch's schema objects as SQLite made them (main's, with a world's changes), in
    the order made; and main's virtual tables SQLite couldn't make here (their module isn't
    in this SQLite), as notes."""
    conn, world = session.conn, session.world
    ops: list[Op] = worldschema.visible_ops(conn, world.id) if world and world.id else []
    scratch = worldschema.scratch(conn, ops)
    try:
        shadows = {
            r[0]
            for r in scratch.execute(
                "select name from pragma_table_list where schema = 'main' and type = 'shadow'"
            )
        }
        rows = all_rows(
            scratch.execute(
                "select type, name, sql from main.sqlite_schema where sql is not null "
                "and name not like 'sqlite\\_%' escape '\\' "
                "and name not like '\\_chronos\\_%' escape '\\' "
                "and name not like '\\_litestream\\_%' escape '\\' order by rowid"
            )
        )
    finally:
        scratch.close()
    objects = [_Object(kind, name, sql) for kind, name, sql in rows if name not in shadows]
    made = {o.name.lower() for o in objects}
    missing = [
        f"{name}: a virtual table ({module or 'no module'}) this SQLite can't make"
        for name, module in virtual_tables(conn).items()
        if name.lower() not in made and not name.startswith("_litestream_")
    ]
    return objects, missing


# --- the file ---------------------------------------------------------------------------------


@dataclass
class _Made:
    tables: list[tuple[str, int]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _build(reader: _Reader, out: apsw.Connection, objects: list[_Object]) -> _Made:
    conn = reader.session.conn
    out.execute(f"pragma page_size = {one_row(conn.execute('pragma main.page_size'))[0]}")
    out.execute("pragma journal_mode = off")  # (a file of its own until named: no journal)
    out.execute("pragma synchronous = off")  # (synced once, whole, before it is named)
    out.execute("pragma foreign_keys = off")
    made = _Made()
    out.execute("BEGIN")
    tables = [o for o in objects if o.kind == "table"]
    for o in tables:
        out.execute(o.sql)
    fts = {f.name.lower(): f for f in fts_tables(out)}
    for done, o in enumerate(tables):
        progress.report("exporting: tables copied", done, len(tables))
        f = fts.get(o.name.lower())
        if o.virtual and (f is None or f.kind != "own"):
            continue  # (after the rows: an external index reads them)
        rows = reader.copy(out, o.name)
        made.tables.append((o.name, rows))
    for o in tables:
        f = fts.get(o.name.lower())
        if o.virtual and (f is None or f.kind != "own"):
            rows, note = _virtual(reader, out, o.name, f is not None and f.kind == "external")
            made.tables.append((o.name, rows))
            made.left_out += [note] if note else []
    _sequences(conn, out, tables)
    for kind in ("index", "view", "trigger"):  # (the app's triggers last: none fires on a copy)
        for o in objects:
            if o.kind == kind:
                out.execute(o.sql)
    for pragma in ("user_version", "application_id"):
        value = one_row(conn.execute(f"pragma main.{pragma}"))[0]
        out.execute(f"pragma main.{pragma} = {int(value)}")
    out.execute("COMMIT")
    return made


def _virtual(reader: _Reader, out: apsw.Connection, name: str, external: bool) -> tuple[int, str]:
    """A virtual table's contents: an external-content FTS5 index rebuilt from the rows copied;
    any other as main has it (its shadow tables), or its rows read through it. The rows it
    answers, and a note if it couldn't be filled."""
    q = quote_ident(name)
    try:
        if external:
            out.execute(f"INSERT INTO main.{q}({q}) VALUES ('rebuild')")
        else:
            shadows = [
                r[0]
                for r in out.execute(
                    "select name from pragma_table_list where schema = 'main' and "
                    "type = 'shadow' and substr(name, 1, ?) = ?",
                    (len(name) + 1, f"{name}_"),
                )
            ]
            for shadow in shadows:
                out.execute(f"DELETE FROM main.{quote_ident(shadow)}")
                reader.copy(out, shadow, on_main=True)
            if not shadows:
                reader.copy(out, name)
        return one_row(out.execute(f"SELECT count(*) FROM main.{q}"))[0], ""
    except apsw.Error as exc:
        return 0, f"{name}: left empty, its rows couldn't be read ({exc})"


def _sequences(conn: apsw.Connection, out: apsw.Connection, tables: list[_Object]) -> None:
    """AUTOINCREMENT tables' ``sqlite_sequence``: at least main's (an id main used and deleted
    isn't used again in the file either)."""
    kept = dict(all_rows(conn.execute("SELECT name, seq FROM main.sqlite_sequence")))
    for o in tables:
        seq = kept.get(o.name)
        if seq is None or o.virtual or not _AUTOINCREMENT.search(o.sql):
            continue
        out.execute(
            "UPDATE main.sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (seq, o.name)
        )
        if out.changes() == 0:
            out.execute("INSERT INTO main.sqlite_sequence(name, seq) VALUES (?, ?)", (o.name, seq))


# --- reading the branch's rows ----------------------------------------------------------------


class _Reader:
    """The branch's rows, on its connection, inside the export's read transaction. A table a
    world (or a branch as it was) changed is a view there, which has no rowid: the rowid of a
    table without a primary key is then its key view's hidden one; of a table keyed otherwise,
    main's row's (a row only the world has takes a new one in the file)."""

    def __init__(self, db: Database, session: Session) -> None:
        self.session = session
        world = session.world
        found = db.tables_for(world if world and world.id else None, session.conn)
        self.tables = {name.lower(): entry for name, entry in found.items()}

    def copy(self, out: apsw.Connection, name: str, on_main: bool = False) -> int:
        """``name``'s rows on the branch into the file's table of that name (its own columns,
        not the generated ones; rowids kept where the table has them). The rows copied."""
        q = quote_ident(name)
        columns = [r[1] for r in out.execute(f"pragma main.table_xinfo({q})") if r[6] == 0]
        on_main = on_main or self.session.world is None
        source = f"main.{q}" if on_main else q
        kept, cursor = self._select(name, source, columns, _own_rowid(out, name), on_main)
        names = (["rowid"] if kept else []) + columns
        insert = (
            f"INSERT INTO main.{q}({', '.join(quote_ident(c) for c in names)}) "
            f"VALUES ({', '.join('?' for _ in names)})"
        )
        later: list = []  # (rows with no rowid yet: after those that have one)
        count = 0

        def rows() -> Iterator:
            nonlocal count
            for row in cursor:
                if kept and row[0] is None:
                    later.append(row)
                    continue
                count += 1
                if count % progress.EVERY == 0:
                    progress.report(f"exporting: rows of {name}", count)
                yield row

        out.executemany(insert, rows())
        if later:
            out.executemany(insert, later)
        return count + len(later)

    def _select(
        self, name: str, source: str, columns: list[str], rowid: bool, on_main: bool
    ) -> tuple[bool, apsw.Cursor]:
        """The rows' cursor, and whether each row starts with its rowid (None: none yet)."""
        conn = self.session.conn
        picked = ", ".join(quote_ident(c) for c in columns)
        if not rowid:
            return False, conn.execute(f"SELECT {picked} FROM {source}")
        try:
            return True, conn.execute(f"SELECT rowid, {picked} FROM {source}")
        except apsw.SQLError as exc:
            if on_main or not worldrowid.names_rowid(exc):
                raise
        entry = self.tables.get(name.lower())
        if entry is None or entry[1].fts_content:  # (no rowid to be had: new ones)
            return False, conn.execute(f"SELECT {picked} FROM {source}")
        n, t = entry
        picked = ", ".join(f"v.{quote_ident(c)}" for c in columns)
        if t.key_kind == "rowid":
            view = f"temp.{key_view(n)}"
            return True, conn.execute(f"SELECT v.{quote_ident(ROWID_COL)}, {picked} FROM {view} v")
        same = " AND ".join(f"m.{t.col(c)} = v.{quote_ident(c)}" for c in t.pk)
        main_rowid = f"(SELECT m.rowid FROM main.{quote_ident(t.stored)} AS m WHERE {same})"
        return True, conn.execute(f"SELECT {main_rowid}, {picked} FROM {source} AS v")


def _own_rowid(out: apsw.Connection, name: str) -> bool:
    """Whether a table of the file has a rowid of its own to copy: not WITHOUT ROWID, and no
    INTEGER PRIMARY KEY (which is the rowid, copied as a column)."""
    row = out.execute(
        "select wr from pragma_table_list where schema = 'main' and name = ?", (name,)
    ).fetchone()
    if row is None or row[0]:
        return False
    keys = [r for r in out.execute(f"pragma main.table_info({quote_ident(name)})") if r[5]]
    return not (len(keys) == 1 and str(keys[0][2]).upper() == "INTEGER")


def _sqlite_or_empty(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return head in (b"", SQLITE_HEADER)
