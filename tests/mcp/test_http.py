"""`chronos serve`: MCP over HTTP, raw requests for every status rule, and the MCP SDK's
streamable-HTTP client running an agent's workflow end to end."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import signal
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from helpers import CHRONOS

import chronos_lite

WAIT_S = 30  # any process or socket wait in these tests


@pytest.fixture
def shop(tmp_path):
    """A database with users, and the agents bot (read, fork, write_own) and off (disabled)."""
    folder = tmp_path / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("insert into users(name) values ('Ada'), ('Bo')")
        bot = db.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
        off = db.call("agent", action="create", name="off", rights=["read"])
        db.call("agent", action="alter", name="off", disable=True)
    return folder, bot.data["token"], off.data["token"]


@contextmanager
def serving(folder, *flags: str) -> Iterator[int]:
    """``chronos serve folder --port 0 flags``: the port it listens on; SIGTERM at the end."""
    proc = subprocess.Popen(
        [CHRONOS, "serve", str(folder), "--port", "0", *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # (the first line says where it listens)
        found = re.search(r":(\d+)/mcp", line)
        assert found, line + proc.stderr.read()
        yield int(found.group(1))
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=WAIT_S) == 0


def post(port: int, body: object, token: str | None = None, **headers: str):
    """A POST to /mcp: (status, headers, the JSON body or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
    sent = {"Content-Type": "application/json", **headers}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", "/mcp", body=data, headers=sent)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), json.loads(raw) if raw else None


def call(port: int, token: str | None, tool: str, **arguments):
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    status, _headers, body = post(port, message, token, **{"MCP-Protocol-Version": "2025-11-25"})
    assert status == 200, body
    return body["result"]


def test_an_agent_works_by_its_token(shop):
    folder, bot, _off = shop
    with serving(folder) as port:
        status, _h, body = post(
            port,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25"},
            },
            bot,
        )
        assert status == 200 and body["result"]["protocolVersion"] == "2025-11-25"
        status, _h, body = post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, bot)
        names = {t["name"] for t in body["result"]["tools"]}
        assert "find" in names and "merge" not in names  # (its rights: no merge)
        assert call(port, bot, "fork", name="bots")["isError"] is False
        done = call(
            port, bot, "sql", sql="update users set name = 'Ada L.' where id = 1", branch="bots"
        )
        assert done["isError"] is False, done
        refused = call(port, bot, "sql", sql="update users set name = 'x' where id = 2")
        assert refused["isError"] is True
        found = call(port, bot, "find", table="users", text="ada", branch="bots")
        assert found["structuredContent"]["rows"][0]["name"] == "Ada L."
    with chronos_lite.open(folder) as db:
        assert db.world("bots").owner == "bot"
        assert db.get("users", 1)["name"] == "Ada"


def test_every_status_rule(shop):
    folder, bot, off = shop
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with serving(folder, "--admin-token", "admin-secret") as port:
        assert post(port, ping, bot)[0] == 200
        assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, bot)[:2:2] == (
            202,
        )
        status, _h, body = post(port, {"jsonrpc": "2.0", "method": "x"}, bot)
        assert (status, body) == (202, None)  # (a notification: no body)
        assert post(port, {"jsonrpc": "2.0", "id": 9, "result": {}}, bot)[0] == 202
        status, _h, body = post(port, [ping], bot)
        assert (status, body["error"]["code"]) == (400, -32600)
        status, _h, body = post(port, b"{not json", bot)
        assert (status, body["error"]["code"]) == (400, -32700)
        status, _h, body = post(port, ping, bot, **{"MCP-Protocol-Version": "1999-01-01"})
        assert status == 400 and "1999-01-01" in body["error"]["message"]
        assert post(port, ping, bot, **{"Content-Type": "text/plain"})[0] == 415
        status, _h, body = post(port, ping, bot, Origin="http://evil.example")
        assert status == 403 and "Origin" in body["error"]
        assert post(port, ping)[0] == 403  # no token, no --safe
        assert post(port, ping, "admin-secret")[0] == 403
        status, headers, _b = post(port, ping, off)  # a disabled agent's token
        assert status == 401 and headers.get("www-authenticate") == "Bearer"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
        conn.request("GET", "/mcp")
        response = conn.getresponse()
        assert (response.status, response.getheader("allow")) == (405, "POST")
        response.read()
        conn.putrequest("POST", "/mcp")  # 9 MB announced: refused before the body is sent
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(9 * 1024 * 1024))
        conn.putheader("Authorization", f"Bearer {bot}")
        conn.endheaders()
        assert conn.getresponse().status == 413
        conn.close()


def test_wrong_tokens_back_off_per_address(shop):
    folder, bot, _off = shop
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    wrong = "ca_00000000_" + "x" * 30
    with serving(folder) as port:
        statuses = [post(port, ping, wrong)[0] for _ in range(4)]
        assert statuses == [401, 401, 401, 401]
        status, headers, body = post(port, ping, bot)  # (even a right token waits now)
        assert status == 429 and int(headers["retry-after"]) >= 1, body
        time.sleep(0.6)
        assert post(port, ping, bot)[0] == 200  # (a right one after the pause: reset)
        assert post(port, ping, wrong)[0] == 401


def test_safe_mode_serves_the_guest_without_a_token(shop):
    folder, _bot, _off = shop
    with serving(folder, "--safe") as port:
        assert call(port, None, "fork", name="g1")["isError"] is False
        assert (
            call(port, None, "sql", sql="delete from users where id = 2", branch="g1")["isError"]
            is False
        )
        assert call(port, None, "merge", branch="g1")["isError"] is True  # (not a guest's)
    with serving(folder, "--safe", "--token", "server-secret") as port:
        assert call(port, "server-secret", "get", table="users", id="1")["isError"] is False
        assert post(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"})[0] == 403
    with serving(folder, "--token", "server-secret") as port:
        assert post(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "server-secret")[0] == 403
    with chronos_lite.open(folder) as db:
        assert db.world("g1").owner == "guest"
        assert len(db.query("select * from users")) == 2


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--host", "0.0.0.0"], "beyond loopback"),
        (["--host", "0.0.0.0", "--token", "t"], "TLS"),
        (["--tls-cert", "c.pem"], "both --tls-cert and --tls-key"),
    ],
)
def test_beyond_loopback_needs_a_token_and_tls(shop, flags, words):
    folder, _bot, _off = shop
    done = subprocess.run(
        [CHRONOS, "serve", str(folder), "--port", "0", *flags],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode != 0 and words in done.stderr, done.stderr


def test_tls_with_a_certificate_and_its_key(shop, tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl isn't installed")
    folder, bot, _off = shop
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"]
        + ["-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
        timeout=WAIT_S,
    )
    with serving(folder, "--tls-cert", cert, "--tls-key", key) as port:
        trusting = ssl.create_default_context(cafile=cert)
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=WAIT_S, context=trusting)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        for _ in range(2):  # (kept alive)
            conn.request(
                "POST",
                "/mcp",
                body=json.dumps(ping).encode(),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {bot}"},
            )
            response = conn.getresponse()
            assert (response.status, json.loads(response.read())["result"]) == (200, {})
        conn.close()
    done = subprocess.run(  # (a key that isn't one: refused before listening)
        [CHRONOS, "serve", str(folder), "--port", "0", "--tls-cert", cert, "--tls-key", cert],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert done.returncode != 0 and "can't use" in done.stderr, done.stderr


def test_the_stateless_revision_s_envelope_and_headers(shop):
    folder, bot, _off = shop
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}}
    right = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    with serving(folder) as port:
        status, _h, body = post(port, listing, bot, **right)
        assert status == 200 and body["result"]["ttlMs"] > 0
        status, _h, body = post(port, listing, bot, **{**right, "Mcp-Method": "prompts/list"})
        assert (status, body["id"], body["error"]["code"]) == (400, 7, -32020)
        bare = {
            **listing,
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
        }
        status, _h, body = post(port, bare, bot, **right)
        assert (status, body["error"]["code"]) == (400, -32602)
        call = {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "describe", "arguments": {}, "_meta": meta},
        }
        headers = {**right, "Mcp-Method": "tools/call", "Mcp-Name": "get"}
        assert post(port, call, bot, **headers)[2]["error"]["code"] == -32020
        headers["Mcp-Name"] = "=?base64?ZGVzY3JpYmU=?="  # ("describe", as a header may carry it)
        assert post(port, call, bot, **headers)[0] == 200
        init = {"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"_meta": meta}}
        status, _h, body = post(port, init, bot, **{**right, "Mcp-Method": "initialize"})
        assert (status, body["error"]["code"]) == (404, -32601)
        old = {"jsonrpc": "2.0", "id": 10, "method": "ping"}
        status, _h, body = post(port, old, bot, **{"MCP-Protocol-Version": "2099-01-01"})
        assert (status, body["id"], body["error"]["code"]) == (400, 10, -32022)
        assert body["error"]["data"]["requested"] == "2099-01-01"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # (auto: the stateless revision)
async def test_the_sdk_s_streamable_http_client_runs_the_workflow(shop, mode):
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    folder, bot, _off = shop
    with serving(folder) as port:
        http_client = create_mcp_http_client(headers={"Authorization": f"Bearer {bot}"})
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http_client)
        async with Client(transport, mode=mode) as client:
            tools = await client.list_tools()
            assert "describe" in {t.name for t in tools.tools}
            result = await client.call_tool("describe", {"table": "users"})
            assert not result.is_error and "users: 2 rows" in result.content[0].text
            result = await client.call_tool("fork", {"name": f"sdk-{mode}"})
            assert not result.is_error
            result = await client.call_tool(
                "put",
                {"table": "users", "id": "3", "record": {"name": "Cy"}, "branch": f"sdk-{mode}"},
            )
            assert not result.is_error, result.content[0].text
            result = await client.call_tool("diff", {"branch": f"sdk-{mode}"})
            assert result.content[0].text.startswith(f"1 change on sdk-{mode}")
        await http_client.aclose()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
