"""`chronos serve`'s HTTP/1.1 server (`mcp/httpd.py`) in this process, with a small handler:
keep-alive, pipelining, chunked bodies and their limit, `Expect: 100-continue`, HTTP/1.0 and
`Connection: close`, malformed requests, the timeouts (shortened here), the connection limit,
a slow call beside another connection, stopping with requests in flight, and TLS."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import pytest

from chronos_lite.mcp import httpd
from chronos_lite.mcp.serve import _listen

WAIT_S = 30  # any socket or thread wait in these tests
MAX_BODY = 1024


class Handler:
    """Echoes a request; ``/refuse`` answers 403 without reading the body, ``/slow`` waits
    for ``go``, ``/boom`` fails."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.entered = threading.Event()

    def __call__(self, request: httpd.Request) -> httpd.Response:
        if request.path == "/refuse":
            return 403, {"content-type": "application/json"}, b'{"error": "no"}'
        if request.path == "/boom":
            raise RuntimeError("a fault")
        if request.path == "/slow":
            self.entered.set()
            assert self.go.wait(WAIT_S)
        body = request.body()
        if body is None:
            return 413, {}, b'{"error": "too large"}'
        seen = {"method": request.method, "path": request.path, "body": body.decode()}
        return 200, {"content-type": "application/json"}, json.dumps(seen).encode()


@contextmanager
def served(tls: ssl.SSLContext | None = None) -> Iterator[tuple[int, httpd.Server, Handler]]:
    handler = Handler()
    sock = _listen("127.0.0.1", 0)
    server = httpd.Server(sock, handler, MAX_BODY, tls)
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield port, server, handler
    finally:
        handler.go.set()
        server.stop()
        thread.join(WAIT_S)
        assert not thread.is_alive()


def raw(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)


class Reply:
    """A response as read off a raw socket: its status, headers (lower case) and body."""

    def __init__(self, reader: BinaryIO) -> None:
        line = reader.readline()
        assert line.startswith(b"HTTP/1.1 "), line
        self.status = int(line.split()[1])
        self.headers: dict[str, str] = {}
        while (line := reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.body = reader.read(int(self.headers.get("content-length", "0")))

    def getheader(self, name: str) -> str | None:
        return self.headers.get(name)


def replies(sock: socket.socket, count: int) -> list[Reply]:
    """The next ``count`` responses on ``sock``, read in order."""
    reader = sock.makefile("rb", buffering=0)  # (unbuffered: nothing is read past them)
    return [Reply(reader) for _ in range(count)]


def closed(sock: socket.socket) -> bool:
    """Whether the server closed the connection (what it still sends is read first)."""
    try:
        while data := sock.recv(65536):
            del data
    except ConnectionResetError:
        pass
    return True


def post(path: str, body: bytes, *extra: str, version: str = "1.1") -> bytes:
    head = [f"POST {path} HTTP/{version}", "Host: localhost", f"Content-Length: {len(body)}"]
    return ("\r\n".join([*head, *extra]) + "\r\n\r\n").encode() + body


def test_keep_alive_and_a_fault_of_the_handler():
    with served() as (port, _server, _handler):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
        conn.request("POST", "/a", body=b"one")
        first = conn.getresponse()
        assert json.loads(first.read())["body"] == "one" and first.getheader("date")
        sock = conn.sock
        conn.request("POST", "/boom", body=b"")
        failed = conn.getresponse()
        assert failed.status == 500 and "a fault" in json.loads(failed.read())["error"]
        conn.request("HEAD", "/a")
        head = conn.getresponse()
        assert head.status == 200 and head.read() == b"" and int(head.getheader("content-length"))
        conn.request("POST", "/b", body=b"two")
        assert json.loads(conn.getresponse().read())["body"] == "two"
        assert conn.sock is sock  # (one connection throughout)
        conn.close()


def test_pipelined_requests_are_answered_in_order_then_malformed_http_is_400():
    with served() as (port, _server, _handler):
        sock = raw(port)
        sock.sendall(
            post("/1", b"a") + post("/2", b"bb") + post("/3", b"ccc") + b"NOT HTTP\r\n\r\n"
        )
        answered = replies(sock, 4)
        assert [json.loads(r.body)["path"] for r in answered[:3]] == ["/1", "/2", "/3"]
        assert answered[3].status == 400 and "malformed" in json.loads(answered[3].body)["error"]
        assert closed(sock)
        upgrade = "Connection: Upgrade", "Upgrade: h2c"  # (not served: answered, then closed)
        sock = raw(port)
        sock.sendall(post("/up", b"", *upgrade) + b"PRI * HTTP/2.0\r\n\r\n")
        answered = replies(sock, 1)
        assert answered[0].getheader("connection") == "close"
        assert json.loads(answered[0].body)["path"] == "/up"
        assert closed(sock)
        sock = raw(port)  # (a body with an Upgrade: refused, not dropped)
        sock.sendall(post("/up", b"{}", *upgrade))
        assert replies(sock, 1)[0].status == 400
        assert closed(sock)


def test_chunked_bodies_and_their_limit():
    with served() as (port, _server, _handler):
        sock = raw(port)
        chunked = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        sock.sendall(chunked.encode() + b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        assert json.loads(replies(sock, 1)[0].body)["body"] == "hello world"
        sock.sendall(chunked.encode() + b"400\r\n" + b"x" * 1024 + b"\r\n")  # (the limit, whole)
        sock.sendall(b"1\r\ny\r\n")  # (a byte past it)
        assert replies(sock, 1)[0].status == 413
        assert closed(sock)


def test_expect_100_continue_is_answered_when_the_body_is_wanted():
    with served() as (port, _server, _handler):
        sock = raw(port)
        sock.sendall(post("/e", b"", "Expect: 100-continue").replace(b"Length: 0", b"Length: 4"))
        assert sock.recv(25) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"body")
        assert json.loads(replies(sock, 1)[0].body)["body"] == "body"
        sock.close()
        sock = raw(port)  # (refused from the head: no 100, and the connection closes)
        sock.sendall(post("/refuse", b"", "Expect: 100-continue").replace(b"th: 0", b"th: 9"))
        refused = replies(sock, 1)[0]
        assert refused.status == 403 and refused.getheader("connection") == "close"
        assert closed(sock)


def test_http_1_0_and_connection_close_are_honoured():
    with served() as (port, _server, _handler):
        sock = raw(port)
        sock.sendall(post("/x", b"hi", version="1.0"))
        assert json.loads(replies(sock, 1)[0].body)["body"] == "hi"
        assert closed(sock)
        sock = raw(port)
        sock.sendall(post("/x", b"a", "Connection: keep-alive", version="1.0"))
        kept = replies(sock, 1)[0]
        assert kept.getheader("connection") == "keep-alive"
        sock.sendall(post("/y", b"b", "Connection: close"))
        last = replies(sock, 1)[0]
        assert json.loads(last.body)["path"] == "/y" and last.getheader("connection") == "close"
        assert closed(sock)


def test_slow_clients_are_cut_off(monkeypatch):
    monkeypatch.setattr(httpd, "IDLE_S", 0.3)
    monkeypatch.setattr(httpd, "REQUEST_S", 0.3)
    with served() as (port, _server, _handler):
        idle = raw(port)
        assert idle.recv(1) == b""  # (idle too long: closed without a word)
        slow = raw(port)
        slow.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\n")  # (a head never finished)
        assert replies(slow, 1)[0].status == 408
        assert closed(slow)
        slow = raw(port)
        slow.sendall(post("/x", b"").replace(b"th: 0", b"th: 5") + b"ab")  # (a body never done)
        assert replies(slow, 1)[0].status == 408
        assert closed(slow)


def test_a_head_too_large_is_431():
    with served() as (port, _server, _handler):
        sock = raw(port)
        try:
            sock.sendall(b"POST /x HTTP/1.1\r\nX-Big: " + b"x" * (httpd.MAX_HEAD + 65536))
        except (BrokenPipeError, ConnectionResetError):
            pass  # (refused while it was still sending: the status was sent all the same)
        assert replies(sock, 1)[0].status == 431


def test_a_slow_call_holds_up_only_its_own_connection():
    with served() as (port, _server, handler):
        slow = raw(port)
        slow.sendall(post("/slow", b"s"))
        assert handler.entered.wait(WAIT_S)
        other = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
        other.request("POST", "/quick", body=b"q")
        assert json.loads(other.getresponse().read())["body"] == "q"
        handler.go.set()
        assert json.loads(replies(slow, 1)[0].body)["path"] == "/slow"


def test_past_the_connection_limit_503(monkeypatch):
    monkeypatch.setattr(httpd, "MAX_CONNECTIONS", 2)
    with served() as (port, _server, _handler):
        kept = []
        for _ in range(2):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
            conn.request("POST", "/x", body=b"")
            assert conn.getresponse().read()
            kept.append(conn)
        third = raw(port)
        third.sendall(post("/x", b""))
        refused = replies(third, 1)[0]
        assert refused.status == 503 and refused.getheader("retry-after") == "1"
        assert closed(third)
        kept.pop().close()
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:  # (its thread ends soon after: a place comes free)
            again = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
            again.request("POST", "/x", body=b"")
            if again.getresponse().status == 200:
                break
            time.sleep(0.05)
        else:
            pytest.fail("no place came free")


def test_a_stop_answers_what_is_in_flight_and_closes_the_idle():
    with served() as (port, server, handler):
        idle = raw(port)
        idle.sendall(post("/x", b"i"))
        assert replies(idle, 1)[0].status == 200
        busy = raw(port)
        busy.sendall(post("/slow", b"b"))
        assert handler.entered.wait(WAIT_S)
        server.stop()
        assert idle.recv(1) == b""
        handler.go.set()
        answered = replies(busy, 1)[0]
        assert answered.status == 200 and answered.getheader("connection") == "close"
        assert closed(busy)


@pytest.fixture
def certificate(tmp_path) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl isn't installed")
    cert, key = str(tmp_path / "c.pem"), str(tmp_path / "k.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"]
        + ["-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
        timeout=WAIT_S,
    )
    return cert, key


def test_tls_and_a_handshake_that_never_comes(certificate, monkeypatch):
    monkeypatch.setattr(httpd, "HANDSHAKE_S", 0.3)
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with served(context) as (port, _server, _handler):
        trusting = ssl.create_default_context(cafile=cert)
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=WAIT_S, context=trusting)
        for body in (b"one", b"x" * 1000):
            conn.request("POST", "/t", body=body)
            assert json.loads(conn.getresponse().read())["body"] == body.decode()
        conn.close()
        mute = raw(port)  # (connects, never says hello)
        assert mute.recv(1) == b""


def test_no_thread_to_be_had_closes_the_connection_and_serving_goes_on(monkeypatch):
    with served() as (port, _server, _handler):

        def no_thread(_self: threading.Thread) -> None:
            raise RuntimeError("can't start new thread")

        with monkeypatch.context() as patched:
            patched.setattr(threading.Thread, "start", no_thread)
            refused = raw(port)
            assert closed(refused)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
        conn.request("POST", "/x", body=b"after")
        assert json.loads(conn.getresponse().read())["body"] == "after"
