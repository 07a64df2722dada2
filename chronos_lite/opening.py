"""Opening a database folder: the one place the parts are put together.

Every front end (the Python API, the CLI, the shell, ``chronos mcp``) opens its folder here, so
each gets the same database: its connections with chronos' system tables (``chronos_worlds``,
``chronos_diff('w')``, ``chronos_conflicts('w')``), history past its retention pruned (at most
once an hour), and TEMP objects kept or dropped after each call as the front end serves.
"""

from __future__ import annotations

import os

from . import vtab
from .history import prune
from .storage.db import Database


def open_folder(folder: str | os.PathLike, *, keep_temp: bool = False) -> Database:
    """The database in ``folder`` (made by ``chronos init``). ``keep_temp``: TEMP objects a call
    makes last past it (a program's connection, the shell), else each call is its own session
    (MCP and HTTP, as the spec has it)."""
    database = Database(folder, on_connect=vtab.register, keep_temp=keep_temp)
    try:
        prune.prune_if_due(database)
    except BaseException:
        database.close()
        raise
    return database
