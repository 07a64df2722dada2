"""``chronos serve <folder>``: the MCP server over HTTP, as the spec's "Over HTTP" has it.

MCP's Streamable HTTP without its event stream: ``POST /mcp``, one JSON-RPC message a body, the
reply as the response's JSON body (200); a notification or a client's response 202 without a
body; a batch 400 (-32600), a body that isn't JSON 400 (-32700); ``GET /mcp`` 405; no session
ids (a request's protocol version is its ``MCP-Protocol-Version`` header, or its
``params._meta`` in the stateless revision). Bodies are at most 8 MB: 413 from
``Content-Length`` before the body is read, and a body sent without one is cut there.

Who calls is always an agent, by ``Authorization: Bearer <token>`` (``access``). The JSON-RPC
core is stdio's (``core.Server``); what differs here is the framing and the caller. ``httpd``
serves the handler below, each connection on a thread of its own that runs its calls itself,
each on a database of its own from a small pool (SQLite: readers side by side, one writer at a
time, as between processes).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..errors import ChronosError
from ..operations.registry import Caller
from . import envelope
from .access import Access, Denied
from .core import (
    DEFAULT_VERSION,
    HANDSHAKE_VERSIONS,
    INVALID_REQUEST,
    MAX_MESSAGE,
    PARSE_ERROR,
    SUPPORTED,
    Server,
    _not_json,
    _readable_id,
    encode,
    rpc_error,
)
from .httpd import Request, Response
from .pool import Databases

PATH = "/mcp"


@dataclass
class Pool:
    """The folder's databases (``pool.Databases``: also those of the sessions joined over the
    folder's socket), and on each the callers (one per agent: its rights as last read) and
    their MCP servers."""

    folder: str
    databases: Databases
    limits: dict[str, Any]
    servers: dict[tuple[int, str], Server] = field(default_factory=dict)

    def answer(self, agent: str, version: str, message: Any) -> Any:
        """The reply to one message from ``agent``, on a database of the pool (a connection
        thread's call; it waits for a database while all are in use)."""
        with self.databases.lease() as db:
            server = self.servers.get((id(db), agent))
            if server is None:
                try:
                    caller = Caller.for_agent(db, agent, **self.limits)
                except ChronosError as exc:  # (dropped since its token was read)
                    return rpc_error(_readable_id(message), INVALID_REQUEST, exc.message)
                server = self.servers[(id(db), agent)] = Server(db, caller, self.folder)
            server.session_version = version  # (no session: each request says its version)
            reply = server.answer(message)
            server.between_messages()
            return reply


class App:
    """The handler ``httpd`` calls for each request: ``POST /mcp``, and the refusals the spec
    lists (on the connection's own thread)."""

    def __init__(self, pool: Pool, access: Access, loopback: bool = True) -> None:
        self.pool, self.access, self.loopback = pool, access, loopback
        self.checking = threading.Lock()  # (Access's connection and counts: a thread at a time)

    def _foreign(self, headers: dict[str, str]) -> str:
        """Why a request comes from a web page or a rebound name (empty: it doesn't).

        A web page's request carries an ``Origin``: refused, but for the machine's own origin
        on a loopback server (``http://localhost:7070``: the page is this machine's, which the
        MCP conformance suite's DNS-rebinding scenario requires accepting). On a loopback
        server the ``Host`` must name the machine too: a rebinding page's name resolved to
        127.0.0.1 still sends its own name as the Host."""
        origin = headers.get("origin")
        if origin is not None and not (self.loopback and _local(_host_of(origin))):
            return "a request from a web page (with an Origin header) is refused"
        host = headers.get("host")
        if self.loopback and host is not None and not _local(_host_of("//" + host)):
            return f"Host {host!r} isn't this machine's name (a DNS rebinding?): refused"
        return ""

    def __call__(self, request: Request) -> Response:
        status, headers, body = self._respond(request)
        if body:
            headers = {**headers, "content-type": "application/json"}
        return status, headers, body

    def _respond(self, request: Request) -> Response:
        headers = request.headers
        if request.path != PATH:
            return _refusal(404, f"chronos serves MCP at POST {PATH}")
        refused = self._foreign(headers)
        if refused:
            return _refusal(403, refused)
        if request.method != "POST":
            return _refusal(
                405,
                f"{PATH} takes POST (one JSON-RPC message); no event stream is served",
                {"allow": "POST"},
            )
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _refusal(415, "send the message with Content-Type: application/json")
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_MESSAGE):
            return _too_large()
        try:
            with self.checking:
                agent = self.access.caller(headers.get("authorization"), request.client)
        except Denied as denied:
            return _refusal(denied.status, denied.message, denied.headers)
        body = request.body()
        if body is None:
            return _too_large()
        try:
            message = json.loads(body, parse_constant=_not_json)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            reply = rpc_error(None, PARSE_ERROR, f"Parse error: the body isn't JSON ({exc})")
            return _rpc(400, reply)
        if isinstance(message, list):
            reply = rpc_error(
                None,
                INVALID_REQUEST,
                "Invalid request: batches aren't served; one message a request",
            )
            return _rpc(400, reply)
        if isinstance(message, dict) and ("id" not in message or "method" not in message):
            if message.get("jsonrpc") == "2.0":
                return 202, {}, b""  # (a notification, or a client's response)
        return self._answered(agent, headers, message)

    def _answered(self, agent: str, headers: dict[str, str], message: Any) -> Response:
        """The reply to a message read, as ``agent``: checked first as its revision asks."""
        version = headers.get("mcp-protocol-version")
        stateless = isinstance(message, dict) and envelope.modern(headers, message)
        if stateless:
            wrong = envelope.refused(headers, message)
            if wrong is not None:
                return _rpc(envelope.status(wrong, True), wrong)
        elif version is not None and version not in SUPPORTED:
            ident = message.get("id") if isinstance(message, dict) else None
            reply = envelope.unsupported(ident, version)
            return _rpc(400, reply)
        session = version if version in HANDSHAKE_VERSIONS else DEFAULT_VERSION
        reply = self.pool.answer(agent, session, message)
        if reply is None:
            return 202, {}, b""
        return _rpc(envelope.status(reply, stateless), reply)


def _host_of(url: str) -> str:
    """The host of an origin or ``//host:port`` (lower case, IPv6 without its brackets)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _local(host: str) -> bool:
    return host in ("localhost", "127.0.0.1", "::1")


def _rpc(status: int, reply: dict) -> Response:
    return status, {}, encode(reply).rstrip(b"\n")


def _refusal(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return status, headers or {}, json.dumps({"error": message}).encode()


def _too_large() -> Response:
    return _refusal(413, f"a message may be at most {MAX_MESSAGE // (1024 * 1024)} MB")
