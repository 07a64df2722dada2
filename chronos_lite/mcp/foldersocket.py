"""The folder's Unix socket, ``<folder>/chronos.sock``: the mechanics under joining.

One process at a time *hosts* a folder: it holds an exclusive ``flock`` on the folder itself
(the kernel lets go of it when the process ends, however it ends) and listens on the socket.
So a socket file found by the process that took the lock is a killed host's, and is replaced;
and two processes starting at once can't both host. The socket is the owner's only (mode 0600,
and each peer's uid checked with ``SO_PEERCRED`` where the system has it).

A socket's path may be at most about 100 bytes: a longer folder path is reached through
``/proc/self/fd/<the folder's descriptor>/chronos.sock`` on Linux.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
from pathlib import Path

SOCKET_NAME = "chronos.sock"
MAX_PATH = 100  # (sun_path holds 108 bytes with its NUL on Linux, 104 on macOS)


def socket_path(folder: str | os.PathLike) -> Path:
    return Path(folder) / SOCKET_NAME


class Claim:
    """This process's hold on hosting a folder: an exclusive flock on the folder's directory."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def take(cls, folder: str | os.PathLike) -> Claim | None:
        """The claim, or None when another process hosts the folder."""
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None
            raise
        return cls(fd)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # (closing the last descriptor lets go of the flock)
            self.fd = -1


def listen(folder: str | os.PathLike, claim: Claim) -> socket.socket:
    """The listening socket, made the owner's only before it listens (a socket file left by a
    killed host is replaced: the claim says no one else serves here)."""
    path = socket_path(folder)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(_address(path, claim.fd))
        os.chmod(path, 0o600)  # (before listen: no one can connect to it until then)
        sock.listen(16)
    except OSError:
        sock.close()
        raise
    return sock


def connect(folder: str | os.PathLike, timeout: float) -> socket.socket | None:
    """A connection to the folder's host, or None when nothing listens there."""
    path = socket_path(folder)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    fd = -1
    try:
        if len(os.fsencode(path)) > MAX_PATH:
            fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        sock.connect(_address(path, fd))
    except OSError:
        sock.close()
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return sock


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end (None where the system doesn't say)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def remove(folder: str | os.PathLike) -> None:
    """The socket file, by its host while it still holds the claim (so it is its own)."""
    try:
        socket_path(folder).unlink()
    except FileNotFoundError:
        pass


def _address(path: Path, folder_fd: int) -> str:
    raw = os.fsencode(path)
    if len(raw) <= MAX_PATH:
        return str(path)
    if folder_fd < 0 or not os.path.isdir("/proc/self/fd"):
        raise OSError(errno.ENAMETOOLONG, f"the folder's path is too long for a socket: {path}")
    return f"/proc/self/fd/{folder_fd}/{SOCKET_NAME}"
