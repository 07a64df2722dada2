"""Who holds a database's write lock, for the busy error's message.

In WAL mode SQLite's write lock is a POSIX lock on byte 120 of the ``-shm`` file (os_unix.c:
``UNIX_SHM_BASE`` + ``WAL_WRITE_LOCK``). Linux lists every POSIX lock in ``/proc/locks`` with the
process holding it, so the holder is found without opening the file: opening and closing any
file SQLite has open would drop this process's own locks on it (POSIX locks belong to the
process, and any close releases them), which SQLite's safety rests on. Best effort: where locks
can't be listed, the message says only that another writer holds it.
"""

from __future__ import annotations

import os
from pathlib import Path

WAL_WRITE_LOCK_BYTE = 120
PROC_LOCKS = Path("/proc/locks")


def holder_pid(db_path: Path) -> int | None:
    """The process holding the write lock of ``db_path`` (None: no one, or unknown)."""
    try:
        st = os.stat(f"{db_path}-shm")
        listing = PROC_LOCKS.read_text()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in listing.splitlines():
        # "1: POSIX  ADVISORY  WRITE 3274 fe:00:2155399 120 120"
        parts = line.split()
        if "->" in parts:  # a process waiting for that lock, not holding it
            continue
        if len(parts) >= 8 and parts[1] == "POSIX" and parts[3] == "WRITE" and parts[5] == device:
            start, end = int(parts[6]), parts[7]
            last = int(end) if end != "EOF" else WAL_WRITE_LOCK_BYTE
            if start <= WAL_WRITE_LOCK_BYTE <= last:
                return int(parts[4])
    return None


def holder(db_path: Path) -> str:
    """Who holds the write lock, in words."""
    pid = holder_pid(db_path)
    if pid is None:
        return "another writer"
    if pid == os.getpid():
        return f"another connection of this process ({pid})"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        words = (" ".join(part.decode(errors="replace").split()) for part in command)
        shown = " ".join(word for word in words if word)  # (it ends in a NUL: no last word)
    except OSError:
        shown = ""
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return f"process {pid}" + (f" ({shown})" if shown else "")
