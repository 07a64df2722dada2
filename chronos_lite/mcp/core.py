"""The MCP server's JSON-RPC core: the registry's operations as MCP tools, for one database and
one caller, a message at a time (the transports, ``stdio`` and later HTTP, carry the messages).

Three protocol revisions are served: 2025-06-18 and 2025-11-25 through ``initialize``, and the
stateless 2026-07-28, where each request names its version in ``params._meta``
(``server/discover`` first). Every call is bounded: a time limit (``--max-query-ms``, 30 s by
default in safe mode), a result budget in rows and characters, and SQLite's heap for the whole
process (``--max-memory-mb``); a cancel stops the call it names.

Written here rather than on the ``mcp`` SDK's server: the failure modes the spec asks for (a
line that isn't JSON, a batch, an 8 MB line read past without holding it) and the latency target
(a warm call well under a millisecond) need a plain loop, and it is short.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import chronos_lite

from .. import progress, render
from ..errors import ChronosError
from ..history import prune
from ..operations import agentrights
from ..operations.calllimits import limits_of
from ..operations.registry import REGISTRY, Caller
from ..storage.db import Database
from ..storage.governance import agents
from . import progressnotes

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18")  # newest first
MODERN_VERSIONS = ("2026-07-28",)
SUPPORTED = [*MODERN_VERSIONS, *HANDSHAKE_VERSIONS]
DEFAULT_VERSION = "2025-06-18"  # an initialize that names none
MAX_MESSAGE = 8 * 1024 * 1024
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
MAX_ROWS = 1000  # rows a result holds; it says how to page on
MAX_RESULT_CHARS = 24_000  # characters a result's text (and its JSON) may take: well under
# the 50,000 Claude Code keeps in the conversation, with both in the reply
MAX_MEMORY_MB = 256  # SQLite's heap for the serving process
CANCELLED = "notifications/cancelled"
LIST_TTL_MS = 3_600_000  # the tool list changes only with the program

PARSE_ERROR, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS, INTERNAL = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
UNSUPPORTED_VERSION = -32022


class ProtocolError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def instructions(folder: str, caller: Caller) -> str:
    common = (
        "chronos is a database where you work on a private branch (a world) of the data, and "
        "your changes reach main when the branch is merged. The workflow: call describe first "
        "(tables, fields, a "
        "sample row); fork a branch with a name for your task; make your changes on it (sql, "
        'put, delete, always with branch="<your branch>"); check them with diff (and '
        "merge_preview); then "
    )
    if caller.mode == "agent" and "fork" not in caller.rights:
        return _unforking_agent(caller)
    if caller.mode == "agent":
        return common + _agent_instructions(folder, caller)
    if caller.mode == "safe":
        return common + (
            "stop and report the branch name: a person reviews and merges it with "
            f"`chronos {folder} merge <branch>`. You can't merge, and you can only write on "
            "branches you forked in this session. Discard a branch you don't want. Ask for "
            "small pages (limit 20) and select only the rows you need."
        )
    return common + (
        "call merge when the diff is right (conflicts come back with base, ours and theirs: "
        "settle them with resolve, by_columns or rows), or discard the branch. Ask for small "
        "pages (limit 20) and select only the rows you need."
    )


def _unforking_agent(caller: Caller) -> str:
    """An agent that can't fork has no branch of its own to work on: it reads, and with
    write_main writes main itself."""
    rights = caller.rights
    has = ", ".join(r for r in agents.RIGHTS if r in rights) or "none"
    text = (
        f"chronos is a database with private branches (worlds) of the data. You act as the "
        f"agent {caller.name}, with the rights {has}: you can't fork a branch of your own. "
        "Call describe first (tables, fields, a sample row); read with sql, get, diff and "
        "history. "
    )
    if agentrights.writes_main(caller):
        text += (
            "Your writes (sql, put, delete without a branch) change main itself, where the app "
            "reads: make only the change you were asked for. "
        )
    elif "write_main" in rights:
        text += "You can't write main: " + (
            "the database is in production mode. "
            if caller.production
            else f"you keep to merge policy {caller.policy}. "
        )
    return text + "Ask for small pages (limit 20) and select only the rows you need."


def _agent_instructions(folder: str, caller: Caller) -> str:
    """The workflow's end as the agent's rights allow it (merge, or report the branch)."""
    rights = caller.rights
    has = ", ".join(r for r in agents.RIGHTS if r in rights) or "none"
    if {"merge", "merge_own"} & rights and caller.production:
        end = (
            "call merge when the diff is right: the database is in production mode, so your "
            "merge waits in reviews for a person (you can't merge it, nor discard it, after "
            "that): stop and report the branch and the reasons. "
        )
    elif {"merge", "merge_own"} & rights:
        end = (
            "call merge when the diff is right (conflicts come back with base, ours and "
            "theirs: settle them with resolve, by_columns or rows); a merge policy may hold "
            "the merge for a person: then stop and report the branch and the reasons. "
        )
        if caller.policy is not None:
            end += (
                f"You keep to merge policy {caller.policy}: merge_policies shows its rules, "
                "check_merge_policy tries them on your branch first, and main changes only by "
                "your merges. "
            )
        if "merge" not in rights and "write_main" not in rights:
            end = (
                "stop and report the branch name when the diff is right: your merges can't "
                f"reach main, a person merges it with `chronos {folder} merge <branch>`. "
            )
    else:
        end = (
            "stop and report the branch name: a person reviews and merges it with "
            f"`chronos {folder} merge <branch>`. "
        )
    return end + (
        f"You act as the agent {caller.name}, with the rights {has}: you change only the "
        "branches you forked (they stay yours in later sessions). Discard a branch you don't "
        "want. Ask for small pages (limit 20) and select only the rows you need."
    )


class Server:
    """Answers one JSON-RPC message at a time for one database and one caller."""

    def __init__(self, db: Database, caller: Caller, folder: str) -> None:
        self.db = db
        self.caller = caller
        self.folder = folder
        self.session_version: str | None = None  # set by initialize
        self.server_info = {"name": "chronos", "version": chronos_lite.__version__}
        self._tools = [_tool(op) for op in REGISTRY.listed(caller)]
        self._instructions = instructions(folder, caller)
        self._pruned = time.monotonic()
        self._lock = threading.Lock()  # between the loop and the reader: what runs now
        self._running: Any = None  # the id of the request being answered
        self._cancelled: dict[Any, float] = {}  # request ids cancelled (when), not yet answered
        self._answered: dict[Any, None] = {}  # the last ids answered (a late cancel is ignored)
        # sends a message to the client between replies (stdio: a call's progress notes)
        self.notify: Callable[[dict], None] | None = None

    def between_messages(self) -> None:
        """After each message: a long session prunes expired history too (at most hourly)."""
        if time.monotonic() - self._pruned > prune.EVERY:
            self._pruned = time.monotonic()
            prune.prune_if_due(self.db)

    # --- one message --------------------------------------------------------------------------

    def answer_line(self, line: bytes) -> dict | None:
        """The reply to one line (None: nothing to send)."""
        try:
            message = json.loads(line, parse_constant=_not_json)
        except (ValueError, UnicodeDecodeError) as exc:
            return rpc_error(None, PARSE_ERROR, f"Parse error: the line isn't JSON ({exc})")
        except RecursionError:
            return rpc_error(None, PARSE_ERROR, "Parse error: the message is nested too deeply")
        return self.answer(message)

    def answer(self, message: Any) -> dict | None:
        if isinstance(message, list):
            return rpc_error(
                None,
                INVALID_REQUEST,
                "Invalid request: batches aren't served; send one JSON-RPC message per line",
            )
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return rpc_error(
                _readable_id(message),
                INVALID_REQUEST,
                'Invalid request: send one JSON object with "jsonrpc": "2.0" per line',
            )
        if "method" not in message:
            return None  # a client's response (we send no requests): nothing to answer
        ident = message.get("id")
        notification = "id" not in message
        if not notification and self._cancelled and self._was_cancelled(ident):
            return None  # cancelled before it ran: no reply (the client stopped waiting)
        if not notification and (isinstance(ident, bool) or not isinstance(ident, str | int)):
            return rpc_error(
                None, INVALID_REQUEST, "Invalid request: id must be a string or an integer"
            )
        method = message["method"]
        if notification:
            return None  # notifications/initialized, cancelled, ...: no reply
        if not isinstance(method, str):
            return rpc_error(ident, INVALID_REQUEST, "Invalid request: method must be a string")
        params = message.get("params", {})
        if params is None:
            params = {}
        with self._lock:
            self._running = ident
        # (the reader may cancel it; the call's operation narrows the limits to fresh quotas)
        began = self.db.bounds.begin(limits_of(self.caller))
        try:
            if not isinstance(params, dict):
                raise ProtocolError(INVALID_PARAMS, "Invalid params: params must be an object")
            result = self._dispatch(method, params)
        except ProtocolError as exc:
            return rpc_error(ident, exc.code, exc.message, exc.data)
        except Exception as exc:  # a bug outside an operation: say so, serve on
            import traceback  # (only for a bug: the server starts without it)

            traceback.print_exc(file=sys.stderr)
            return rpc_error(ident, INTERNAL, f"Internal error: {type(exc).__name__}: {exc}")
        finally:
            self.db.bounds.end(began)
            with self._lock:
                self._running = None
                self._answered[_key(ident)] = None
                if len(self._answered) > 1000:
                    del self._answered[next(iter(self._answered))]
        if self._cancelled and self._was_cancelled(ident):
            return None  # the spec: no reply to a cancelled request
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    # --- cancellation -------------------------------------------------------------------------

    def cancel(self, ident: Any) -> None:
        """``notifications/cancelled`` for request ``ident`` (from the reader thread): stop it
        if it runs now, skip it if it hasn't started."""
        if isinstance(ident, bool) or not isinstance(ident, str | int):
            return  # (a malformed notification is ignored)
        key = _key(ident)
        with self._lock:
            if key in self._answered and _key(self._running) != key:
                return  # answered already (the cancel crossed the reply)
            now = time.monotonic()
            for old in [k for k, t in self._cancelled.items() if now - t > 600]:
                del self._cancelled[old]
            self._cancelled[key] = now
            if _key(self._running) == key:
                self.db.bounds.cancel()

    def _was_cancelled(self, ident: Any) -> bool:
        with self._lock:
            return self._cancelled.pop(_key(ident), None) is not None

    def _dispatch(self, method: str, params: dict) -> dict:
        modern = self._modern_version(params)
        if method == "initialize":
            if modern is not None:
                raise ProtocolError(
                    NO_METHOD,
                    f"Method not found: initialize isn't in {modern} (server/discover is)",
                )
            return self._initialize(params)
        if method == "server/discover":
            if modern is None:
                raise ProtocolError(
                    INVALID_PARAMS,
                    f"Invalid params: server/discover needs the protocol version in "
                    f"params._meta ({VERSION_KEY}); this server serves {', '.join(SUPPORTED)}",
                )
            return self._stamp(self._discover())
        if method not in ("ping", "tools/list", "tools/call"):
            raise ProtocolError(
                NO_METHOD,
                f"Method not found: {method} (this server has tools "
                "only: initialize, ping, tools/list, tools/call, server/discover)",
            )
        if modern is None and self.session_version is None and method != "ping":
            raise ProtocolError(
                INVALID_PARAMS,
                f"Invalid params: {method} names no protocol version in params._meta "
                f"({VERSION_KEY}), and no initialize has opened a session",
            )
        if method == "ping":
            if modern is not None:
                raise ProtocolError(NO_METHOD, f"Method not found: ping isn't in {modern}")
            return {}
        if method == "tools/list":
            if "cursor" in params:
                raise ProtocolError(
                    INVALID_PARAMS,
                    "Invalid params: the tool list is one page; send tools/list without a cursor",
                )
            result: dict[str, Any] = {"tools": self._tools}
            if modern is not None:
                result.update(ttlMs=LIST_TTL_MS, cacheScope="private")
            return self._stamp(result) if modern else result
        result = self._call(params)
        return self._stamp(result) if modern else result

    def _modern_version(self, params: dict) -> str | None:
        meta = params.get("_meta")
        if not isinstance(meta, dict) or VERSION_KEY not in meta:
            return None
        version = meta[VERSION_KEY]
        if version not in MODERN_VERSIONS:
            raise ProtocolError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version: {version}; this server serves "
                f"{', '.join(MODERN_VERSIONS)} in params._meta, and "
                f"{' and '.join(HANDSHAKE_VERSIONS)} through initialize",
                {"requested": version, "supported": SUPPORTED},
            )
        if CAPABILITIES_KEY not in meta:
            raise ProtocolError(
                INVALID_PARAMS,
                f"Invalid params: a {version} request carries the client's capabilities in "
                f"params._meta ({CAPABILITIES_KEY})",
            )
        return version

    def _stamp(self, result: dict) -> dict:
        result["resultType"] = "complete"
        result.setdefault("_meta", {})[SERVER_INFO_KEY] = self.server_info
        return result

    def _initialize(self, params: dict) -> dict:
        asked = params.get("protocolVersion")
        if asked is None:
            version = DEFAULT_VERSION
        elif asked in HANDSHAKE_VERSIONS:
            version = asked
        else:
            version = HANDSHAKE_VERSIONS[0]
        self.session_version = version
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": self.server_info,
            "instructions": self._instructions,
        }

    def _discover(self) -> dict:
        return {
            "supportedVersions": SUPPORTED,
            "capabilities": {"tools": {}},
            "instructions": self._instructions,
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "private",
        }

    def _call(self, params: dict) -> dict:
        name = params.get("name")
        if not isinstance(name, str):
            raise ProtocolError(
                INVALID_PARAMS,
                "Invalid params: tools/call needs the tool's "
                "name (a string) and its arguments (an object)",
            )
        args = params.get("arguments", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return _tool_error(f"{name}'s arguments must be a JSON object", "22023")
        if name not in REGISTRY or not REGISTRY.get(name).mcp:
            return _tool_error(f"unknown tool '{name}'; see tools/list", "22023")
        notes = self._progress_notes(params)
        try:
            with progress.listening(notes):
                reply = REGISTRY.call(self.db, name, args, self.caller)
        except ChronosError as exc:
            return _tool_error(exc.message, exc.code, exc.data)
        except MemoryError:  # Python's own memory ran out: the call is gone, the server isn't
            return _tool_error(
                "out of memory: the call needed more memory than the server has; nothing was "
                "changed: ask for less (LIMIT, fewer or shorter values)",
                "53200",
            )
        except Exception as exc:  # a bug in an operation: the session goes on
            import traceback  # (only for a bug: the server starts without it)

            traceback.print_exc(file=sys.stderr)
            return _tool_error(
                f"internal error (a bug in chronos): {type(exc).__name__}: {exc}", "XX000"
            )
        finally:
            if notes is not None:
                notes.close()  # (none after the reply)
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": reply.text}],
            "isError": False,
        }
        if isinstance(reply.data, dict):
            result["structuredContent"] = reply.data
        return result

    def _progress_notes(self, params: dict) -> progressnotes.Notes | None:
        """The call's progress notifications, if its client asked (a progressToken) and this
        transport sends messages between replies."""
        token = progressnotes.token_of(params)
        if token is None or self.notify is None:
            return None
        return progressnotes.Notes(token, self.notify)

    # --- the loop -----------------------------------------------------------------------------


def _key(ident: Any) -> tuple[str, Any]:
    """A request id as a key: 1 and "1" are different ids."""
    return (type(ident).__name__, ident)


def encode(reply: dict) -> bytes:
    """A reply as one line of strict JSON (values JSON can't hold as ``render`` spells them)."""
    default = render.json_default  # (a blob in data not spelled yet: {"$blob": hex})
    try:
        text = json.dumps(
            reply, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=default
        )
    except ValueError:  # inf or nan from SQL (select 1e999): JSON has no such numbers
        finite = render.finite(reply)
        text = json.dumps(finite, ensure_ascii=False, separators=(",", ":"), default=default)
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate (from a "\ud800" escape): keep it escaped
        return json.dumps(render.finite(reply), separators=(",", ":"), default=default).encode() + (
            b"\n"
        )


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _readable_id(message: Any) -> Any:
    ident = message.get("id") if isinstance(message, dict) else None
    return ident if isinstance(ident, str | int) and not isinstance(ident, bool) else None


def _tool(op) -> dict:
    """A tools/list entry: the operation's name, title and description, its schema and its
    hints as MCP publishes them (``Operation.tool_schema``, ``Operation.tool_annotations``)."""
    return {
        "name": op.name,
        "title": op.title,
        "description": op.description,
        "inputSchema": op.tool_schema,
        "annotations": op.tool_annotations,
    }


def rpc_error(ident: Any, code: int, message: str, data: Any = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": ident, "error": error}


def _tool_error(message: str, code: str, data: Any = None) -> dict:
    structured: dict[str, Any] = {"error": message, "code": code}
    if data is not None:
        structured["data"] = data
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": structured,
        "isError": True,
    }
