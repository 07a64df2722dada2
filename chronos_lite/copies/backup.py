"""backup: a database folder copied, online, into a new folder.

SQLite's online backup (apsw's) copies the file page by page from a connection that holds one
read transaction from the first page to the last: in WAL mode writers go on committing
meanwhile, and the copy is the file exactly as it was when that transaction began (main, every
world, the history kept, agents, policies: chronos keeps all of them in the one file). The copy
is made in a hidden folder beside the destination (``.<name>.partial-<pid>``) and takes the
destination's name only once it is complete and checked (``operations/backups.py``): a backup
killed half way leaves no folder that looks like a database.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

from .. import progress
from ..errors import BAD_ARGUMENT, IN_USE, ChronosError
from ..storage import events, faults
from ..storage.db import DB_FILE, Database
from ..storage.fetch import all_rows
from . import staging

STEP_PAGES = 4096  # pages a step copies (16 MB at SQLite's default page size)


@dataclass
class Snapshot:
    """What the source held when the copy's read transaction began."""

    moment: float  # when it began (time.time())
    seqs: dict[int, int]  # main's tables' last history seqs: main exactly as copied
    clock: int  # the world clock: every world exactly as copied
    worlds: dict[str, int]  # open worlds, by name: their versions


@dataclass
class Copied:
    partial: Path  # the finished copy's folder, not yet under its name
    snapshot: Snapshot
    pages: int
    bytes: int


def destination(db: Database, to: str, replace: bool) -> Path:
    """The folder a backup goes to, checked (nothing made yet)."""
    dest = Path(to).expanduser().absolute()
    source = db.folder.absolute()
    if dest == source or source in dest.parents:
        raise ChronosError(
            f"a backup can't go into the database's own folder ({source}): give a folder "
            f"outside it",
            BAD_ARGUMENT,
        )
    if dest.exists() and not replace:
        what = "a chronos database" if (dest / DB_FILE).exists() else "something"
        raise ChronosError(
            f"{dest} exists already (it holds {what}): give a new folder, or replace it "
            f"(--replace; it is replaced only once the new copy is complete and checked)",
            IN_USE,
        )
    if dest.exists() and not (dest / DB_FILE).is_file() and any(dest.iterdir()):
        raise ChronosError(
            f"{dest} is a folder that holds no chronos database: a backup replaces only a "
            f"database folder; give a new folder",
            IN_USE,
        )
    return dest


def copy(db: Database, dest: Path) -> Copied:
    """The database file copied into a hidden folder beside ``dest`` (``publish`` names it)."""
    partial = staging.hidden(dest, "partial")
    try:
        src = apsw.Connection(str(db.path), flags=apsw.SQLITE_OPEN_READONLY)
        dst = apsw.Connection(str(partial / DB_FILE))
        try:
            src.execute("BEGIN")
            snapshot = _snapshot(db, src)
            pages = _pages(src, dst)
            src.execute("COMMIT")
            _mark(dst, db, snapshot)
        finally:
            dst.close()
            src.close()
    except BaseException as exc:
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, faults.FAULTS):
            raise faults.describe(exc, db) or exc from None
        raise
    return Copied(partial, snapshot, pages, (partial / DB_FILE).stat().st_size)


def publish(copied: Copied, dest: Path, replace: bool) -> None:
    """The checked copy takes the destination's name (an older copy there goes only then)."""
    staging.publish(copied.partial, dest, replace)


def discard(copied: Copied) -> None:
    shutil.rmtree(copied.partial, ignore_errors=True)


def _snapshot(db: Database, src: apsw.Connection) -> Snapshot:
    """Read inside the copy's read transaction: what the copy holds."""
    seqs = events.positions(src, db.tables())
    open_worlds = "SELECT name, version FROM main._chronos_worlds WHERE state = 'open'"
    worlds = dict(all_rows(src.execute(open_worlds)))
    return Snapshot(time.time(), seqs, events.clock(src), worlds)


def _pages(src: apsw.Connection, dst: apsw.Connection) -> int:
    with dst.backup("main", src, "main") as backup:
        while not backup.done:
            backup.step(STEP_PAGES)
            total = backup.page_count
            progress.report("backing up: pages copied", total - backup.remaining, total)
        pages = backup.page_count
    return pages


def _mark(dst: apsw.Connection, db: Database, snapshot: Snapshot) -> None:
    """The copy says what it is a copy of, and when (``verify`` compares it with that)."""
    marks = {
        "copied_from": str(db.folder.absolute()),
        "copied_at": snapshot.moment,
        "copied_seqs": json.dumps(snapshot.seqs),
        "copied_clock": snapshot.clock,
    }
    dst.execute("pragma synchronous = full")
    with dst:
        dst.executemany(
            "INSERT OR REPLACE INTO main._chronos_meta(key, value) VALUES (?, ?)", marks.items()
        )
    dst.execute("pragma wal_checkpoint(TRUNCATE)")
