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

A memory limit holds for each allocation too, not only between the steps the progress handler
sees (one call of randomblob() or printf() asks for all it builds at once): while the call runs,
no value may be longer than the limit (SQLite's ``SQLITE_LIMIT_LENGTH`` on each connection),
and in a process with a heap limit of its own (``chronos mcp``: one process per session, its
``--max-memory-mb``) that limit is lowered to the heap in use when the call began plus the
call's limit. Chronos' own bookkeeping runs with the call's limits paused (``paused``).
"""

from __future__ import annotations

import contextlib
import time
import weakref
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


class Allocations:
    """SQLite's own limits on what one allocation may take, held to a call's memory limit while
    it runs (``hold``) and given back after (``release``)."""

    def __init__(self) -> None:
        # every connection of the database, with its own length limit
        self._conns: weakref.WeakKeyDictionary[apsw.Connection, int] = weakref.WeakKeyDictionary()
        self.length: int | None = None  # the longest value while held
        self.heap: tuple[int, int] | None = None  # the process' own (hard, soft) while lowered

    def add(self, conn: apsw.Connection) -> None:
        self._conns[conn] = conn.limit(apsw.SQLITE_LIMIT_LENGTH)
        if self.length is not None:  # (opened within a call: a world's first)
            _set_length(conn, min(self.length, self._conns[conn]))

    def hold(self, heap_cap: int, length: int) -> None:
        """No value longer than ``length`` bytes; SQLite's heap in all at most ``heap_cap``
        bytes where the process has a heap limit (and it is more)."""
        self.release()
        self.length = length
        for conn, own in list(self._conns.items()):
            _set_length(conn, min(length, own))
        hard = apsw.hard_heap_limit(-1)
        if 0 < heap_cap < hard:
            self.heap = (hard, apsw.soft_heap_limit(-1))
            apsw.hard_heap_limit(heap_cap)  # (it lowers the soft limit too: put back after)

    def release(self) -> None:
        if self.length is not None:
            for conn, own in list(self._conns.items()):
                _set_length(conn, own)
            self.length = None
        if self.heap is not None:
            hard, soft = self.heap
            apsw.hard_heap_limit(hard)
            apsw.soft_heap_limit(soft)
            self.heap = None


def _set_length(conn: apsw.Connection, most: int) -> None:
    try:
        conn.limit(apsw.SQLITE_LIMIT_LENGTH, most)
    except apsw.ConnectionClosedError:
        pass  # (a world's connection closed, not yet collected)


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
    # per connection: its data_version, and how many commits this database's connections
    # had made, at its last commit
    _versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    _ours: int = 0  # commits this database's connections made
    _others_until: float = 0.0  # others wrote recently (until then, commits pause)
    _waited: bool = False  # the busy handler waited since the last commit
    commits: int = 0  # write transactions the running call committed (a stop keeps them)
    _allocations: Allocations = field(default_factory=Allocations)

    def begin(self, limits: Limits = NONE) -> bool:
        """A call starts (True); False if one runs already (calls don't nest: the inner one
        keeps the outer's limits, and mustn't end it). Pair with ``end``. A memory limit is how
        much more of SQLite's heap (the process') than at the start the call may take."""
        if self.active:
            return False
        self.active, self.stopped, self.commits = True, None, 0
        self._started, self._memory_at = time.monotonic(), apsw.memory_used()
        self.reset(limits)
        return True

    def reset(self, limits: Limits) -> None:
        """The running call's limits are these (counted from its start): an agent's quotas
        read afresh once its call has begun."""
        self.limit_ms = self.memory_mb = self.deadline = self._memory_cap = None
        self.narrow(limits)
        self._hold_memory()

    def narrow(self, limits: Limits) -> None:
        """Hold the running call to these limits too, where they are less (an inner call's
        caller, read afresh, may have a smaller quota than the call began with)."""
        if limits.ms and (self.limit_ms is None or limits.ms < self.limit_ms):
            self.limit_ms, self.limit_from = limits.ms, limits.ms_from
            self.deadline = self._started + limits.ms / 1000
        if limits.memory_mb and (self.memory_mb is None or limits.memory_mb < self.memory_mb):
            self.memory_mb, self.memory_from = limits.memory_mb, limits.memory_from
            self._memory_cap = self._memory_at + limits.memory_mb * 2**20
            self._hold_memory()

    def _hold_memory(self) -> None:
        """SQLite's limits on one allocation held to the running call's memory limit."""
        if self.active and self.memory_mb is not None and self._memory_cap is not None:
            self._allocations.hold(self._memory_cap, self.memory_mb * 2**20)
        else:
            self._allocations.release()

    def over_memory(self, exc: BaseException) -> bool:
        """Whether SQLite's error is the running call's memory limit, held on one allocation:
        a value longer than it, or the heap limit lowered to it reached."""
        if not self.active:
            return False
        if isinstance(exc, apsw.TooBigError):
            return self._allocations.length is not None and "statement too long" not in str(exc)
        return isinstance(exc, apsw.NoMemError) and self._allocations.heap is not None

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
        self._allocations.release()
        try:
            yield
        finally:
            self.active, self.deadline, self.stopped, self._memory_cap = saved
            self._hold_memory()

    def end(self, began: bool) -> None:
        if began:
            self.active, self.deadline, self.limit_ms = False, None, None
            self.memory_mb = self._memory_cap = None
            self._allocations.release()

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

    def committed(self, conn: apsw.Connection, version: int | None = None) -> None:
        """After a write transaction's commit on ``conn``: if others are writing too and this
        one got the lock without waiting, pause so that they get it next. ``version``: the
        connection's data_version as its transaction began (else read now). Another process's
        commit counts; one of this database's own other connections doesn't (its calls take
        turns already)."""
        if self.active:
            self.commits += 1
        if version is None:
            version = all_rows(conn.execute("pragma data_version"))[0][0]  # (all: cached)
        now = time.monotonic()
        last, ours = self._versions.get(id(conn), (version, self._ours))
        if last != version and ours == self._ours:  # another process committed
            self._others_until = now + CONTENDED_S
        self._ours += 1
        self._versions[id(conn)] = (version, self._ours)
        waited, self._waited = self._waited, False
        if now < self._others_until and not waited:
            time.sleep(YIELD_S)

    def install(self, conn: apsw.Connection) -> None:
        conn.set_progress_handler(self.progress, PROGRESS_EVERY)
        conn.set_busy_handler(self.busy)
        self._allocations.add(conn)

    def waited_ms(self) -> int:
        """How long the last wait for the lock took, in whole ms; at most the longest wait
        (the handler's last poll may end a moment past it: it gave up at that limit)."""
        return min(int((time.monotonic() - self._busy_since) * 1000), self.busy_ms)
