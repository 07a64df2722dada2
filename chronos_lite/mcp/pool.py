"""Databases on one folder for calls on several threads (``chronos serve``'s requests, the
sessions joined over the folder's socket): each database serves one call at a time, and keeps
what it learns (tables, worlds, search indexes) for the calls after it, whoever makes them."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..storage.db import Database


class Databases:
    """At most ``size`` databases, opened as calls need them; a call beyond them waits for one
    to be free (SQLite serves readers side by side and one writer at a time, as between
    processes)."""

    def __init__(self, open_db: Callable[[], Database], size: int = 4) -> None:
        self.open_db, self.size = open_db, size
        self._free: queue.SimpleQueue[Database] = queue.SimpleQueue()
        self._made: list[Database] = []
        self._lock = threading.Lock()  # (two threads mustn't both open the last one)

    def add(self, db: Database) -> None:
        """A database opened already (the one a server checked its folder with)."""
        with self._lock:
            self._made.append(db)
        self._free.put(db)

    @contextmanager
    def lease(self) -> Iterator[Database]:
        """A database for one call, free again after it."""
        db = self._take()
        try:
            yield db
        finally:
            self._free.put(db)

    def _take(self) -> Database:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            with self._lock:
                opening = len(self._made) < self.size
                if opening:
                    db = self.open_db()
                    self._made.append(db)
            if opening:
                return db
        return self._free.get()

    def close(self) -> None:
        with self._lock:
            made, self._made = self._made, []
        for db in made:
            db.close()
