"""`chronos mcp` spoken to line by line: JSON-RPC framing, protocol versions, bad arguments.

Each test writes raw lines to the server's stdin and reads its stdout a line at a time; every
line read must be one strict JSON object (no NaN or Infinity). The bad-argument tests loop over
tools/list with one server per mode, and check through the Python API that nothing changed.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from helpers import CHRONOS
from mcp_lines import WAIT, Server, strict_json, tool_error

import chronos_lite
from chronos_lite.sqltext import quote_ident

MODERN = "2026-07-28"
SUPPORTED = ["2026-07-28", "2025-11-25", "2025-06-18"]
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


@pytest.fixture
def serve(shop, folder) -> Iterator:
    """Start servers on the shop folder; killed at the end of the test."""
    started: list[Server] = []

    def start(*flags: str) -> Server:
        server = Server(folder, *flags)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


# --- framing ---------------------------------------------------------------------------------


def test_not_json_is_parse_error_and_serving_goes_on(serve):
    s = serve()
    for line in [
        b"not json",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"} trailing',
        b"\xff\xfe{}",
        b"{'single': 'quotes'}",
    ]:
        s.write(line + b"\n")
        reply = s.read()
        assert reply["id"] is None
        assert reply["error"]["code"] == -32700
        assert "JSON" in reply["error"]["message"]
    s.ping()
    assert s.close() == 0


def test_batches_and_non_objects_are_invalid_requests(serve):
    s = serve()
    for message in [
        [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],
        [],
        42,
        "ping",
        None,
        True,
        {"id": 1, "method": "ping"},  # no jsonrpc
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    ]:
        s.send(message)
        reply = s.read()
        readable = message.get("id") if isinstance(message, dict) else None
        assert reply["id"] == readable, (message, reply)  # null when it can't be read
        assert reply["error"]["code"] == -32600, (message, reply)
    s.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert "batch" in s.read()["error"]["message"]
    for bad_id in [True, 1.5, {"a": 1}, [1], None]:
        s.send({"jsonrpc": "2.0", "id": bad_id, "method": "ping"})
        reply = s.read()
        assert (reply["id"], reply["error"]["code"]) == (None, -32600), (bad_id, reply)
    s.send({"jsonrpc": "2.0", "id": 5, "method": 7})
    assert s.read() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32600, "message": "Invalid request: method must be a string"},
    }
    s.ping()
    assert s.close() == 0


def test_unknown_methods(serve):
    s = serve()
    s.initialize()
    for method in [
        "resources/list",
        "prompts/list",
        "resources/read",
        "resources/templates/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "tools/unknown",
        "nope",
        "",
    ]:
        error = s.error(method, {})
        assert error["code"] == -32601, (method, error)
        assert "Method not found" in error["message"]
    s.ping()


def test_notifications_get_no_reply(serve):
    s = serve()
    s.initialize()  # sends notifications/initialized too
    for method in ["notifications/initialized", "notifications/cancelled", "x/unknown", "ping"]:
        s.send({"jsonrpc": "2.0", "method": method, "params": {"requestId": 1}})
    s.send({"jsonrpc": "2.0", "id": 1, "result": {}})  # a client's response: nothing to answer
    s.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert s.read() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    assert not s.pending()
    assert s.close() == 0


def test_blank_lines_are_skipped(serve):
    s = serve()
    s.write(b"\n\n   \n\t\n\r\n")
    s.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    assert s.read() == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert s.close() == 0


def test_line_over_8_mb_is_refused_and_serving_goes_on(serve):
    s = serve()
    chunk = b"a" * (1 << 20)

    def feed() -> None:
        s.write(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"')
        for _ in range(9):
            s.proc.stdin.write(chunk)
        s.write(b'"}}\n')

    writer = threading.Thread(target=feed)
    writer.start()
    reply = s.read()
    writer.join(WAIT)
    assert not writer.is_alive()
    assert reply["id"] is None
    assert reply["error"]["code"] == -32600
    assert "8 MB" in reply["error"]["message"]
    s.ping()

    # a long line under the limit is served
    def feed_7mb() -> None:
        s.write(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"')
        for _ in range(7):
            s.proc.stdin.write(chunk)
        s.write(b'"}}\n')

    writer = threading.Thread(target=feed_7mb)
    writer.start()
    assert s.read() == {"jsonrpc": "2.0", "id": "big", "result": {}}
    writer.join(WAIT)
    assert s.close() == 0


def test_eof_ends_the_server_with_0_and_stdout_holds_only_replies(serve):
    s = serve()
    assert s.close() == 0  # at once

    s = serve()
    s.initialize("2025-06-18")
    s.result("tools/list")
    s.call("describe", {})
    s.call("fork", {"name": "w"})
    # a call that fails inside an operation prints its traceback to stderr, never stdout
    s.call("get", {"table": "users", "id": "9" * 30})
    s.call("sql", {"sql": "select name from users"})
    s.write(b"not json\n")
    s.read()
    assert s.close() == 0


# --- protocol versions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        (None, "2025-06-18"),
        ("2024-01-01", "2025-11-25"),
        ("2025-03-26", "2025-11-25"),
    ],
)
def test_initialize_versions(serve, asked, answered):
    s = serve()
    result = s.initialize(asked)
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {}}
    assert result["serverInfo"] == {"name": "chronos", "version": chronos_lite.__version__}
    assert "describe" in result["instructions"] and "fork" in result["instructions"]
    names = {t["name"] for t in s.result("tools/list")["tools"]}
    assert names == {op.name for op in chronos_lite.REGISTRY if op.mcp} - {
        "merge",
        "restore",
        "undo_merge",
    }


def test_modern_version_without_handshake(serve):
    s = serve()
    result = s.result("server/discover", version=MODERN)
    assert result["supportedVersions"] == SUPPORTED
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY] == {
        "name": "chronos",
        "version": chronos_lite.__version__,
    }
    assert result["capabilities"] == {"tools": {}}
    assert "fork" in result["instructions"]
    assert result["ttlMs"] > 0

    listed = s.result("tools/list", version=MODERN)
    assert listed["resultType"] == "complete"
    assert listed["_meta"][SERVER_INFO_KEY]["name"] == "chronos"
    assert listed["ttlMs"] > 0
    assert len(listed["tools"]) == len(
        chronos_lite.REGISTRY.listed(chronos_lite.Caller("x", "safe"))
    )

    called = s.call("get", {"table": "users", "id": "1"}, version=MODERN)
    assert called["resultType"] == "complete" and called["isError"] is False
    assert called["_meta"][SERVER_INFO_KEY]["name"] == "chronos"
    assert called["structuredContent"]["row"]["name"] == "Ada"
    failed = s.call("get", {"table": "users", "id": "2"}, version=MODERN)
    assert failed["resultType"] == "complete"
    assert tool_error(failed) == "no row users/2 on main"

    assert s.error("ping", version=MODERN)["code"] == -32601
    error = s.error("server/discover")  # no version named
    assert error["code"] == -32602
    assert VERSION_KEY in error["message"]
    # still no session: a request without a version is refused
    assert s.error("tools/list")["code"] == -32602


@pytest.mark.parametrize("method", ["tools/list", "tools/call", "server/discover"])
def test_unsupported_version(serve, method):
    s = serve()
    params = {"name": "describe", "arguments": {}} if method == "tools/call" else {}
    error = s.error(method, params, version="2027-01-01")
    assert error["code"] == -32022
    assert error["data"]["supported"] == SUPPORTED
    assert error["data"]["requested"] == "2027-01-01"
    assert "2027-01-01" in error["message"]
    s.ping()


def test_no_version_before_initialize(serve):
    s = serve()
    for method, params in [
        ("tools/list", None),
        ("tools/call", {"name": "describe", "arguments": {}}),
    ]:
        error = s.error(method, params)
        assert error["code"] == -32602, error
        assert "initialize" in error["message"]
    s.ping()  # ping needs no session
    s.initialize()
    assert s.result("tools/list")["tools"]


def test_tools_list_cursor_is_invalid_params(serve):
    s = serve()
    assert s.error("tools/list", {"cursor": "x"}, version=MODERN)["code"] == -32602
    s.initialize()
    error = s.error("tools/list", {"cursor": "next"})
    assert error["code"] == -32602
    assert "cursor" in error["message"]


def test_ping_replies_empty_with_the_requests_id(serve):
    s = serve()
    for ident in [0, 7, -3, "abc", "", 2**62]:
        s.send({"jsonrpc": "2.0", "id": ident, "method": "ping"})
        assert s.read() == {"jsonrpc": "2.0", "id": ident, "result": {}}
    s.send({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": None})
    assert s.read() == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert s.close() == 0


def test_tools_call_params_errors(serve):
    s = serve()
    s.initialize()
    for params in [{}, {"name": 3}, {"name": None, "arguments": {}}, {"arguments": {}}]:
        assert s.error("tools/call", params)["code"] == -32602, params
    assert s.error("tools/call", ["describe"])["code"] == -32602
    s.ping()


# --- startup refusals ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    ["agent", "agent and allow-merge", "branch missing", "not a database", "no folder there"],
)
def test_startup_refusals(shop, folder, tmp_path, case):
    target, flags = str(folder), []
    if case == "agent":
        flags = ["--agent", "bot"]
    elif case == "agent and allow-merge":
        flags = ["--allow-merge", "--agent", "bot"]
    elif case == "branch missing":
        flags = ["-b", "nope"]
    elif case == "not a database":
        (tmp_path / "plain").mkdir()
        (tmp_path / "plain" / "notes.txt").write_text("hi")
        target = str(tmp_path / "plain")
    else:
        target = str(tmp_path / "missing")
    proc = subprocess.run(
        [CHRONOS, "mcp", target, *flags],
        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        capture_output=True,
        timeout=WAIT,
    )
    assert proc.returncode == 1, proc
    assert proc.stdout == b""
    assert proc.stderr.startswith(b"chronos: "), proc.stderr
    assert proc.stderr.count(b"\n") == 1
    assert not Path(tmp_path / "missing").exists()


def test_branch_flag_with_a_branch_that_exists(shop, folder):
    shop.fork("task-1")
    for branch in ["main", "task-1"]:
        proc = subprocess.run(
            [CHRONOS, "mcp", str(folder), "-b", branch],
            input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
            capture_output=True,
            timeout=WAIT,
        )
        assert proc.returncode == 0, proc.stderr
        assert strict_json(proc.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}


# --- bad arguments, every tool ---------------------------------------------------------------

BIG = 10**30
LONG = "a" * 100_000
# Arguments each tool's bad ones start from: the one world "w" is the session's own.
BASE: dict[str, dict] = {
    "describe": {},
    "find": {"table": "users", "where": {"id": 1}},
    "sql": {"sql": "select 1"},
    "get": {"table": "users", "id": "1"},
    "put": {"table": "users", "id": "1", "record": {"name": "x"}, "branch": "w"},
    "delete": {"table": "users", "id": "1", "branch": "w"},
    "fork": {"name": "new-one"},
    "set_meta": {"branch": "w", "meta": {"k": "v"}},
    "branches": {},
    "discard": {"branch": "w"},
    "diff": {"branch": "w"},
    "merge": {"branch": "w"},
    "merge_preview": {"branch": "w"},
    "rebase": {"branch": "w"},
    "check_reads": {"branch": "w"},
    "simulate": {"worlds": 2, "prefix": "s", "script": "select 1", "score": "select 1"},
    "replay": {"world": "w"},
    "restore": {"branch": "w", "at": "-1 minute"},
    "checkpoint": {"branch": "w", "name": "cp"},
    "rollback": {"branch": "w", "checkpoint": "cp"},
    "history": {"branch": "w"},
    "undo_merge": {"branch": "w"},
    "merge_checks": {},
    "set_merge_check": {"name": "c", "query": "select 1 where 0"},
    "drop_merge_check": {"name": "c"},
    "merge_policies": {},
    "check_merge_policy": {"branch": "w"},
    "set_merge_policy": {"name": "p"},
    "drop_merge_policy": {"name": "p"},
    "reviews": {},
    "review": {"branch": "w", "verdict": "pass", "reason": "r"},
}
WRONG_TYPES = {
    "string": [123, 1.5, True, None, ["users"], {"t": 1}],
    "integer": ["20", 1.5, True, None, [1], {}],
    "boolean": ["true", 1, 0, None, []],
    "object": ["{}", [], 1, None, True],
    "array": ["a,b", {"0": "a"}, 1, None, [123]],
}
KINDS = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}


def _wrong_for(types: str | list[str]) -> list:
    """Values of none of ``types`` (a parameter may take one of several: keep, 3 or "all")."""
    if isinstance(types, str):
        return WRONG_TYPES[types]
    values = [v for t in types for v in WRONG_TYPES[t]]

    def fits(v: object, t: str) -> bool:
        return type(v) is KINDS[t] or (t == "integer" and type(v) is int)

    return [v for v in values if not any(fits(v, t) for t in types)]


# Names the schemas refuse: spaces, quotes with spaces, SQL, empty, 100 KB.
BAD_NAMES = [
    "users; drop table users",
    "name with spaces",
    "x' OR '1'='1",
    '"; DROP TABLE users; --',
    "",
    " ",
    "\t",
    "line\nbreak",
    " users",
    LONG + " x",
]
# Names the schemas let through, none of which exists: each must fail with a useful message.
ODD_NAMES = [
    "users;drop",
    '"users"',
    "[users]",
    "x'--",
    "`users`",
    "../../etc/passwd",
    "users\u0000",
    "_chronos_worlds",
    "sqlite_master",
    "main.users",
    "ü🙂",
    "%",
    "*",
    LONG,
]


def bad_calls(tools: list[dict], kind: str) -> Iterator[tuple[str, str, dict]]:
    """(tool, what is wrong, arguments) for each tool of tools/list and one kind of mistake."""
    for tool in tools:
        name, schema = tool["name"], tool["inputSchema"]
        props, base = schema.get("properties", {}), BASE[name]
        if kind == "wrong types":
            for p, spec in props.items():
                for value in _wrong_for(spec["type"]):
                    if isinstance(value, list) and spec["type"] == "array" and "items" not in spec:
                        continue  # params: an array of anything
                    yield name, f"{p}={value!r}", {**base, p: value}
            if "resolve" in props:
                yield name, "resolve='maybe'", {**base, "resolve": "maybe"}
        elif kind == "missing":
            for p in schema.get("required", []):
                yield name, f"no {p}", {k: v for k, v in base.items() if k != p}
        elif kind == "extra":
            yield name, "bogus", {**base, "bogus": 1}
            yield name, "Branch", {**base, "Branch": "main"}
            yield name, "10000 keys", {**base, **{f"k{i}": i for i in range(10_000)}}
        elif kind == "hostile names":
            for p, spec in props.items():
                sql = ("sql", "text", "script", "score")  # (SQL and words: any text)
                if spec["type"] == "string" and p not in sql and "enum" not in spec:
                    for value in BAD_NAMES:
                        yield name, f"{p}={value[:30]!r}", {**base, p: value}
                    # a new branch's or checkpoint's name may be odd
                    new_names = (
                        ("fork", "name"),
                        ("checkpoint", "name"),
                        ("set_merge_check", "name"),
                        ("set_merge_policy", "name"),
                        ("simulate", "prefix"),  # (its worlds' names: <prefix>_<i>)
                        ("replay", "as"),
                    )
                    if (name, p) not in new_names:
                        for value in ODD_NAMES:
                            yield name, f"{p}={value[:30]!r}", {**base, p: value}
                if spec["type"] == "array" and p != "params":
                    for value in [*BAD_NAMES[:4], *ODD_NAMES]:
                        yield name, f"{p}=[{value[:30]!r}]", {**base, p: [value]}
                if p == "rows":
                    for value in [
                        {"users;drop/1": "ours"},
                        {"users/1": "bogus"},
                        {"users/x y": "ours"},
                        {LONG: "theirs"},
                        {"users/1": 7},
                    ]:
                        yield name, f"rows={str(value)[:30]}", {**base, p: value}
        elif kind == "huge values":
            for p, spec in props.items():
                if spec["type"] == "integer" and p != "offset":
                    for value in (BIG, -BIG, 2**63, -(2**63) - 1, -1):
                        yield name, f"{p}={value}", {**base, p: value}
                if spec["type"] == "object" and p == "meta":
                    yield name, "meta of 70 KB", {**base, p: {"k": "x" * 70_000}}
                if spec["type"] == "array" and p != "params":
                    yield name, f"{p} of 10000", {**base, p: [f"t{i}" for i in range(10_000)]}
                    yield name, f"{p} empty", {**base, p: []}
            if name == "put":
                columns = {f"c{i}": i for i in range(10_000)}
                yield name, "record of 10000 unknown columns", {**base, "record": columns}
                yield name, "record naming another key", {**base, "record": {"id": 2}}
            if name == "sql":
                yield name, "100 KB of nothing", {"sql": LONG}
                yield name, "100 KB string", {"sql": "select '" + LONG}
                yield (
                    name,
                    "10000 params",
                    {"sql": "select $1 from nowhere", "params": [1] * 10_000},
                )


def snapshot(folder: Path) -> dict:
    """Main's schema and rows, the open worlds, and the rows of world w."""
    with chronos_lite.open(folder) as db:
        out: dict[str, Any] = {
            "schema": db.query("select type, name, sql from sqlite_master order by name"),
            "worlds": [(w.name, w.wid, w.parent, w.meta, w.version) for w in db.database.worlds()],
        }
        for table in sorted(db.database.tables()):
            out[table] = db.query(f"select * from {quote_ident(table)} order by rowid")
        out["w"] = db.query("select * from users order by id", branch="w")
    return out


@pytest.fixture(scope="module", params=["safe", "allow-merge"])
def bad_input_server(request, tmp_path_factory) -> Iterator[tuple[Server, Path, list[dict]]]:
    """One server per mode for every bad-argument test, with a world w of its own."""
    folder = tmp_path_factory.mktemp("bad") / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key autoincrement, name text, email text)")
        db.sql("insert into users(name, email) values ('Ada', 'ada@x.org'), ('Bo', null)")
    server = Server(folder, *(["--allow-merge"] if request.param == "allow-merge" else []))
    try:
        server.initialize()
        assert server.call("fork", {"name": "w"})["isError"] is False
        assert (
            server.call(
                "put", {"table": "users", "id": "1", "record": {"name": "Ada W"}, "branch": "w"}
            )["isError"]
            is False
        )
        tools = server.result("tools/list")["tools"]
        yield server, folder, tools
        assert server.close() == 0
    finally:
        server.kill()


@pytest.mark.parametrize(
    "kind", ["wrong types", "missing", "extra", "hostile names", "huge values"]
)
def test_bad_arguments_every_tool(bad_input_server, kind):
    server, folder, tools = bad_input_server
    before = snapshot(folder)
    validators = {t["name"]: jsonschema.Draft202012Validator(t["inputSchema"]) for t in tools}
    count = 0
    for name, what, args in bad_calls(tools, kind):
        result = server.call(name, args)
        text = tool_error(result)
        count += 1
        if not validators[name].is_valid(args):
            # the schema's own message: names the parameter and says what it must be
            assert any(
                words in text for words in ("is required: ", "unknown parameter '", " must be ")
            ), (name, what, text)
            assert len(text) < 2000, (name, what, len(text))
        if kind == "missing":
            missing = what.removeprefix("no ")
            assert text.startswith(f"'{missing}' is required: "), (name, what, text)
        if kind == "extra":
            assert text.startswith("unknown parameter '"), (name, what, text)
            assert f"{name} takes " in text, (name, what, text)
    assert count >= len(tools) or kind == "missing"
    server.ping()  # still serving
    assert snapshot(folder) == before


def test_huge_offsets_are_empty_pages(bad_input_server):
    server, folder, _ = bad_input_server
    for name in ["diff", "merge_preview"]:
        for offset in [BIG, 2**63]:
            result = server.call(name, {"branch": "w", "offset": offset})
            assert result["isError"] is False, result
    assert server.call("diff", {"branch": "w", "offset": -1})["isError"] is True


def test_unknown_tool_and_arguments_not_an_object(bad_input_server):
    server, folder, tools = bad_input_server
    before = snapshot(folder)
    for name in ["x", "", "DESCRIBE", "describe ", "fork; drop", "__init__", "REGISTRY", LONG]:
        result = server.call(name, {})
        assert tool_error(result) == f"unknown tool '{name}'; see tools/list"
    for tool in tools:
        for arguments in [[], ["branch", "w"], "w", 1, True]:
            text = tool_error(server.call(tool["name"], arguments))
            assert text == f"{tool['name']}'s arguments must be a JSON object", text
    # no arguments at all: like {}
    assert server.result("tools/call", {"name": "branches"})["isError"] is False
    assert server.call("describe", None)["isError"] is False
    server.ping()
    assert snapshot(folder) == before


# --- known server bugs -----------------------------------------------------------------------


def test_deeply_nested_line_is_answered(serve):
    s = serve()
    s.write(b"[" * 2000 + b"]" * 2000 + b"\n")
    assert s.read()["error"]["code"] in (-32700, -32600)
    s.ping()


def test_infinite_values_are_sent_as_json(serve):
    s = serve()
    s.initialize()
    s.call("sql", {"sql": "select 1e999 as big, -1e999 as small"})


def test_nan_in_a_line_is_a_parse_error(serve):
    s = serve()
    s.write(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}\n')
    assert s.read()["error"]["code"] == -32700


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("get", {"table": "users", "id": "9" * 30}),
        ("delete", {"table": "users", "id": "9" * 30, "branch": "w"}),
        ("put", {"table": "users", "id": "9" * 30, "record": {"name": "x"}, "branch": "w"}),
        ("put", {"table": "users", "id": "2", "record": {"name": BIG}, "branch": "w"}),
        ("sql", {"sql": "select $1", "params": [BIG]}),
    ],
)
def test_integers_too_big_for_sqlite(serve, shop, folder, name, args):
    s = serve()
    s.initialize()
    s.call("fork", {"name": "w"})
    before = snapshot(folder)
    tool_error(s.call(name, args))
    assert snapshot(folder) == before


def test_name_with_a_trailing_newline_is_refused(serve, shop):
    s = serve()
    s.initialize()
    text = tool_error(s.call("fork", {"name": "evil\n"}))
    assert "without spaces" in text
    assert [w.name for w in shop.database.worlds()] == []


def test_limit_over_the_maximum_names_it(serve, shop):
    s = serve()
    s.initialize()
    s.call("fork", {"name": "w"})
    assert "1000" in tool_error(s.call("diff", {"branch": "w", "limit": 5000}))
