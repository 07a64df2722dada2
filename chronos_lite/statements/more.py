"""Another database on an open one's folder, for a thread of one call's own (simulate's
workers: a ``Database`` isn't shared between threads), or on another folder (a backup's copy, a
verify's source). Made the composition root's way (``opening`` registers how), so its
connections get what every connection gets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

if TYPE_CHECKING:
    from ..storage.db import Database

Hook = Callable[[apsw.Connection], None]
_OPENERS: list[Callable[[Path, Hook | None], Database]] = []


def register(opener: Callable[[Path, Hook | None], Database]) -> None:
    """How another database is opened (``opening``'s, as it is imported)."""
    _OPENERS[:] = [opener]


def another(db: Database, on_connect: Hook | None = None) -> Database:
    """A database of its own on ``db``'s folder, ``on_connect`` run on each of its connections
    after chronos' own hook; the caller closes it."""
    return elsewhere(db.folder, on_connect)


def elsewhere(folder: Path, on_connect: Hook | None = None) -> Database:
    """The database in ``folder`` (no pruning: it is read as it is); the caller closes it."""
    if not _OPENERS:
        raise RuntimeError("no opener: open the folder with chronos_lite.opening.open_folder")
    return _OPENERS[0](folder, on_connect)
