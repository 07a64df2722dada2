"""A copy made beside its destination under a hidden name (``.<name>.<what>-<pid>``: a folder,
or a file) and given the destination's name only once it is whole and checked: a copy killed
half way leaves nothing that looks like a database, and the next copy to that destination clears
what a dead process left."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import IN_USE, ChronosError


def hidden(dest: Path, what: str, folder: bool = True) -> Path:
    """A new hidden name beside ``dest`` for a copy in the making: an empty folder made there,
    or (``folder`` False) a file's path, nothing there yet."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{dest.name}.{what}-"
    for left in dest.parent.glob(f"{prefix}*"):
        pid = left.name[len(prefix) :].split("-", 1)[0]  # (a file's -journal after it)
        if pid.isdigit() and not _alive(int(pid)):
            _remove(left)
    path = dest.parent / f"{prefix}{os.getpid()}"
    discard(path)  # (this process's, from before)
    if folder:
        path.mkdir()
    return path


def discard(path: Path) -> None:
    """A copy in the making thrown away: the folder, or the file and SQLite's files beside it."""
    _remove(path)
    for suffix in ("-journal", "-wal", "-shm"):
        _remove(Path(f"{path}{suffix}"))


def synced(path: Path) -> None:
    """A finished file's bytes on the disk (before it takes its name)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(path: Path, dest: Path, replace: bool = False) -> None:
    """The finished copy (a folder or a file) takes ``dest``'s name (with ``replace``, what is
    there goes only then), and the name is on the disk before this returns."""
    if dest.exists() and not replace:  # (made meanwhile by someone else: left alone)
        raise ChronosError(f"{dest} appeared meanwhile; nothing was changed", IN_USE)
    if path.is_dir():
        old = dest.parent / f".{dest.name}.replaced-{os.getpid()}" if dest.exists() else None
        if old is not None:
            os.rename(dest, old)
        os.rename(path, dest)
    else:  # (a file replaces a file in one step)
        old = None
        os.replace(path, dest)
    fd = os.open(dest.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
