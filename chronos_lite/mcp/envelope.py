"""The stateless revision's (2026-07-28) checks of a request that HTTP adds to stdio's: its
``params._meta`` envelope, the routing headers that must repeat the body (``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name``), and the HTTP status each JSON-RPC error is sent with."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from .core import (
    CAPABILITIES_KEY,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MODERN_VERSIONS,
    NO_METHOD,
    PARSE_ERROR,
    SUPPORTED,
    UNSUPPORTED_VERSION,
    VERSION_KEY,
    rpc_error,
)

HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
# the body parameter each method's Mcp-Name header repeats
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
    NO_METHOD: 404,
}
_BASE64 = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


def modern(headers: dict[str, str], message: dict) -> bool:
    """Whether a request speaks the stateless revision (by its header or its envelope)."""
    if headers.get("mcp-protocol-version") in MODERN_VERSIONS:
        return True
    meta = _meta(message)
    return isinstance(meta, dict) and VERSION_KEY in meta


def refused(headers: dict[str, str], message: dict) -> dict | None:
    """The error reply to a stateless request whose envelope or headers are wrong (None: they
    are right), in the order the revision checks them."""
    ident = message.get("id")
    meta = _meta(message)
    if not isinstance(meta, dict) or VERSION_KEY not in meta or CAPABILITIES_KEY not in meta:
        return rpc_error(
            ident,
            INVALID_PARAMS,
            f"Invalid params: a {MODERN_VERSIONS[0]} request carries params._meta with "
            f"{VERSION_KEY} and {CAPABILITIES_KEY}",
        )
    version = meta[VERSION_KEY]
    if headers.get("mcp-protocol-version") != version:
        return _mismatch(ident, "the MCP-Protocol-Version header isn't params._meta's version")
    method = message.get("method")
    if headers.get("mcp-method") != method:
        return _mismatch(ident, f"the Mcp-Method header isn't the body's method ({method})")
    key = NAMED.get(str(method))
    params = message.get("params")
    named = params.get(key) if key and isinstance(params, dict) else None
    if named is not None and _decoded(headers.get("mcp-name")) != named:
        return _mismatch(ident, f"the Mcp-Name header isn't the body's {key} ({named})")
    if version not in MODERN_VERSIONS:
        return unsupported(ident, version)
    return None


def unsupported(ident: Any, version: Any) -> dict:
    return rpc_error(
        ident,
        UNSUPPORTED_VERSION,
        f"Unsupported protocol version: {version}; this server serves {', '.join(SUPPORTED)}",
        {"supported": SUPPORTED, "requested": version},
    )


def status(reply: dict, stateless: bool) -> int:
    """The HTTP status of a reply: an error's by its code in the stateless revision; else 200
    (a JSON-RPC error is a reply like any other), but a request that couldn't be read, 400."""
    error = reply.get("error")
    if not isinstance(error, dict):
        return 200
    code = error.get("code")
    if stateless or code in (PARSE_ERROR, INVALID_REQUEST, UNSUPPORTED_VERSION):
        return STATUS.get(code, 200)  # type: ignore[arg-type]
    return 200


def _meta(message: dict) -> Any:
    params = message.get("params")
    return params.get("_meta") if isinstance(params, dict) else None


def _mismatch(ident: Any, why: str) -> dict:
    return rpc_error(ident, HEADER_MISMATCH, f"Header mismatch: {why}")


def _decoded(value: str | None) -> str | None:
    """A header value as sent: verbatim, or UTF-8 inside ``=?base64?...?=`` (None if that is
    malformed: it then matches nothing)."""
    if value is None:
        return None
    found = _BASE64.fullmatch(value)
    if found is None:
        return value
    try:
        raw = base64.b64decode(found.group("payload"), validate=True)
        return raw.decode() if base64.b64encode(raw).decode() == found.group("payload") else None
    except (binascii.Error, UnicodeDecodeError):
        return None
