"""Databases on one folder for calls on several threads (``chronos serve``'s requests, the
sessions joined over the folder's socket): each database serves one call at a time, and keeps
what it learns (tables, worlds, search indexes) for the calls after it, whoever makes them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..storage.db import Database


class Databases:
    """At most ``size`` databases, opened as calls need them; a call beyond them waits for one
    to be free (SQLite serves readers side by side and one writer at a time, as between
    processes). The one freed last is taken first: its caches are the warmest."""

    def __init__(self, open_db: Callable[[], Database], size: int = 4) -> None:
        self.open_db, self.size = open_db, size
        self._free: list[Database] = []
        self._made: list[Database] = []
        self._opening = 0  # (opened outside the lock: they count against the size meanwhile)
        self._changed = threading.Condition()

    def add(self, db: Database) -> None:
        """A database opened already (the one a server checked its folder with)."""
        with self._changed:
            self._made.append(db)
            self._free.append(db)
            self._changed.notify()

    @contextmanager
    def lease(self) -> Iterator[Database]:
        """A database for one call, free again after it."""
        db = self._take()
        try:
            yield db
        finally:
            with self._changed:
                self._free.append(db)
                self._changed.notify()

    def _take(self) -> Database:
        with self._changed:
            while not self._free and len(self._made) + self._opening >= self.size:
                self._changed.wait()
            if self._free:
                return self._free.pop()
            self._opening += 1
        db: Database | None = None
        try:
            db = self.open_db()
            return db
        finally:
            with self._changed:
                self._opening -= 1
                if db is not None:
                    self._made.append(db)
                self._changed.notify()

    def close(self) -> None:
        with self._changed:
            made, self._made, self._free = self._made, [], []
        for db in made:
            db.close()
