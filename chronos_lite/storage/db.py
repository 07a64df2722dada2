"""A chronos database: one folder, one SQLite file, connections on main and on worlds."""

from __future__ import annotations

import dataclasses
import json
import os
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import apsw

from ..errors import NOT_FOUND, ChronosError
from . import events, faults, guard, limits, moments, schemasync, shadow, worlds
from .branchref import BranchRef
from .faults import FILE_GONE, NOT_A_DATABASE
from .fetch import one_row
from .governance import readlog
from .schema.catalog import TableInfo, table_info, user_tables
from .world import placement
from .world import schema as worldschema
from .world import views as worldviews
from .world.placement import Session
from .world.schema import BranchSchema
from .world.sql import CTX_DDL
from .worlds import World

DB_FILE = "chronos.db"
SQLITE_HEADER = b"SQLite format 3\x00"
# (begin, undo, end) of a write: its own transaction, or a savepoint inside one already open
_TRANSACTION = ("BEGIN IMMEDIATE", "ROLLBACK", "COMMIT")
_SAVEPOINT = (
    "SAVEPOINT _chronos_write",
    "ROLLBACK TO _chronos_write; RELEASE _chronos_write",
    "RELEASE _chronos_write",
)
WORLD_POOL = 16
# A branch as a caller names it (None: main), read into a BranchRef, or its world looked up
Where = str | BranchRef | World | None
OWNER = events.OWNER


def _connect(
    path: Path, synchronous: str, bounds: limits.Bounds, world: bool = False
) -> apsw.Connection:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    # Keep the WAL file when our last connection closes: an app in this process may have it open
    # through another SQLite (the stdlib's), and deleting the WAL under it would lose its writes.
    persist = array("i", [1])  # (a C int, its address: what ctypes would give, a start faster)
    conn.file_control("main", apsw.SQLITE_FCNTL_PERSIST_WAL, persist.buffer_info()[0])
    bounds.install(conn)  # time limits, cancel, and bounded waits for the write lock
    guard.install(conn, world)  # what user statements may touch
    conn.execute(f"pragma synchronous = {synchronous}; pragma foreign_keys = on")
    if world:  # a world's triggers write through other views, their own table's too
        conn.execute("pragma recursive_triggers = on")
    # With STAT4, SQLite prepares a join again for each value bound to it (a key join of two
    # tables: 9 µs, not 3, on main as on a world); the plan is chosen once instead
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
    if apsw.hard_heap_limit(-1) > 0:  # a process with a memory limit (chronos mcp): sorts and
        conn.execute("pragma temp_store = memory")  # temp tables count within it, not on disk
    return conn


def _moved(conn: apsw.Connection) -> bool:
    """SQLite's own check: the path no longer names the file the connection has open."""
    moved = array("i", [0])
    conn.file_control("main", apsw.SQLITE_FCNTL_HAS_MOVED, moved.buffer_info()[0])
    return bool(moved[0])


class Database:
    """An open chronos database folder. Not shared between threads.

    ``on_connect``: called with each connection chronos opens (the system tables' hook);
    ``keep_temp``: TEMP objects a call makes last past it (a program's connection, the shell),
    or go with it (MCP and HTTP: each call is its own session, as the spec has it). Front ends
    open one through ``chronos_lite.opening.open_folder``."""

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        on_connect: Callable[[Database, apsw.Connection], None] | None = None,
        keep_temp: bool = False,
    ) -> None:
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
        self._world_schemas: dict[int, tuple[tuple, BranchSchema]] = {}
        self._schema_version: int | None = None
        self._found_worlds: dict[str, tuple[tuple[int, int], World]] = {}
        self._named: dict[str, int] = {}  # a world's name as a call gave it -> its id
        self.keep_temp = keep_temp
        self._on_connect = on_connect
        # The file's header, read through SQLite's own VFS: a plain open and close of the file
        # would drop the POSIX locks SQLite holds on it in this process.
        self._header = apsw.VFSFile(
            "", str(self.path.resolve()), [apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_MAIN_DB, 0]
        )
        self._connected(self._main.conn)
        shadow.upgrade(self._main.conn, self.write)  # chronos' tables added since the file was made

    def _connected(self, conn: apsw.Connection) -> None:
        if self._on_connect is not None:
            self._on_connect(self, conn)

    # --- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        readlog.write_closing(self._main.conn)  # (reads no write rests on yet: kept all the same)
        for s in (*self._worlds.values(), self._main):
            s.conn.close()
        self._worlds.clear()
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
            with suppress(apsw.Error):
                session.conn.execute("pragma shrink_memory")

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
        version = one_row(conn.execute("pragma main.schema_version"))[0]
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
        else:  # another client changed main's schema: followed, and kept in history
            with self.write(conn):
                changed = self._sync(conn)
                if changed:
                    detail = {"table": ", ".join(changed), "directly": True}
                    events.record(conn, 0, "schema", events.APP, 0, detail)
        self._schema_version = one_row(conn.execute("pragma main.schema_version"))[0]
        self._trust(self._main)

    def _sync(self, conn: apsw.Connection) -> list[str]:
        """Shadow objects in line with main's schema (in the caller's write transaction); the
        app's tables whose CREATE statement changed since the last sync."""
        self._tables = schemasync.sync(conn)
        self._trust(self._main)
        return schemasync.snapshot(conn)

    def _history_triggers(self) -> frozenset[str]:
        """Main's history triggers: chronos' triggers that every connection's guard trusts."""
        return frozenset(
            name for n, _t in self._tables.values() for name in shadow.trigger_names(n)
        )

    def _trust(self, session: Session) -> None:
        guard.install(session.conn).trusted = self._history_triggers()
        placement.guard_own_temp(session)

    @staticmethod
    def _read_tables(conn: apsw.Connection) -> dict[str, tuple[int, TableInfo]]:
        ids = dict(conn.execute("select name, id from _chronos_tables where dropped = 0"))
        return {name: (ids[name], table_info(conn, name)) for name in user_tables(conn)}

    def follow_schema(self, conn: apsw.Connection) -> None:
        """Follow a schema change a sql call just made: inside its transaction if it has one,
        so the new or changed table is versioned from its first row (the call records its own
        event of the change)."""
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

    def schema_for(self, world: World | None, conn: apsw.Connection | None = None) -> BranchSchema:
        """A branch's whole schema: its tables with their rules (as the branch has them), the
        app's triggers and views."""
        tables = self.tables_for(world, conn)
        conn = conn or self._main.conn
        if world is None or world.id == 0:
            return worldschema.main_schema(conn, tables)
        key = (self._schema_version, world.fork_seq, worldschema.signature(conn))
        cached = self._world_schemas.get(world.id)
        if cached and cached[0] == key and conn.get_autocommit():
            return cached[1]
        ops = worldschema.visible_ops(conn, world.id)
        out = worldschema.branch_schema(conn, self.tables(), ops, tables)
        if conn.get_autocommit():
            self._world_schemas[world.id] = (key, out)
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

    def world(self, name: str | BranchRef, conn: apsw.Connection | None = None) -> World:
        """The open world of that name (raises a clear error if there is none; a branch as it
        was, ``name@when``, is refused: it can only be read)."""
        ref = BranchRef.parse(name)
        name = ref.writable()
        if conn is not None and conn is not self._main.conn:
            return worlds.find(conn, ref)
        # (the catalog as main's connection read it last, while no connection has written
        # since: data_version moves with another's commits, total_changes with its own; read
        # afresh inside a transaction, which may yet roll back what it reads)
        conn = self._main.conn
        if not conn.get_autocommit():
            self._found_worlds.clear()
            return worlds.find(conn, ref)
        now = (one_row(conn.execute("pragma data_version"))[0], conn.total_changes())
        found = self._found_worlds.get(name)
        if found is not None and found[0] == now:
            return found[1]
        world = worlds.find(conn, ref)
        if len(self._found_worlds) > 256:
            self._found_worlds.clear()
        self._found_worlds[name] = (now, world)
        return world

    def resolve(self, branch: str | BranchRef | None) -> World | None:
        """None for main, else the open world named ``branch`` (as it is now: name@when is
        read through session())."""
        ref = BranchRef.parse(branch)
        name = ref.writable()
        return None if ref.is_main else self.world(name)

    def worlds(self) -> list[World]:
        return worlds.open_worlds(self._main.conn)

    def record(
        self,
        conn: apsw.Connection,
        world: int,
        kind: str,
        rows: int = 0,
        detail: dict | None = None,
    ) -> None:
        """An event of a branch (world 0: main), by the call's caller, in its transaction."""
        call = events.current()
        events.record(conn, world, kind, call.name, rows, detail, call.run)
        events.recorded(kind, rows)

    # --- sessions ---------------------------------------------------------------------------

    def session(self, branch: Where) -> Session:
        """A connection placed on ``branch`` (or on a world already looked up), its world
        views current."""
        if isinstance(branch, (str, BranchRef)) and (quiet := self._quiet(str(branch))):
            return quiet
        if isinstance(branch, World):
            world: World | None = branch
        else:
            ref = BranchRef.parse(branch)
            if ref.past:
                return self._past_session(ref)
            world = self.resolve(ref)
        if world is None:
            self.tables()
            return self._main
        session = self._pooled(world.id)
        session.world = world
        self.tables()  # (main's schema version, as the key reads it, brought up to date)
        key = (
            world.id,
            json.dumps(world.base),
            world.fork_seq,
            self._schema_version,
            worldschema.signature(self._main.conn),
        )
        # another connection wrote the world, or a rollback took back what this one made
        temp = one_row(session.conn.execute("pragma temp.schema_version"))[0]
        stale = session.seen != world.version or temp != session.temp_version
        stale = stale or not placement.intact(session)
        own = session.conn.get_autocommit()  # (else: inside the caller's transaction)
        if own:
            session.conn.execute("BEGIN")
        try:
            if session.built_for != key or stale:
                schema = self.schema_for(world)
                placement.place(session, schema, self._history_triggers(), True, None, self._tables)
                session.built_for = key
            else:  # (main's rows another connection changed since: pinned as at the fork)
                placement.sync(session)
        finally:
            if own:
                session.conn.execute("COMMIT")
        if isinstance(branch, (str, BranchRef)):
            self._named[str(branch)] = world.id
        # (the TEMP schema as placed now: session.temp_version; a later change is seen)
        guard.install(session.conn).temp_changed = False
        return session

    def _pooled(self, key: int) -> Session:
        """The session of ``key`` (a world's id; 0: a branch as it was), its connection made if
        there is none; the pool keeps the ``WORLD_POOL`` last used."""
        session = self._worlds.get(key)
        if session is not None:
            self._worlds.move_to_end(key)
            return session
        session = Session(_connect(self.path, "normal", self.bounds, world=True))
        session.conn.execute(CTX_DDL)
        self._connected(session.conn)
        self._worlds[key] = session
        while len(self._worlds) > WORLD_POOL:
            _, old = self._worlds.popitem(last=False)
            old.conn.close()
        return session

    def _quiet(self, name: str) -> Session | None:  # (name: as the call gave it)
        """The world's session as its connection left it, if nothing changed since (one
        statement, where looking the world up and checking it takes eight)."""
        world_id = self._named.get(name)
        session = self._worlds.get(world_id) if world_id is not None else None
        if session is None or not self._main.conn.get_autocommit():
            return None
        if not placement.quiet(session):
            return None
        self._worlds.move_to_end(session.world.id if session.world else 0)
        return session

    def keep_placed(self, session: Session) -> None:
        """Within a call on a world: if a rollback took back TEMP objects made for it in the
        transaction (a table it first wrote, an FTS5 copy), placed again as the rollback left."""
        if session.world is not None and not session.past and not placement.intact(session):
            self.place_again(session)

    def place_again(self, session: Session) -> None:
        """The world's connection placed again on the world as the file has it now."""
        schema = self.schema_for(session.world, session.conn)
        placement.place(session, schema, self._history_triggers(), True, None, self._tables)

    def damaged_copies(self) -> list[tuple[str, str]]:
        """The worlds' TEMP copies of FTS5 indexes found damaged, as (branch, index); each
        such world is placed again at its next call (its copies rebuilt from its rows)."""
        with self.bounds.paused():  # (chronos' own check, after a call failed)
            return placement.damaged_copies(list(self._worlds.values()))

    def invalidate(self, world_id: int) -> None:
        """A world's rows were rewritten directly (a merge settling them, a rebase): its
        connection's materialized tables are made again at its next call."""
        session = self._worlds.get(world_id)
        if session is not None:
            session.built_for = None

    def writable(self, session: Session, *tables: str) -> Session:
        """A world's session ready for its connection to write ``tables`` directly (a program
        using the connection itself: benchmarks): each made the world's own first, as a
        statement through chronos would. Returns the session."""
        for name in tables:
            n, _t = self.table(name, session.world)
            if session.world is not None and n not in session.materialized:
                placement.materialize(session, n)
        return session

    def _past_session(self, ref: BranchRef) -> Session:
        """A branch as it was at a moment (``main@-1 hour``): its tables' views then, read only."""
        when = moments.checked_moment(self, ref.when or "")
        return self.past_session(ref.name, when, str(ref))

    def past_session(
        self, name: str, when: float, branch: str, seqs: dict | None = None, clock: int = 0
    ) -> Session:
        """Branch ``name`` as it was at ``when`` (``branch``: its spelling); main at ``seqs``, a
        world at the world ``clock`` (exact: a backup's moment) when given."""
        conn = self._main.conn
        if name == "main":
            schema = self.schema_for(None)
            base = seqs or {n: moments.seq_at(conn, n, when) for n, _t in schema.tables.values()}
            world, at = World(0, "", branch, None, "main", base, 0, OWNER, {}, 0, when), None
        else:
            world = self.world(name)
            moments.check_world_moment(conn, world, when, branch)
            schema, at = self.schema_for(world), (worldviews.Clock(clock) if clock else when)
            world = dataclasses.replace(world, name=branch)
        session = self._pooled(0)
        session.world, session.past = world, True
        key = (
            "past",
            name,
            json.dumps(world.base),
            repr(at),  # (a Clock's value reads apart from a time's)
            self._schema_version,
            worldschema.signature(conn),
        )
        if session.built_for != key:  # (main at the same seqs reads the same: kept)
            session.conn.execute("BEGIN")
            try:
                placement.place(session, schema, self._history_triggers(), False, at)
            finally:
                session.conn.execute("COMMIT")
            session.built_for = key
        return session

    def rebuild_world(self, session: Session) -> None:
        """After a schema change on the session's world, inside the transaction that made it
        (a rollback puts the old views back; the next call rebuilds them anyway)."""
        schema = self.schema_for(session.world, session.conn)
        placement.place(session, schema, self._history_triggers())
        session.built_for = None

    def schema_version(self) -> int:
        """Main's schema version as last seen (it names views that depend on the schema)."""
        self.tables()
        return self._schema_version or 0

    def keep_view(self, session: Session, name: str, most: int = 32) -> None:
        placement.keep_view(session, name, most)

    def end_call(self, session: Session) -> None:
        """A call ended: TEMP objects it created go, unless they last (``keep_temp``); chronos'
        own clean-up, which the call's limit doesn't stop (what it did may be committed)."""
        with self.bounds.paused():
            placement.end_call(session, self.keep_temp)

    def close_session(self, world_id: int) -> None:
        """A world ended: its connection goes."""
        session = self._worlds.pop(world_id, None)
        if session:
            session.conn.close()

    @property
    def main(self) -> Session:
        return self._main


__all__ = ["Database", "World", "Session", "DB_FILE"]
