"""A `chronos mcp` process spoken to line by line, for the tests that need raw JSON-RPC.

Every line read must be one strict JSON object (no NaN or Infinity); a reply that doesn't come
within ``WAIT`` seconds fails the test rather than hanging the run.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from helpers import CHRONOS

MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
WAIT = 30  # seconds for one reply: generous, as a hang is a failure anyway
INTERNAL = "XX000"  # the code of "internal error (a bug in chronos)"


def strict_json(line: bytes) -> Any:
    def reject(token: str) -> None:
        raise ValueError(f"{token} is not JSON")

    return json.loads(line, parse_constant=reject)


class Server:
    """One ``chronos mcp`` process, fed raw lines; its stdout read one line at a time."""

    def __init__(self, folder: Path, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [CHRONOS, "mcp", str(folder), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = bytearray()
        self.next_id = 0
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    def _pump_stdout(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")  # stdout closed

    def _pump_stderr(self) -> None:  # drained, so a long traceback can't block the server
        for chunk in iter(lambda: self.proc.stderr.read1(1 << 16), b""):
            self.stderr += chunk

    # --- raw lines ----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def read_line(self, wait: float = WAIT) -> bytes:
        try:
            line = self._lines.get(timeout=wait)
        except queue.Empty:
            raise AssertionError(f"no reply within {wait} s") from None
        if not line:
            self.proc.wait(WAIT)
            raise AssertionError(
                f"the server closed stdout (exit {self.proc.returncode}); "
                f"stderr: {bytes(self.stderr[-2000:]).decode(errors='replace')}"
            )
        return line

    def read(self) -> dict:
        """The next reply: one line, one strict JSON-RPC 2.0 object."""
        line = self.read_line()
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        message = strict_json(line)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        assert "id" in message and ("result" in message) != ("error" in message), message
        return message

    def pending(self) -> bool:
        return not self._lines.empty()

    # --- requests -----------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, version: str | None = None) -> dict:
        """Send one request and return its reply (checked to carry the request's id)."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if version is not None:
            meta = {VERSION_KEY: version, CAPABILITIES_KEY: {}}
            params = {**(params or {}), "_meta": meta}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.read()
        assert reply["id"] == self.next_id, (message, reply)
        return reply

    def result(self, method: str, params: Any = None, **kw: Any) -> dict:
        reply = self.request(method, params, **kw)
        assert "result" in reply, reply
        return reply["result"]

    def error(self, method: str, params: Any = None, **kw: Any) -> dict:
        reply = self.request(method, params, **kw)
        assert "error" in reply, reply
        return reply["error"]

    def initialize(self, version: str | None = "2025-11-25") -> dict:
        params: dict[str, Any] = {"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        if version is not None:
            params["protocolVersion"] = version
        result = self.result("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def call(self, name: Any, arguments: Any, **kw: Any) -> dict:
        return self.result("tools/call", {"name": name, "arguments": arguments}, **kw)

    def ping(self) -> None:
        assert self.result("ping") == {}

    def close(self) -> int:
        """End stdin; the exit code. Nothing more may come on stdout."""
        self.proc.stdin.close()
        code = self.proc.wait(WAIT)
        rest = []
        while (line := self.read_line_or_eof()) != b"":
            rest.append(line)
        assert rest == [], f"stdout after the last reply: {rest}"
        return code

    def read_line_or_eof(self) -> bytes:
        try:
            return self._lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError("stdout didn't close") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


def tool_error(result: dict) -> str:
    """The text of an isError tool result, checked to say what to do rather than crash."""
    assert result["isError"] is True, result
    text = result["content"][0]["text"]
    assert result["content"][0]["type"] == "text"
    assert result["structuredContent"]["error"] == text
    assert result["structuredContent"]["code"] != INTERNAL, text
    assert not text.startswith("internal error"), text
    assert len(text) >= 10, text
    return text


class HttpServer:
    """One ``chronos serve`` process, spoken to a request at a time as ``Server`` is (the same
    ``request``, ``call``, ``ping``...): each message its own POST, as the agent ``token`` names
    (None: no Authorization header)."""

    def __init__(self, folder: Path, *flags: str, token: str | None = None) -> None:
        import re

        self.proc = subprocess.Popen(
            [CHRONOS, "serve", str(folder), "--port", "0", *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.token = token
        self.next_id = 0
        line = self.proc.stderr.readline().decode()
        found = re.search(r":(\d+)/mcp", line)
        assert found, line + self.proc.stderr.read().decode()
        self.port = int(found.group(1))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for _chunk in iter(lambda: self.proc.stderr.read1(1 << 16), b""):
            pass

    def post(self, message: Any) -> tuple[int, Any]:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        headers = {"Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        return response.status, strict_json(raw) if raw else None

    def request(self, method: str, params: Any = None, **_kw: Any) -> dict:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        status, reply = self.post(message)
        assert status == 200, (status, reply)
        assert reply["id"] == self.next_id and ("result" in reply) != ("error" in reply), reply
        return reply

    def result(self, method: str, params: Any = None, **kw: Any) -> dict:
        reply = self.request(method, params, **kw)
        assert "result" in reply, reply
        return reply["result"]

    def initialize(self, version: str | None = "2025-11-25") -> dict:
        params: dict[str, Any] = {"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        if version is not None:
            params["protocolVersion"] = version
        return self.result("initialize", params)

    def call(self, name: Any, arguments: Any, **kw: Any) -> dict:
        return self.result("tools/call", {"name": name, "arguments": arguments}, **kw)

    def ping(self) -> None:
        assert self.result("ping") == {}

    def close(self) -> int:
        """SIGTERM: the exit code once the requests in flight are answered."""
        import signal

        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(WAIT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
