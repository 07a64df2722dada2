"""An agent's calls at once, counted across every process serving the folder (``max_concurrent``).

A call takes one of the agent's slots: files ``<folder>/running/<agent>.<n>`` for n below its
quota, each held with an exclusive ``flock`` while the call runs. The kernel lets go of a slot
when its process ends, however it ends: a crashed server never keeps a slot taken. A process
keeps its slot files open and counts its own calls' slots itself, so two calls of one process
count twice. No slot free: the call is
refused at once (it doesn't wait), naming the quota.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from ...errors import ChronosError

TOO_MANY = "53300"  # Postgres' too_many_connections
DIRECTORY = "running"


class _Pool:
    """A process' slot files of one agent, kept open (taking a slot is then one flock call),
    and which of them this process' calls hold (a call of another thread can't take those:
    flock counts per open file, and this process has one per slot)."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.lock = threading.Lock()
        self.fds: dict[int, int] = {}
        self.busy: set[int] = set()

    def fd(self, n: int, agent: str) -> int:
        if n not in self.fds:
            self.where.mkdir(exist_ok=True)
            self.fds[n] = os.open(self.where / f"{agent}.{n}", os.O_RDWR | os.O_CREAT, 0o600)
        return self.fds[n]


_POOLS: dict[tuple[str, str], _Pool] = {}


class Slot:
    """A slot taken; ``release`` (or ``with``) gives it back."""

    def __init__(self, pool: _Pool, n: int) -> None:
        self._pool: _Pool | None = pool
        self._n = n

    def release(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with pool.lock:
                fcntl.flock(pool.fds[self._n], fcntl.LOCK_UN)
                pool.busy.discard(self._n)

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def take(folder: Path, agent: str, quota: int) -> Slot:
    """One of the agent's ``quota`` slots, or a clear refusal if all are taken."""
    name = agent.lower()
    pool = _POOLS.get((str(folder), name))
    if pool is None:
        pool = _POOLS[str(folder), name] = _Pool(Path(folder) / DIRECTORY)
    with pool.lock:
        for n in range(quota):
            if n in pool.busy:
                continue
            try:
                fcntl.flock(pool.fd(n, name), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            pool.busy.add(n)
            return Slot(pool, n)
    raise ChronosError(
        f"too many calls at once: agent {agent} may run {quota} at a time (its max_concurrent), "
        f"and {quota} run now, in this process or another serving {folder}; nothing was done: "
        f"wait for one to finish and call again",
        TOO_MANY,
    )
