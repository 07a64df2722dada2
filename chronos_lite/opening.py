"""Opening a database folder: the one place the parts are put together.

Every front end (the Python API, the CLI, the shell, ``chronos mcp``) opens its folder here, so
each gets the same database: its connections with chronos' system tables (``chronos_worlds``,
``chronos_diff('w')``, ``chronos_conflicts('w')``), history past its retention pruned (at most
once an hour), and TEMP objects kept or dropped after each call as the front end serves.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import apsw

from . import vtab
from .history import prune
from .statements import more
from .storage.db import Database


def open_folder(folder: str | os.PathLike, *, keep_temp: bool = False) -> Database:
    """The database in ``folder`` (made by ``chronos init``). ``keep_temp``: TEMP objects a call
    makes last past it (a program's connection, the shell), else each call is its own session
    (MCP and HTTP, as the spec has it)."""
    database = _database(folder, vtab.register, keep_temp)
    try:
        prune.prune_if_due(database)
    except BaseException:
        database.close()
        raise
    return database


def open_more(folder: Path, on_connect: more.Hook | None = None) -> Database:
    """Another database on an open one's folder, for a thread of a call's own (or on another
    folder, read as it is): its connections get the system tables, then ``on_connect``; TEMP
    objects kept between its calls; no pruning (the first did that)."""

    def connected(db: Database, conn: apsw.Connection) -> None:
        vtab.register(db, conn)
        if on_connect is not None:
            on_connect(conn)

    return _database(folder, connected, True)  # (a world's TEMP objects last: one
    # thread's, closed at its end, so its script's and its score's calls share what they build)


def _database(
    folder: str | os.PathLike, hook: Callable[[Database, apsw.Connection], None], keep_temp: bool
) -> Database:
    return Database(folder, on_connect=hook, keep_temp=keep_temp)


more.register(open_more)
