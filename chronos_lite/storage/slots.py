"""An agent's calls at once, counted across every process serving the folder (``max_concurrent``).

A call takes one of the agent's slots: files ``<folder>/running/<agent>.<n>`` for n below its
quota, each held with an exclusive ``flock`` while the call runs. flock belongs to the open
file, so two calls of one process count twice, and the kernel lets go of a slot when its process
ends, however it ends: a crashed server never keeps a slot taken. No slot free: the call is
refused at once (it doesn't wait), naming the quota.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import ChronosError

TOO_MANY = "53300"  # Postgres' too_many_connections
DIRECTORY = "running"


class Slot:
    """A slot taken; ``release`` (or ``with``) gives it back."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # (closing lets go of the flock)
            self._fd = None

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def take(folder: Path, agent: str, quota: int) -> Slot:
    """One of the agent's ``quota`` slots, or a clear refusal if all are taken."""
    where = folder / DIRECTORY
    where.mkdir(exist_ok=True)
    for n in range(quota):
        fd = os.open(where / f"{agent.lower()}.{n}", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return Slot(fd)
    raise ChronosError(
        f"too many calls at once: agent {agent} may run {quota} at a time (its max_concurrent), "
        f"and {quota} run now, in this process or another serving {folder}; nothing was done: "
        f"wait for one to finish and call again",
        TOO_MANY,
    )
