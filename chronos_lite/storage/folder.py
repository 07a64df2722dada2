"""Creating a database folder, empty or adopting an existing SQLite file as main."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import apsw

from .. import progress
from ..errors import BAD_ARGUMENT, IN_USE, NOT_FOUND, ChronosError
from . import schemasync, shadow
from .db import DB_FILE

STEP_PAGES = 4096  # pages an adopted file's copy takes a step (16 MB at SQLite's default size)


@dataclass(frozen=True)
class Created:
    path: Path
    # the adopted tables whose integer primary key chronos made AUTOINCREMENT (nothing else of
    # the app's schema is changed), and of those, the ones whose table PRIMARY KEY clause went
    # onto its column (where SQLite takes AUTOINCREMENT)
    autoincrement: list[str]
    key_moved: list[str]


def create(folder: str | os.PathLike, from_file: str | os.PathLike | None = None) -> Created:
    """Create a database folder (and its one SQLite file); ``from_file`` becomes main."""
    folder = Path(folder)
    path = folder / DB_FILE
    if path.exists():
        raise ChronosError(f"{folder} already holds a chronos database: open it instead", IN_USE)
    if folder.exists() and not folder.is_dir():
        raise ChronosError(f"{folder} is a file: give a folder path for the database")
    if from_file is not None:
        source = Path(from_file)
        if not source.is_file():
            raise ChronosError(f"--from {source}: no such file", NOT_FOUND)
        _check_sqlite(source)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ChronosError(f"could not create the folder {folder}: {exc.strerror}") from None
    tmp = folder / (DB_FILE + ".init")
    try:
        conn = apsw.Connection(str(tmp))
        if from_file is not None:
            # The backup API copies a consistent snapshot, even of a file in use.
            src = apsw.Connection(str(from_file), flags=apsw.SQLITE_OPEN_READONLY)
            with conn.backup("main", src, "main") as backup:
                while not backup.done:  # (a step at a time: a big file's copy says how far)
                    backup.step(STEP_PAGES)
                    total, left = backup.page_count, backup.remaining
                    progress.report(f"adopting {source.name}: pages", total - left, total)
            src.close()
        conn.execute("pragma journal_mode = wal")
        conn.execute("BEGIN IMMEDIATE")
        before = schemasync.app_tables_sql(conn)
        shadow.install_base(conn)
        schemasync.sync(conn)
        schemasync.snapshot(conn)  # (what the app changes later, past chronos, is told apart)
        after = schemasync.app_tables_sql(conn)
        conn.execute("COMMIT")
        conn.close()
        os.replace(tmp, path)
    except (apsw.Error, OSError) as exc:
        _remove(tmp)
        raise ChronosError(f"could not create the database in {folder}: {exc}") from None
    finally:
        for suffix in ("-wal", "-shm", "-journal"):
            _remove(Path(str(tmp) + suffix))
    changed = sorted(name for name, sql in before.items() if after.get(name) != sql)
    moved = [name for name in changed if _without_autoincrement(after[name]) != before[name]]
    return Created(path, changed, moved)


def _without_autoincrement(sql: str) -> str:
    return re.sub(r"\s+AUTOINCREMENT\b", "", sql, flags=re.IGNORECASE)


def _check_sqlite(source: Path) -> None:
    with open(source, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise ChronosError(f"--from {source}: not an SQLite database file", BAD_ARGUMENT)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
