"""Faults of the file, the disk, the locks and the limits, each with its own message and code.

A fault is not the caller's mistake and not a bug in chronos: the disk is full, a page is corrupt,
another writer holds the lock, the call ran past its time limit. Each SQLite error class gets a
SQLSTATE-like code (Postgres' where one fits) and a message that says what happened, that
nothing was changed (the call's transaction rolled back), and what to do about it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import apsw

from ..errors import ChronosError
from . import limits, locks

DISK_FULL = "53100"
OUT_OF_MEMORY = "53200"
TOO_BIG = "54000"
LOCK_NOT_AVAILABLE = "55P03"
QUERY_CANCELED = "57014"
IO_ERROR = "58030"
FILE_GONE = "58P01"
CORRUPT = "XX001"
NOT_A_DATABASE = "XX002"
READ_ONLY = "25006"
BAD_CHARACTER = "22021"

FAULTS = (
    apsw.FullError,
    apsw.IOError,
    apsw.CantOpenError,
    apsw.CorruptError,
    apsw.NotADBError,
    apsw.ReadOnlyError,
    apsw.NoMemError,
    apsw.TooBigError,
    apsw.BusyError,
    apsw.LockedError,
    apsw.InterruptError,
)


class Opened(Protocol):
    """What a fault's message reads of the open database (``storage.db.Database``, which
    imports this module)."""

    bounds: limits.Bounds
    path: Path
    folder: Path

    def forget_pages(self) -> None: ...

    def damaged_copies(self) -> list[tuple[str, str]]: ...


def describe(exc: BaseException, db: Opened) -> ChronosError | None:
    """The fault ``exc`` is, as a ChronosError (None: not a fault). ``db``: the Database (its
    path, folder and bounds name the file and the limits)."""
    if not isinstance(exc, FAULTS):
        return None
    said = f"(SQLite: {str(exc).split(': ', 1)[-1]})"
    nothing = "nothing was changed"
    bounds: limits.Bounds = db.bounds
    if isinstance(exc, apsw.InterruptError) or (
        # (the call's stop, met as an allocation failed: an aggregate's, say)
        isinstance(exc, apsw.NoMemError) and bounds.active and bounds.stopped is not None
    ):
        return interrupted(bounds)
    if bounds.over_memory(exc):  # (one allocation past the call's memory limit)
        bounds.stopped = limits.MEMORY
        return interrupted(bounds)
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        until = (
            f"until its time limit ({bounds.limit_ms:,} ms)"
            if bounds.stopped == limits.TIMEOUT
            else f"{bounds.waited_ms():,} ms"
        )
        return ChronosError(
            f"the database is busy: {locks.holder(db.path)} holds the write lock, and this call "
            f"waited {until} for it; {nothing}: try again",
            LOCK_NOT_AVAILABLE,
        )
    if isinstance(exc, apsw.FullError):
        return ChronosError(
            f"the disk is full {said}: {nothing}; free space on the disk holding {db.folder} "
            f"(or raise PRAGMA max_page_count if it is set) and try again",
            DISK_FULL,
        )
    if isinstance(exc, apsw.IOError | apsw.CantOpenError):
        return ChronosError(
            f"I/O error on {db.path} {said}: {nothing}; check the disk and that the folder is "
            f"still there, then try again",
            IO_ERROR,
        )
    vtab = getattr(exc, "extendedresult", 0) == apsw.SQLITE_CORRUPT_VTAB
    if isinstance(exc, apsw.CorruptError) and vtab:
        return _index_damaged(db, said, nothing)
    if isinstance(exc, apsw.CorruptError | apsw.NotADBError):
        db.forget_pages()  # a bad read must not stay in the page cache once the disk reads right
    if isinstance(exc, apsw.CorruptError):
        return ChronosError(
            f"the database file {db.path} is corrupt {said}: {nothing}; see what is damaged with "
            f'`chronos {db.folder} sql "pragma integrity_check"` and restore it from a backup',
            CORRUPT,
        )
    if isinstance(exc, apsw.NotADBError):
        return ChronosError(
            f"{db.path} is not a SQLite database {said}: was it overwritten? {nothing}; put "
            f"the database file back (from a backup) and restart chronos",
            NOT_A_DATABASE,
        )
    if isinstance(exc, apsw.ReadOnlyError):
        return ChronosError(
            f"the database can't be written {said}: {nothing}; check that {db.path} and its "
            f"folder are writable by this user",
            READ_ONLY,
        )
    if isinstance(exc, apsw.NoMemError):
        limit = apsw.hard_heap_limit(-1)
        within = (
            f" (its SQLite memory limit is {limit // 2**20:,} MB: chronos mcp --max-memory-mb "
            f"raises it)"
            if limit
            else ""
        )
        return ChronosError(
            f"out of memory {said}: the call needed more memory than this process has{within}; "
            f"{nothing}: ask for less (LIMIT, fewer or shorter values: substr(), length())",
            OUT_OF_MEMORY,
        )
    return ChronosError(  # TooBigError
        f"a value or a statement is too big for SQLite {said}: {nothing}; split it, or read "
        f"long values in parts with substr()",
        TOO_BIG,
    )


def _index_damaged(db: Opened, said: str, nothing: str) -> ChronosError:
    """A virtual table found its own data inconsistent (an FTS5 index: SQLite's pages are
    sound): a world's TEMP copy of one (rebuilt at the world's next call), or one of main's."""
    copies = db.damaged_copies()
    if copies:
        which = ", ".join(f"{name} (on {branch})" for branch, name in copies)
        return ChronosError(
            f"a world's temporary copy of a full-text index is damaged: {which} {said}; "
            f"{nothing}, and the database file is fine: the copy is rebuilt from the world's "
            f"rows at its next call, try again",
            CORRUPT,
        )
    return ChronosError(
        f"a full-text index (FTS5) is damaged, or out of step with its table's rows {said}: "
        f"{nothing}; the index's own data is wrong, not the file's pages (an FTS5 'delete' "
        f"must give the values the row was indexed with): rebuild the index with INSERT INTO "
        f"<index>(<index>) VALUES ('rebuild'), and check the file with `chronos {db.folder} "
        f'sql "pragma integrity_check"`',
        CORRUPT,
    )


def interrupted(bounds: limits.Bounds) -> ChronosError:
    """The call was stopped: by its time limit, a cancel, or Ctrl-C."""
    error = _interrupted(bounds)
    if not bounds.commits:
        return error
    # (stopped after a write it committed, building its reply say: the write stays)
    kept = "stopped after its change was committed (the change stays: look before trying again)"
    return ChronosError(error.message.replace("rolled back, nothing was changed", kept), error.code)


def _interrupted(bounds: limits.Bounds) -> ChronosError:
    if bounds.stopped == limits.TIMEOUT:
        whose = bounds.limit_from or "its limit"
        if bounds.limit_from.startswith("merge check"):
            return ChronosError(
                f"canceling statement due to statement timeout: the call ran past {whose} of "
                f"{bounds.limit_ms:,} ms and was rolled back, nothing was changed; a merge the "
                f"check doesn't finish in is refused: make the check cheaper, or give it a "
                f"longer timeout_ms (CREATE OR REPLACE MERGE CHECK ... WITH (timeout_ms = ...))",
                QUERY_CANCELED,
            )
        raise_it = (
            "raise it (chronos <folder> agent alter <name> --max-query-ms)"
            if bounds.limit_from.startswith("agent")
            else "raise the limit (chronos mcp --max-query-ms; in Python, Caller(max_query_ms=...))"
        )
        return ChronosError(
            f"canceling statement due to statement timeout: the call ran past {whose} of "
            f"{bounds.limit_ms:,} ms and was rolled back, nothing was changed; ask for less "
            f"(LIMIT, a narrower WHERE), or {raise_it}",
            QUERY_CANCELED,
        )
    if bounds.stopped == limits.MEMORY:
        return ChronosError(
            f"canceling statement due to its memory limit: it took more than "
            f"{bounds.memory_from or 'its limit'} of {bounds.memory_mb:,} MB (SQLite's memory "
            f"beyond what was in use when the call began) and was rolled back, nothing was "
            f"changed; ask for less (LIMIT, fewer or shorter values, no ORDER BY over a big "
            f"result), or raise the limit",
            OUT_OF_MEMORY,
        )
    if bounds.stopped == limits.CANCELLED:
        return ChronosError(
            "canceling statement due to user request: the call was cancelled and rolled back, "
            "nothing was changed",  # (interrupted() words it when a commit came first)
            QUERY_CANCELED,
        )
    return ChronosError("cancelled: the statement was stopped; nothing changed", QUERY_CANCELED)
