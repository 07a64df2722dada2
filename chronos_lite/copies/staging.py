"""A copy made in a hidden folder beside its destination (``.<name>.<what>-<pid>``) and given
the destination's name only once it is whole and checked: a copy killed half way leaves no
folder that looks like a database, and the next copy to that destination clears what a dead
process left."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import IN_USE, ChronosError


def hidden(dest: Path, what: str) -> Path:
    """A new, empty hidden folder beside ``dest`` for a copy in the making."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    for left in dest.parent.glob(f".{dest.name}.{what}-*"):
        pid = left.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)
    folder = dest.parent / f".{dest.name}.{what}-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    return folder


def publish(folder: Path, dest: Path, replace: bool = False) -> None:
    """The finished copy takes ``dest``'s name (with ``replace``, a folder there goes only
    then), and the name is on the disk before this returns."""
    if dest.exists() and not replace:  # (made meanwhile by someone else: left alone)
        raise ChronosError(f"{dest} appeared meanwhile; nothing was changed", IN_USE)
    old = dest.parent / f".{dest.name}.replaced-{os.getpid()}" if dest.exists() else None
    if old is not None:
        os.rename(dest, old)
    os.rename(folder, dest)
    fd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
