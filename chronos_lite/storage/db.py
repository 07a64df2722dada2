"""A chronos database: one folder, one SQLite file, connections on main and on worlds."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from ..errors import BAD_ARGUMENT, IN_USE, NOT_FOUND, ChronosError
from ..history import timetravel
from ..statements.sqltext import quote_ident
from . import events, faults, guard, limits, shadow, worldschema
from .catalog import TableInfo, table_info, user_tables
from .faults import FILE_GONE, NOT_A_DATABASE
from .shadow import SEQ, WORLD, history_table, overlay_table, world_history_table
from .worldsql import CTX, CTX_DDL, MODES, world_objects, world_trigger_names

DB_FILE = "chronos.db"
SQLITE_HEADER = b"SQLite format 3\x00"
# (begin, undo, end) of a write: its own transaction, or a savepoint inside one already open
_TRANSACTION = ("BEGIN IMMEDIATE", "ROLLBACK", "COMMIT")
_SAVEPOINT = (
    "SAVEPOINT _chronos_write",
    "ROLLBACK TO _chronos_write; RELEASE _chronos_write",
    "RELEASE _chronos_write",
)
MAX_META_BYTES = 64 * 1024
WORLD_POOL = 16
OWNER = "owner"


@dataclass(frozen=True)
class World:
    """An open world (a branch other than main)."""

    id: int
    wid: str
    name: str
    parent_id: int | None
    parent: str
    base: dict[int, int]  # what it sees of main: per table, the last history seq at the fork
    fork_seq: int  # the world clock at the fork
    owner: str
    meta: dict
    version: int
    created: float


@dataclass
class Session:
    """A connection placed on one branch: main, or a world through TEMP views."""

    conn: apsw.Connection
    world: World | None = None
    past: bool = False  # main as it was at a moment (name@when): read only
    built_for: tuple | None = None
    temp_version: int = 0
    own_temp: set[str] = field(default_factory=set)
    kept: list[str] = field(default_factory=list)  # AS OF views kept between calls, oldest first
    # AS OF statements rewritten to name kept views: (text, schema, world) -> (sql, valid until)
    rewrites: dict[tuple, tuple[str, float]] = field(default_factory=dict)

    @property
    def branch(self) -> str:
        return self.world.name if self.world else "main"


def _world_from_row(row: tuple) -> World:
    wid_int, wid, name, parent_id, parent, base, fork, owner, meta, version, created = row
    return World(
        wid_int,
        wid,
        name,
        parent_id,
        parent or "main",
        {int(k): v for k, v in json.loads(base).items()},
        fork,
        owner,
        json.loads(meta),
        version,
        created,
    )


WORLD_COLUMNS = (
    "w.id, w.wid, w.name, w.parent, p.name, w.base, w.fork_seq, w.owner, w.meta, "
    "w.version, w.created"
)
WORLD_FROM = "_chronos_worlds AS w LEFT JOIN _chronos_worlds AS p ON p.id = w.parent"


def _connect(
    path: Path, synchronous: str, bounds: limits.Bounds, world: bool = False
) -> apsw.Connection:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    # Keep the WAL file when our last connection closes: an app in this same process may have
    # the file open through another copy of SQLite (the stdlib's), which SQLite can't see, and
    # deleting the WAL under it would lose its later writes.
    persist = ctypes.c_int(1)
    conn.file_control("main", apsw.SQLITE_FCNTL_PERSIST_WAL, ctypes.addressof(persist))
    bounds.install(conn)  # time limits, cancel, and bounded waits for the write lock
    guard.install(conn, world)  # what user statements may touch
    conn.execute(f"pragma synchronous = {synchronous}; pragma foreign_keys = on")
    if apsw.hard_heap_limit(-1) > 0:  # a process with a memory limit (chronos mcp): sorts and
        conn.execute("pragma temp_store = memory")  # temp tables count within it, not on disk
    return conn


def _moved(conn: apsw.Connection) -> bool:
    """SQLite's own check: the path no longer names the file the connection has open."""
    moved = ctypes.c_int(0)
    conn.file_control("main", apsw.SQLITE_FCNTL_HAS_MOVED, ctypes.addressof(moved))
    return bool(moved.value)


class Database:
    """An open chronos database folder. Not shared between threads."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self.path = self.folder / DB_FILE
        if not self.path.is_file():
            raise ChronosError(
                f"{folder} is not a chronos database (no {DB_FILE} in it): "
                f"create one with `chronos init {folder}`",
                NOT_FOUND,
            )
        self.bounds = limits.Bounds()
        # Writes to main and merges are on disk before they return (synchronous=full);
        # writes to worlds are batched by WAL (synchronous=normal).
        self._main = Session(_connect(self.path, "full", self.bounds))
        self._worlds: OrderedDict[int, Session] = OrderedDict()
        self._tables: dict[str, tuple[int, TableInfo]] = {}
        self._world_tables: dict[int, tuple[tuple, dict]] = {}
        self._schema_version: int | None = None
        self.caller_name = OWNER  # who acts: the registry sets it for each call
        self.caller_run: str | None = None
        # The file's header, read through SQLite's own VFS: a plain open and close of the file
        # would drop the POSIX locks SQLite holds on it in this process.
        self._header = apsw.VFSFile(
            "", str(self.path.resolve()), [apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_MAIN_DB, 0]
        )
        self.connection_ready(self._main.conn)
        self._upgrade()

    def _upgrade(self) -> None:
        """Chronos' own tables added since the file was made (a read when there are none)."""
        conn = self._main.conn
        have = conn.execute(
            "select count(*) from sqlite_schema where name in "
            "('_chronos_schema', '_chronos_checkpoints', '_chronos_events', "
            "'_chronos_merge_rows')"
        ).fetchone()[0]
        if have < 4:
            with self.write(conn):
                shadow.install_base(conn)
        if not conn.execute(
            "select 1 from pragma_table_info('_chronos_worlds') where name = 'rebased'"
        ).fetchone():
            with self.write(conn):
                conn.execute("alter table _chronos_worlds add column rebased REAL")

    def connection_ready(self, conn: apsw.Connection) -> None:
        """Called for every connection chronos opens (the API adds its SQL functions)."""

    # --- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        for s in self._worlds.values():
            s.conn.close()
        self._worlds.clear()
        self._main.conn.close()
        self._header.xClose()

    def interrupt(self) -> None:
        """Stop what this database's connections are running (SQLite's interrupt, safe from
        another thread): the call fails and its transaction rolls back."""
        self.bounds.cancel("interrupted")  # (also ends a wait for the write lock)
        for session in self._sessions():
            session.conn.interrupt()

    def _sessions(self) -> tuple[Session, ...]:
        return (self._main, *self._worlds.values())

    def check_file(self) -> None:
        """Refuse to go on when the database file was deleted, replaced or overwritten since it
        was opened: SQLite would write to the old file (lost) or read garbage."""
        if _moved(self._main.conn):
            what = "deleted" if not self.path.exists() else "replaced by another file"
            raise ChronosError(
                f"{self.path} was {what} while chronos had it open: nothing was done; put "
                f"the file back where it was, or restart chronos to open the one there now",
                FILE_GONE,
            )
        try:
            header = self._header.xRead(len(SQLITE_HEADER), 0)
        except apsw.Error as exc:  # (an I/O error is one, not a replaced file)
            raise faults.describe(exc, self) or exc from None
        if header != SQLITE_HEADER:
            raise ChronosError(
                f"{self.path} is no longer a SQLite database (its header was overwritten while "
                f"chronos had it open): nothing was done; put the database file back from a "
                f"backup and restart chronos",
                NOT_A_DATABASE,
            )

    def forget_pages(self) -> None:
        """Drop the pages every connection keeps in memory (after a corrupt read: once the
        disk reads right again, so does chronos)."""
        for session in self._sessions():
            try:
                session.conn.execute("pragma shrink_memory")
            except apsw.Error:
                pass

    def end_transactions(self) -> bool:
        """Roll back any transaction a call left open on any connection; whether there was one
        (whatever happened in the call, it ends with none open)."""
        found = False
        for session in self._sessions():
            if not session.conn.get_autocommit():
                found = True
                try:
                    session.conn.execute("ROLLBACK")
                except apsw.Error:
                    pass  # (SQLite may have rolled it back itself)
        return found

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions -----------------------------------------------------------------------

    @contextmanager
    def write(self, conn: apsw.Connection | None = None) -> Iterator[apsw.Connection]:
        """A write transaction (BEGIN IMMEDIATE: waits for other writers, never 'locked'); inside
        a transaction already open (a call's), a savepoint of it."""
        conn = conn or self._main.conn
        nested = not conn.get_autocommit()
        begin, undo, end = _SAVEPOINT if nested else _TRANSACTION
        try:
            conn.execute(begin)
        except faults.FAULTS as exc:  # (busy past the wait, a read-only file, ...)
            raise faults.describe(exc, self) or exc from None
        try:
            yield conn
        except BaseException:
            if not conn.get_autocommit():
                conn.execute(undo)
            raise
        conn.execute(end)
        if not nested:
            self.bounds.committed(conn)

    # --- schema -----------------------------------------------------------------------------

    def tables(self) -> dict[str, tuple[int, TableInfo]]:
        """User tables with their shadow numbers, brought up to date with main's schema."""
        conn = self._main.conn
        version = conn.execute("pragma main.schema_version").fetchone()[0]
        if version != self._schema_version:
            self._refresh_tables(version)
        return self._tables

    def _refresh_tables(self, version: int) -> None:
        conn = self._main.conn
        synced = conn.execute(
            "select value from _chronos_meta where key = 'synced_schema'"
        ).fetchone()
        if synced and synced[0] == version:
            self._tables = self._read_tables(conn)
        else:
            with self.write(conn):
                self._sync(conn)
        self._schema_version = conn.execute("pragma main.schema_version").fetchone()[0]
        self._trust(self._main)

    def _sync(self, conn: apsw.Connection) -> None:
        """Shadow objects in line with main's schema (in the caller's write transaction)."""
        self._tables = shadow.sync(conn)
        self._trust(self._main)

    def _trust(self, session: Session, tables: dict | None = None) -> None:
        """The triggers chronos made that a connection's guard lets write chronos' tables:
        main's history triggers, and on a world its INSTEAD OF triggers (``tables``)."""
        names = {name for n, _t in self._tables.values() for name in shadow.trigger_names(n)}
        for n, _t in (tables or {}).values():
            names.update(world_trigger_names(n))
        guard.install(session.conn).trusted = frozenset(names)
        _guard_own_temp(session)

    @staticmethod
    def _read_tables(conn: apsw.Connection) -> dict[str, tuple[int, TableInfo]]:
        ids = dict(conn.execute("select name, id from _chronos_tables where dropped = 0"))
        return {name: (ids[name], table_info(conn, name)) for name in user_tables(conn)}

    def follow_schema(self, conn: apsw.Connection) -> None:
        """Follow a schema change a sql call just made: inside its transaction if it has one,
        so the new or changed table is versioned from its first row."""
        if conn.get_autocommit():
            with self.write(conn):
                self._sync(conn)
        else:
            self._sync(conn)
        self._schema_version = None

    def tables_for(
        self, world: World | None, conn: apsw.Connection | None = None
    ) -> dict[str, tuple[int, TableInfo]]:
        """A branch's tables: main's, changed by the schema changes made on the world (and on
        the worlds it forked from, up to its fork). ``conn``: read there (a transaction that
        made a schema change sees it)."""
        tables = self.tables()
        if world is None or world.id == 0:  # main, or main as it was (name@when)
            return tables
        conn = conn or self._main.conn
        key = (self._schema_version, world.fork_seq, worldschema.signature(conn))
        cached = self._world_tables.get(world.id)
        if cached and cached[0] == key and conn.get_autocommit():
            return cached[1]
        ops = worldschema.visible_ops(conn, world.id)
        out = worldschema.apply_ops(conn, tables, ops) if ops else tables
        if conn.get_autocommit():
            self._world_tables[world.id] = (key, out)
        return out

    def table(self, name: str, world: World | None = None) -> tuple[int, TableInfo]:
        tables = self.tables_for(world)
        if name in tables:
            return tables[name]
        for tname, entry in tables.items():
            if tname.lower() == name.lower():
                return entry
        known = ", ".join(sorted(tables)) or "none yet"
        raise ChronosError(f"no table '{name}'; tables: {known}", NOT_FOUND)

    # --- worlds -----------------------------------------------------------------------------

    def world(self, name: str, conn: apsw.Connection | None = None) -> World:
        """The open world of that name (raises a clear error if there is none)."""
        conn = conn or self._main.conn
        if name == "main":
            raise ChronosError(
                "main is the database itself, not a world: give the name of a branch you forked"
            )
        row = conn.execute(
            f"select {WORLD_COLUMNS} from {WORLD_FROM} where w.name = ? and w.state = 'open'",
            (name,),
        ).fetchone()
        if row is None:
            names = [
                r[0]
                for r in conn.execute(
                    "select name from _chronos_worlds where state = 'open' order by name"
                )
            ]
            listing = ", ".join(["main", *names])
            raise ChronosError(f"no branch '{name}'; branches: {listing}", NOT_FOUND)
        return _world_from_row(row)

    def resolve(self, branch: str | None) -> World | None:
        """None for main, else the open world named ``branch`` (as it is now: name@when is
        read through session())."""
        if branch is None or branch == "main":
            return None
        if "@" in branch:
            raise ChronosError(
                f"'{branch}' is a branch as it was at a moment, which can only be read; "
                f"give the branch's name ({branch.split('@', 1)[0]}) to change it",
                BAD_ARGUMENT,
            )
        return self.world(branch)

    def worlds(self) -> list[World]:
        rows = self._main.conn.execute(
            f"select {WORLD_COLUMNS} from {WORLD_FROM} where w.state = 'open' order by w.id"
        ).fetchall()
        return [_world_from_row(r) for r in rows]

    def children(self, world: World, conn: apsw.Connection | None = None) -> list[World]:
        """Every open world forked from ``world``, and from those, deepest last."""
        conn = conn or self._main.conn
        rows = conn.execute(
            f"with recursive d(id) as (select id from _chronos_worlds where parent = ? "
            f"and state = 'open' union all select w.id from _chronos_worlds w join d "
            f"on w.parent = d.id where w.state = 'open') "
            f"select {WORLD_COLUMNS} from {WORLD_FROM} where w.id in (select id from d) "
            f"order by w.id",
            (world.id,),
        ).fetchall()
        return [_world_from_row(r) for r in rows]

    def fork(
        self,
        name: str,
        source: str | None = None,
        meta: dict | None = None,
        owner: str | None = None,
    ) -> World:
        """Create a world from main or from another world. Instant: no rows are copied from
        main; forking a world copies only that world's own changes."""
        if name == "main":
            raise ChronosError("'main' is taken by the database itself; pick another branch name")
        if "@" in name:
            raise ChronosError(f"branch names can't contain '@' (it reads as name@when): '{name}'")
        meta_text = encode_meta(meta or {})
        tables = self.tables()
        with self.write() as conn:
            exists = conn.execute(
                "select 1 from _chronos_worlds where name = ? and state = 'open'", (name,)
            ).fetchone()
            if exists:
                raise ChronosError(
                    f"branch '{name}' already exists: pick another name, or discard it first",
                    IN_USE,
                )
            past = source is not None and source.startswith("main@")
            then = None  # forking a world as it was at a moment
            if source is not None and "@" in source and not past:
                parent_name, _, when_text = source.partition("@")
                then = timetravel.checked_moment(self, when_text)
                parent = self.world(parent_name, conn)
                self.check_world_moment(parent, then, source)
            else:
                parent = self.resolve(source) if source not in (None, "main") and not past else None
            clock = self.tick(conn)  # writes stamped before the fork are not the new world's
            if then is not None:  # the parent's clock just before its first write after then
                clock = self._clock_at(conn, parent, then, clock)
            if past:  # main as it was at a moment: each table as of its last change before
                when = timetravel.checked_moment(self, source.split("@", 1)[1])
                horizon = {n: timetravel.seq_at(conn, n, when) for n, _t in tables.values()}
            else:
                horizon = parent.base if parent else self.horizons(conn, tables)
            base = json.dumps(horizon)
            conn.execute(
                "insert into _chronos_worlds(wid, name, parent, base, fork_seq, owner, meta, "
                "created) values (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    "w" + secrets.token_hex(8),
                    name,
                    parent.id if parent else None,
                    base,
                    clock,
                    owner or self.caller_name,
                    meta_text,
                    time.time(),
                ),
            )
            new_id = conn.last_insert_rowid()
            self.record(conn, new_id, "fork", detail={"from": source or "main"})
            self.record(conn, parent.id if parent else 0, "forked", detail={"branch": name})
            if parent:
                for n, _t in self.tables_for(parent, conn).values():
                    # The world's working copy, and a frozen one (world -id): the parent as the
                    # world saw it at the fork, the base of its diff and merge.
                    if then is not None:  # the parent's entries as they were then
                        self._copy_overlay_then(conn, n, new_id, parent.id, then, clock)
                        continue
                    conn.execute(self._copy_overlay_sql(n), (new_id, parent.id))
                    conn.execute(self._copy_overlay_sql(n), (-new_id, parent.id))
        return self.world(name)

    @staticmethod
    def horizons(conn: apsw.Connection, tables: dict) -> dict[int, int]:
        """Main as it is now: each table's last history seq (one index lookup per table)."""
        return {
            n: conn.execute(f"select coalesce(max({SEQ}), 0) from {history_table(n)}").fetchone()[0]
            for n, _t in tables.values()
        }

    def record(
        self,
        conn: apsw.Connection,
        world: int,
        kind: str,
        rows: int = 0,
        detail: dict | None = None,
    ) -> None:
        """An event of a branch (world 0: main), by the caller, in the caller's transaction."""
        events.record(conn, world, kind, self.caller_name, rows, detail, self.caller_run)

    def tick(self, conn: apsw.Connection) -> int:
        """Move the world clock on (inside the caller's write transaction); the new value."""
        return conn.execute(
            "update main._chronos_clock set seq = seq + 1 returning seq"
        ).fetchone()[0]

    def _clock_at(self, conn: apsw.Connection, parent: World, then: float, now: int) -> int:
        """A world forked from ``parent`` as it was at ``then`` counts as forked just before the
        parent's first write after then: the parent's writes since are the parent's changes."""
        first = now
        for n, _t in self.tables_for(parent, conn).values():
            row = conn.execute(
                f"select min({SEQ}) from {world_history_table(n)} where {WORLD} = ? "
                f"and _chronos_time > ?",
                (parent.id, then),
            ).fetchone()
            if row[0] is not None:
                first = min(first, row[0] - 1)
        return first

    def _copy_overlay_then(
        self, conn: apsw.Connection, n: int, new_id: int, parent: int, then: float, seq: int
    ) -> None:
        """A world's working and frozen copies of its parent's overlay entries as they were at
        ``then``: each key's first history record after it, else its entry now (stamped at
        most ``seq``, the fork: they are what the world starts from, not its changes)."""
        o, wh = overlay_table(n), world_history_table(n)
        cols = [r[1] for r in conn.execute(f"pragma table_info({o})")]
        keys = [r[2] for r in conn.execute(f"pragma index_info({o}_k)")][1:]
        rest = [c for c in cols if c not in (WORLD, SEQ, "_chronos_dead")]
        same = " and ".join(f"x.{quote_ident(k)} = e.{quote_ident(k)}" for k in keys)
        same_xy = " and ".join(f"y.{quote_ident(k)} = x.{quote_ident(k)}" for k in keys)
        picked = ", ".join(quote_ident(c) for c in rest)
        for ident in (new_id, -new_id):
            conn.execute(
                f"insert into {o}({WORLD}, {SEQ}, _chronos_dead, {picked}) "
                f"select {ident}, min(e.{SEQ}, {seq}), e._chronos_dead, "
                + ", ".join(f"e.{quote_ident(c)}" for c in rest)
                + f" from {o} e where e.{WORLD} = ? and not exists (select 1 from {wh} x "
                f"where x.{WORLD} = ? and {same} and x._chronos_time > ?) "
                f"union all select {ident}, {seq}, x._chronos_dead, "
                + ", ".join(f"x.{quote_ident(c)}" for c in rest)
                + f" from {wh} x where x.{WORLD} = ? and x._chronos_time > ? and x._chronos_op = 1 "
                f"and not exists (select 1 from {wh} y where y.{WORLD} = ? and {same_xy} "
                f"and y._chronos_time > ? and (y._chronos_time < x._chronos_time or "
                f"(y._chronos_time = x._chronos_time and y.rowid < x.rowid)))",
                (parent, parent, then, parent, then, parent, then),
            )

    def _copy_overlay_sql(self, n: int) -> str:
        o = overlay_table(n)
        cols = [r[1] for r in self._main.conn.execute(f"pragma table_info({o})")]
        rest = ", ".join(quote_ident(c) for c in cols if c != WORLD)
        return f"insert into {o}({WORLD}, {rest}) select ?, {rest} from {o} where {WORLD} = ?"

    def discard(self, name: str, cascade: bool = False) -> list[World]:
        """Throw a world (and with ``cascade`` its descendants) away. Returns what was discarded."""
        world = self.world(name)
        with self.write() as conn:
            below = self.children(world, conn)
            if below and not cascade:
                names = ", ".join(w.name for w in below)
                raise ChronosError(
                    f"branch '{name}' has branches forked from it ({names}): discard those "
                    f"first, or pass cascade=true (--cascade; in SQL DISCARD WORLD {name} CASCADE) "
                    f"to discard them too",
                    IN_USE,
                )
            gone = [*reversed(below), world]
            for w in gone:
                self.finish_world(conn, w.id)
                self.record(conn, w.parent_id or 0, "discarded", detail={"branch": w.name})
        for w in gone:
            session = self._worlds.pop(w.id, None)
            if session:
                session.conn.close()
        return gone

    def finish_world(self, conn: apsw.Connection, world_id: int, state: str = "discarded") -> None:
        worldschema.discard_ops(conn, world_id)  # (a merge has taken what it merged)
        for (n,) in conn.execute("select id from _chronos_tables").fetchall():
            conn.execute(
                f"delete from {overlay_table(n)} where {WORLD} in (?, ?)", (world_id, -world_id)
            )
            if self.has_table(conn, world_history_table(n)):  # (not for tables dropped before)
                conn.execute(f"delete from {world_history_table(n)} where {WORLD} = ?", (world_id,))
        conn.execute(
            "update _chronos_worlds set state = ?, ended = ? where id = ?",
            (state, time.time(), world_id),
        )

    @staticmethod
    def has_table(conn: apsw.Connection, name: str) -> bool:
        return bool(
            conn.execute("select 1 from main.sqlite_schema where name = ?", (name,)).fetchone()
        )

    def set_meta(self, name: str, changes: dict) -> World:
        """Merge ``changes`` into a world's metadata; a None value removes a key."""
        if name == "main":
            raise ChronosError("main has no metadata: set_meta works on a branch you forked")
        with self.write() as conn:
            world = self.world(name, conn)
            meta = dict(world.meta)
            for key, value in changes.items():
                if value is None:
                    meta.pop(key, None)
                else:
                    meta[key] = value
            conn.execute(
                "update _chronos_worlds set meta = ? where id = ?", (encode_meta(meta), world.id)
            )
        return self.world(name)

    def begin_world_write(self, conn: apsw.Connection, mode: str, tick: bool = True) -> None:
        """Before a write statement on a world: its conflict mode, the row count reset, and
        (for a statement that writes) a new stamp of the world clock for the rows it writes."""
        conn.execute(
            f"update {CTX} set mode = ?, n = 0, seq = ?",
            (MODES[mode], self.tick(conn) if tick else None),
        )

    @staticmethod
    def rows_written(session: Session) -> int:
        """Rows the last statement wrote: on a world its INSTEAD OF triggers count them (SQLite's
        changes() is 0 for a view)."""
        if session.world is not None:
            return session.conn.execute(f"select n from {CTX}").fetchone()[0]
        return session.conn.changes()

    def bump_version(self, conn: apsw.Connection, world: World) -> None:
        conn.execute("update _chronos_worlds set version = version + 1 where id = ?", (world.id,))

    # --- sessions ---------------------------------------------------------------------------

    def session(self, branch: str | None) -> Session:
        """A connection placed on ``branch``, its world views current."""
        if branch is not None and "@" in branch:
            return self._past_session(branch)
        world = self.resolve(branch)
        if world is None:
            self.tables()
            return self._main
        session = self._worlds.get(world.id)
        if session is None:
            session = Session(_connect(self.path, "normal", self.bounds, world=True), world)
            session.conn.execute(CTX_DDL)
            self.connection_ready(session.conn)
            self._worlds[world.id] = session
            while len(self._worlds) > WORLD_POOL:
                _, old = self._worlds.popitem(last=False)
                old.conn.close()
        else:
            self._worlds.move_to_end(world.id)
        session.world = world
        tables = self.tables_for(world)
        key = (
            world.id,
            json.dumps(world.base),
            world.fork_seq,
            self._schema_version,
            worldschema.signature(self._main.conn),
        )
        if session.built_for != key:
            session.conn.execute("BEGIN")
            try:
                self._place(session, tables)
            finally:
                session.conn.execute("COMMIT")
            session.built_for = key
        return session

    def _past_session(self, branch: str) -> Session:
        """A branch as it was at a moment (``main@-10 minutes``, ``task-1@10:00``): views of
        its tables as they were then, on a connection of its own; read only."""
        name, _, when_text = branch.partition("@")
        return self.past_session(name, timetravel.checked_moment(self, when_text), branch)

    def past_session(self, name: str, when: float, branch: str) -> Session:
        """Branch ``name`` as it was at ``when`` (``branch``: how the caller spelled it)."""
        conn = self._main.conn
        if name == "main":
            tables = self.tables()
            base = {n: timetravel.seq_at(conn, n, when) for n, _t in tables.values()}
            world, at = World(0, "", branch, None, "main", base, 0, OWNER, {}, 0, when), None
        else:
            world = self.world(name)
            self.check_world_moment(world, when, branch)
            tables, at = self.tables_for(world), when
            world = dataclasses.replace(world, name=branch)
        session = self._worlds.get(0)
        if session is None:
            session = Session(_connect(self.path, "normal", self.bounds, world=True), past=True)
            session.conn.execute(CTX_DDL)
            self.connection_ready(session.conn)
            self._worlds[0] = session
        session.world = world
        key = (
            "past",
            name,
            json.dumps(world.base),
            at,
            self._schema_version,
            worldschema.signature(conn),
        )
        if session.built_for != key:  # (main at the same seqs reads the same: kept)
            session.conn.execute("BEGIN")
            try:
                self._place(session, tables, writable=False, at=at)
            finally:
                session.conn.execute("COMMIT")
            session.built_for = key
        return session

    def check_world_moment(self, world: World, when: float, asked: str) -> None:
        """A world reads as it was only since its fork, or its last rebase."""
        since = self._main.conn.execute(
            "select coalesce(rebased, created) from _chronos_worlds where id = ?", (world.id,)
        ).fetchone()[0]
        if when < since:
            raise ChronosError(
                f"'{asked}': {world.name} didn't exist then as it is now (it was forked, or "
                f"last rebased, at {timetravel.show_moment(since)}); give a later moment",
                BAD_ARGUMENT,
            )

    def _place(
        self, session: Session, tables: dict, writable: bool = True, at: float | None = None
    ) -> None:
        """Put the session's connection on its world: its views and triggers."""
        conn, world = session.conn, session.world
        for (name,) in conn.execute(
            "select name from temp.sqlite_schema where type = 'view'"
        ).fetchall():
            conn.execute(f"drop view temp.{quote_ident(name)}")  # its triggers go with it
        for stmt in world_objects(tables, world.id, world.base, writable, at):
            conn.execute(stmt)
        mine = {name.lower() for name in tables}
        for name in self.tables():
            if name.lower() not in mine:  # the world dropped it: main's must not show through
                conn.execute(
                    f"CREATE TEMP VIEW {quote_ident(name)} AS SELECT * FROM "
                    f"temp.{quote_ident(worldschema.DROPPED + name)}"
                )
        _copy_user_views(conn)
        session.own_temp = {r[0] for r in conn.execute("select name from temp.sqlite_schema")}
        session.temp_version = conn.execute("pragma temp.schema_version").fetchone()[0]
        self._trust(session, tables)

    def rebuild_world(self, session: Session) -> None:
        """After a schema change on the session's world, inside the transaction that made it
        (a rollback puts the old views back; the next call rebuilds them anyway)."""
        self._place(session, self.tables_for(session.world, session.conn))
        session.built_for = None

    def schema_version(self) -> int:
        """Main's schema version as last seen (it names views that depend on the schema)."""
        self.tables()
        return self._schema_version or 0

    def keep_view(self, session: Session, name: str, most: int = 32) -> None:
        """Keep a TEMP view past the call (AS OF main at a seq reads the same every time, and
        dropping a view makes SQLite prepare every statement again)."""
        session.own_temp.add(name)
        _guard_own_temp(session)
        session.kept.append(name)
        while len(session.kept) > most:
            old = session.kept.pop(0)
            session.own_temp.discard(old)
            session.conn.execute(f"drop view if exists temp.{quote_ident(old)}")

    def end_call(self, session: Session) -> None:
        """Each call is its own session: drop TEMP objects the call created."""
        conn = session.conn
        if session.world is not None:
            conn.execute(f"UPDATE {CTX} SET seq = NULL, mode = 0")
        if conn.execute("pragma temp.schema_version").fetchone()[0] == session.temp_version:
            return
        for name, kind in conn.execute(
            "select name, type from temp.sqlite_schema where type in ('table', 'view', "
            "'trigger', 'index')"
        ).fetchall():
            if name not in session.own_temp and kind in ("table", "view", "trigger"):
                try:
                    conn.execute(f"drop {kind} if exists temp.{quote_ident(name)}")
                except apsw.Error:
                    pass
        session.temp_version = conn.execute("pragma temp.schema_version").fetchone()[0]

    @property
    def main(self) -> Session:
        return self._main


def _guard_own_temp(session: Session) -> None:
    """Tell the connection's guard which TEMP objects are chronos' (no statement drops them)."""
    guard.install(session.conn).own_temp = frozenset(n.lower() for n in session.own_temp)


def _copy_user_views(conn: apsw.Connection) -> None:
    """Main's views, again as TEMP views: their table names then resolve to the world's views.

    (A view stored in main would read main's tables even on a world connection.)
    """
    pending = conn.execute(
        "select name, sql from main.sqlite_schema where type = 'view' "
        "and name not like '\\_chronos\\_%' escape '\\'"
    ).fetchall()
    while pending:  # views built on views: retry until no progress
        failed = []
        for name, sql in pending:
            temp_sql = _VIEW_HEAD.sub("CREATE TEMP VIEW ", sql, count=1)
            try:
                conn.execute(temp_sql)
            except apsw.SQLError:
                failed.append((name, sql))
        if len(failed) == len(pending):
            break
        pending = failed


_VIEW_HEAD = re.compile(r"^\s*CREATE\s+VIEW\s+", re.IGNORECASE)


def encode_meta(meta: Any) -> str:
    if not isinstance(meta, dict):
        raise ChronosError('\'meta\' must be a JSON object, e.g. {"task": "fix names"}')
    text = json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_META_BYTES:
        raise ChronosError(
            f"'meta' is {len(text.encode()):,} bytes of JSON; at most 65,536 (64 KB) are kept: "
            f"store large notes elsewhere and put a reference in meta",
            BAD_ARGUMENT,
        )
    return text


__all__ = ["Database", "World", "Session", "DB_FILE"]
