"""Every call is bounded: a statement time limit, cancellation, and how long it waits for a lock.

One ``Bounds`` per open database (its connections serve one call at a time). A call runs inside
``Bounds.call``: SQLite's progress handler, installed on every connection, interrupts it once
its time limit has passed or someone cancelled it (``cancel`` is safe from another thread: the
MCP server's reader calls it for ``notifications/cancelled``). A call interrupted this way
rolls back: nothing of it stays, and it releases the write lock it held.

A writer that finds the write lock taken waits in short polls (so it gets its turn beside a
writer in a tight loop), at most ``BUSY_MS`` and never past its own time limit, then fails with
a busy error naming who holds the lock (see ``locks``). And a writer gives others their turn:
while other connections are writing too (SQLite's ``data_version`` moved since its own last
commit), each of its commits is followed by a pause of ``YIELD_S``, long enough for a writer
whose busy handler sleeps in steps of a millisecond or more (Python's ``sqlite3``) to find the
lock free; a writer that had to wait for the lock itself doesn't pause. Alone, a writer never
pauses.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import apsw

from .fetch import all_rows

# A person's write outlasts an agent's call at its default limit (30 s) rather than fail.
BUSY_MS = 35_000
AGENT_QUERY_MS = 30_000  # safe mode's (and agents') statement time limit by default
PROGRESS_EVERY = 1000  # SQLite VM steps between checks (no cost measurable on a 2M-row scan)
YIELD_S = 0.0003  # the pause after a commit while others write too
CONTENDED_S = 0.25  # how long another's commit counts as others writing
TIMEOUT, CANCELLED, MEMORY = "timeout", "cancelled", "memory"


@dataclass(frozen=True)
class Limits:
    """A call's time limit (ms) and memory limit (MB), None for none, each with whose it is
    for the error that stops a statement at it ("agent bot's max_query_ms")."""

    ms: int | None = None
    ms_from: str = ""
    memory_mb: int | None = None
    memory_from: str = ""


NONE = Limits()


@dataclass
class Bounds:
    """The running call's limits, checked from SQLite's progress and busy handlers."""

    busy_ms: int = BUSY_MS
    limit_ms: int | None = None  # the running call's time limit
    deadline: float | None = None  # ... as a time.monotonic() moment
    limit_from: str = ""  # whose limit it is, for the error ("agent bot's max_query_ms")
    memory_mb: int | None = None  # the running call's memory limit, in MB
    memory_from: str = ""
    _memory_cap: int | None = None  # ... as SQLite's heap in use, in bytes
    _memory_at: int = 0  # SQLite's heap in use when the call began
    _started: float = 0.0
    stopped: str | None = None  # why the running call is being stopped (TIMEOUT, CANCELLED)
    active: bool = False
    _busy_since: float = 0.0
    _versions: dict[int, int] = field(default_factory=dict)  # per connection: data_version
    _others_until: float = 0.0  # others wrote recently (until then, commits pause)
    _waited: bool = False  # the busy handler waited since the last commit

    def begin(self, limits: Limits = NONE) -> bool:
        """A call starts (True); False if one runs already (calls don't nest: the inner one
        keeps the outer's limits, and mustn't end it). Pair with ``end``. A memory limit is how
        much more of SQLite's heap (the process') than at the start the call may take."""
        if self.active:
            return False
        self.active, self.stopped = True, None
        self._started, self._memory_at = time.monotonic(), apsw.memory_used()
        self.reset(limits)
        return True

    def reset(self, limits: Limits) -> None:
        """The running call's limits are these (counted from its start): an agent's quotas
        read afresh once its call has begun."""
        self.limit_ms = self.memory_mb = self.deadline = self._memory_cap = None
        self.narrow(limits)

    def narrow(self, limits: Limits) -> None:
        """Hold the running call to these limits too, where they are less (an inner call's
        caller, read afresh, may have a smaller quota than the call began with)."""
        if limits.ms and (self.limit_ms is None or limits.ms < self.limit_ms):
            self.limit_ms, self.limit_from = limits.ms, limits.ms_from
            self.deadline = self._started + limits.ms / 1000
        if limits.memory_mb and (self.memory_mb is None or limits.memory_mb < self.memory_mb):
            self.memory_mb, self.memory_from = limits.memory_mb, limits.memory_from
            self._memory_cap = self._memory_at + limits.memory_mb * 2**20

    @contextlib.contextmanager
    def within(self, limit_ms: int, limit_from: str) -> Iterator[None]:
        """A part of the running call held to a shorter limit of its own (a merge check's
        timeout_ms): a timeout there names it; the call's own limit holds again after."""
        if not self.active:
            yield
            return
        saved = (self.limit_ms, self.limit_from, self.deadline)
        deadline = time.monotonic() + limit_ms / 1000
        if self.deadline is None or deadline < self.deadline:
            self.limit_ms, self.limit_from, self.deadline = limit_ms, limit_from, deadline
        try:
            yield
        finally:
            if self.stopped is None:  # (stopped: the error names the limit that stopped it)
                self.limit_ms, self.limit_from, self.deadline = saved

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Chronos' own bookkeeping within a call (its audit entry, the clean-up after it): not
        the caller's work, so neither its time limit nor a cancel stops it, and a lock it needs
        it waits for as any write does (``BUSY_MS``). The call's limits hold again after."""
        saved = (self.active, self.deadline, self.stopped, self._memory_cap)
        self.active, self.deadline, self.stopped, self._memory_cap = False, None, None, None
        try:
            yield
        finally:
            self.active, self.deadline, self.stopped, self._memory_cap = saved

    def end(self, began: bool) -> None:
        if began:
            self.active, self.deadline, self.limit_ms = False, None, None
            self.memory_mb = self._memory_cap = None

    def cancel(self, why: str = CANCELLED) -> None:
        """Stop the running call at its next check (from any thread); nothing if none runs."""
        if self.active and self.stopped is None:
            self.stopped = why

    # --- SQLite's handlers ---------------------------------------------------------------------

    def progress(self) -> bool:
        """True stops the statement (SQLite then fails it with SQLITE_INTERRUPT)."""
        if not self.active:
            return False
        if self.stopped is not None:
            return True
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stopped = TIMEOUT
            return True
        if self._memory_cap is not None and apsw.memory_used() > self._memory_cap:
            self.stopped = MEMORY
            return True
        return False

    def busy(self, tries: int) -> bool:
        """Wait for the lock a little longer (True), or give up (False: SQLITE_BUSY)."""
        now = time.monotonic()
        self._waited = True
        if tries == 0:
            self._busy_since = now
        until = self._busy_since + self.busy_ms / 1000
        deadline = self.deadline if self.active else None  # (no call, or its bookkeeping)
        if deadline is not None:
            until = min(until, deadline)
        stopped = self.active and self.stopped is not None
        if now >= until or stopped:
            if deadline is not None and now >= deadline and not stopped:
                self.stopped = TIMEOUT
            return False
        # Short polls: the lock is free only for moments beside a busy writer.
        time.sleep(min(0.00005 if tries < 40 else 0.0005 * (1 + tries // 40), 0.005, until - now))
        return True

    def committed(self, conn: apsw.Connection) -> None:
        """After a write transaction's commit on ``conn``: if others are writing too and this
        one got the lock without waiting, pause so that they get it next."""
        version = all_rows(conn.execute("pragma data_version"))[0][0]  # (all: stays cached)
        now = time.monotonic()
        if self._versions.get(id(conn), version) != version:  # another connection committed
            self._others_until = now + CONTENDED_S
        self._versions[id(conn)] = version
        waited, self._waited = self._waited, False
        if now < self._others_until and not waited:
            time.sleep(YIELD_S)

    def install(self, conn: apsw.Connection) -> None:
        conn.set_progress_handler(self.progress, PROGRESS_EVERY)
        conn.set_busy_handler(self.busy)

    def waited_ms(self) -> int:
        """How long the last wait for the lock took, in whole ms; at most the longest wait
        (the handler's last poll may end a moment past it: it gave up at that limit)."""
        return min(int((time.monotonic() - self._busy_since) * 1000), self.busy_ms)
