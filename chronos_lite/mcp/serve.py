"""Starting ``chronos serve``: the checks before listening, the pool, ``httpd`` on a socket of
our own (so the port it got is known before it serves, ``--port 0`` included)."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import ssl
import sys
from dataclasses import dataclass

import apsw

from ..errors import BAD_ARGUMENT, ChronosError
from ..opening import open_folder
from ..storage.db import Database
from ..storage.governance import agents
from .access import GUEST, Access, ensure_guest
from .core import MAX_MEMORY_MB, MAX_MESSAGE, MAX_RESULT_CHARS, MAX_ROWS
from .host import Host
from .http import PATH, App, Pool
from .pool import Databases

TOKEN_VARIABLES = ("CHRONOS_SERVE_TOKEN", "CHRONOS_ADMIN_TOKEN")


@dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 7070
    safe: bool = False
    token: str | None = None
    admin_token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    max_query_ms: int | None = None
    max_memory_mb: int = MAX_MEMORY_MB
    max_result_chars: int = MAX_RESULT_CHARS
    pool: int = 4


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def checked(options: Options) -> Options:
    """The options, or a refusal before anything listens."""
    token = options.token or os.environ.get(TOKEN_VARIABLES[0]) or None
    admin = options.admin_token or os.environ.get(TOKEN_VARIABLES[1]) or None
    if bool(options.tls_cert) != bool(options.tls_key):
        raise ChronosError("TLS needs both --tls-cert and --tls-key", BAD_ARGUMENT)
    if not loopback(options.host) and not (token and options.tls_cert):
        raise ChronosError(
            f"chronos serve listens on {options.host} (beyond loopback) only with a token and "
            "TLS: give --token (or CHRONOS_SERVE_TOKEN) and --tls-cert and --tls-key, or serve "
            "on 127.0.0.1",
            BAD_ARGUMENT,
        )
    for path in (options.tls_cert, options.tls_key):
        if path and not os.path.isfile(path):
            raise ChronosError(f"no file {path} (--tls-cert, --tls-key)", BAD_ARGUMENT)
    options.token, options.admin_token = token, admin
    return options


def run(folder: str, options: Options) -> int:
    """Serve until SIGINT or SIGTERM (requests in flight are answered first)."""
    from . import httpd  # (the server's imports only when serving)

    options = checked(options)
    apsw.hard_heap_limit(options.max_memory_mb * 1024 * 1024)
    first = open_folder(folder)
    limits = {
        "max_rows": MAX_ROWS,
        "max_chars": options.max_result_chars,
        "max_query_ms": options.max_query_ms,
    }
    databases = Databases(lambda: open_folder(folder), options.pool)
    databases.add(first)
    pool = Pool(str(folder), databases, limits)
    folder_host: Host | None = None
    lookups = apsw.Connection(str(first.path), flags=apsw.SQLITE_OPEN_READONLY)
    lookups.set_busy_timeout(5000)
    try:
        if options.safe:
            _guest(first)
        tls = _tls(options.tls_cert, options.tls_key)
        sock = _listen(options.host, options.port)
        access = Access(lookups, options.safe, options.token, options.admin_token)
        app = App(pool, access, loopback(options.host))
        server = httpd.Server(sock, app, MAX_MESSAGE, tls)
        # a chronos mcp started on the folder while this serves joins it, on its databases
        folder_host = Host.start(str(folder), "chronos serve", lambda: databases)
        scheme = "https" if tls else "http"
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        print(
            f"chronos serve: {folder} at {scheme}://{shown}:{port}{PATH}"
            + (
                " (--safe: requests without an agent's token act as the agent guest)"
                if options.safe
                else ""
            ),
            file=sys.stderr,
            flush=True,
        )

        def stop(_sig: int, _frame: object) -> None:
            """Stop taking requests, answer those in flight; a second signal ends it at once."""
            server.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)

        stopped = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            server.serve()
        finally:
            for sig, handler in stopped.items():
                signal.signal(sig, handler)
    finally:
        if folder_host is not None:
            folder_host.close()  # (its sessions' calls in flight answered first)
        databases.close()
        lookups.close()
    return 0


def _guest(db: Database) -> None:
    conn = db.main.conn
    with db.write(conn):
        ensure_guest(conn)
    found = agents.find(conn, GUEST, dropped=True)
    if found is not None and (found.dropped is not None or not found.enabled):
        state = "dropped" if found.dropped is not None else "disabled"
        raise ChronosError(
            f"--safe serves requests without a token as the agent {GUEST}, which is {state}: "
            f"enable it (chronos {db.folder} agent alter {GUEST} --enable) or serve without "
            "--safe",
            BAD_ARGUMENT,
        )


def _tls(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """The TLS context of --tls-cert and --tls-key (HTTP/1.1 only), or a refusal to start."""
    if not (cert and key):
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise ChronosError(
            f"can't use {cert} and {key} for TLS (--tls-cert, --tls-key: PEM files of a "
            f"certificate and its key): {exc}",
            BAD_ARGUMENT,
        ) from None
    context.set_alpn_protocols(["http/1.1"])
    return context


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket (``httpd`` sets TCP_NODELAY on each connection: without it a reply
    waits out the client's delayed ACK, 40 ms a call on a kept-alive connection)."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bare, port))
        sock.listen(512)
    except OSError as exc:
        sock.close()
        raise ChronosError(f"can't listen on {host}:{port}: {exc.strerror}", BAD_ARGUMENT) from None
    return sock
