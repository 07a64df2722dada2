"""The HTTP/1.1 server under ``chronos serve``: a thread per connection on httptools' parser.

Each connection's thread reads its requests, calls the handler itself and writes the replies:
no hop between an event loop and a worker thread (that hop and uvicorn's loop were most of a
call's time), and a slow call holds up only its own connection. The parsing is httptools'
(llhttp, as under uvicorn); this module is the loop around it: keep-alive, pipelined requests
answered in order, a body (Content-Length or chunked) read only when the handler asks for it,
so that a refusal needs none of it and ``Expect: 100-continue`` is answered only then; the
limits and timeouts below; TLS; and a stop that answers the requests in flight and closes the
idle connections.
"""

from __future__ import annotations

import json
import os
import select
import socket
import ssl
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import unquote

import httptools

Response = tuple[int, dict[str, str], bytes]  # status, headers (lower case), body

MAX_CONNECTIONS = 512  # at once; past them each is answered 503 and closed
REFUSERS = 64  # threads answering those 503s at once; past them a connection is just closed
IDLE_S = 30.0  # a kept-alive connection without a request closes
REQUEST_S = 30.0  # to send a whole request, head and body (a slowloris is cut off)
WRITE_S = 30.0  # to take a whole reply
HANDSHAKE_S = 10.0  # TLS's
LINGER_S = 2.0  # reading what a client still sends after a reply that closes early
MAX_HEAD = 128 * 1024  # a request's line and headers (counted by reads of up to CHUNK)
CHUNK = 65536
_STATUS = {s.value: f"{s.value} {s.phrase}".encode() for s in HTTPStatus}
_NOT_YET = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class Request:
    """A request's head, and its body read only when ``body()`` is called."""

    __slots__ = (
        *("_connection", "method", "path", "headers", "client", "version", "keep_alive"),
        *("expect", "started", "parts", "size", "complete", "too_large"),
    )

    def __init__(self, connection: _Connection, method: str, path: str, headers: dict) -> None:
        self._connection, self.method, self.path, self.headers = connection, method, path, headers
        self.client = connection.client
        self.version = connection.parser.get_http_version()
        self.keep_alive = connection.parser.should_keep_alive()
        self.expect = headers.get("expect", "").lower() == "100-continue"
        self.started = connection.started
        self.parts: list[bytes] = []
        self.size, self.complete, self.too_large = 0, False, False

    def body(self) -> bytes | None:
        """The whole body, or None past the server's limit (the rest isn't kept)."""
        return self._connection.read_body(self)


Handler = Callable[[Request], Response]


class Abort(Exception):
    """The connection ends, after a reply with this status (0: none, the client is gone)."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status, self.why = status, why


class Server:
    """Serves ``handler`` on a listening socket until ``stop`` (a signal handler may call it)."""

    def __init__(
        self, sock: socket.socket, handler: Handler, max_body: int, tls: ssl.SSLContext | None
    ) -> None:
        self.sock, self.handler, self.max_body, self.tls = sock, handler, max_body, tls
        self.stopping = False
        self.wake, self._waker = os.pipe()  # (readable once stopping: wakes every idle wait)
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._refusing = 0

    def stop(self) -> None:
        if not self.stopping:
            self.stopping = True
            os.write(self._waker, b"x")

    def serve(self) -> None:
        """Accept on this thread until ``stop``; then wait for every connection to end (a
        request in flight is answered, an idle connection closes at once)."""
        self.sock.setblocking(False)
        waiting = select.poll()
        waiting.register(self.sock, select.POLLIN)
        waiting.register(self.wake, select.POLLIN)
        try:
            while not self.stopping:
                waiting.poll()
                self._accept()
        finally:
            self.sock.close()
            with self._lock:
                threads = list(self._threads)
            for thread in threads:  # (each ends within the timeouts above)
                thread.join()
            os.close(self.wake)
            os.close(self._waker)

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # (out of file descriptors, say: let some close first)
                print(f"chronos serve: can't accept a connection: {exc}", file=sys.stderr)
                time.sleep(0.1)
                return
            with self._lock:
                refuse = len(self._threads) - self._refusing >= MAX_CONNECTIONS
                if refuse and self._refusing >= REFUSERS:
                    conn.close()
                    continue
                self._refusing += refuse
                connection = _Connection(self, conn, str(address[0]), refuse)
                thread = threading.Thread(target=connection.run, name="chronos-http", daemon=True)
                self._threads.add(thread)
            try:
                thread.start()
            except RuntimeError as exc:  # (the system has no thread to give: as a refusal)
                print(f"chronos serve: can't serve a connection: {exc}", file=sys.stderr)
                with self._lock:
                    self._threads.discard(thread)
                    self._refusing -= refuse
                conn.close()

    def _ended(self, refused: bool) -> None:
        with self._lock:
            self._threads.discard(threading.current_thread())
            self._refusing -= refused


class _Connection:
    """One client's connection, on a thread of its own; also the parser's callbacks."""

    def __init__(self, server: Server, sock: socket.socket, client: str, refuse: bool) -> None:
        self.server, self.sock, self.client, self.refuse = server, sock, client, refuse
        self.parser = httptools.HttpRequestParser(self)
        self.ready: deque[Request] = deque()  # heads read, answered in order (pipelining)
        self.reading: Request | None = None  # the request whose body is being parsed
        self.head_open, self.head_size, self.started = False, 0, 0.0
        self.url = b""
        self.fields: list[tuple[bytes, bytes]] = []
        self.last = time.monotonic()  # the last reply (idle since)
        self.broken: Abort | None = None  # what ends the connection once its turn comes
        self.polls: dict[tuple[int, bool], select.poll] = {}

    # the parser's callbacks: a request's head, its body, its end
    def on_message_begin(self) -> None:
        self.head_open, self.head_size, self.started = True, 0, time.monotonic()
        self.url, self.fields = b"", []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_open:  # (not a chunked body's trailers)
            self.fields.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_open = False
        # (a value without the whitespace around it, as RFC 9110 reads fields)
        headers = {
            n.decode("latin-1").lower(): v.decode("latin-1").strip(" \t") for n, v in self.fields
        }
        body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
        if body and self.parser.should_upgrade():  # (llhttp would pass the body over)
            self.broken = Abort(400, "a request with a body can't switch protocols (Upgrade)")
            return
        method = self.parser.get_method().decode("latin-1")
        self.reading = Request(self, method, _path(self.url), headers)
        self.ready.append(self.reading)

    def on_body(self, data: bytes) -> None:
        request = self.reading
        if request is not None:
            request.size += len(data)
            request.too_large = request.size > self.server.max_body
            if not request.too_large:
                request.parts.append(data)

    def on_message_complete(self) -> None:
        if self.reading is not None:
            self.reading.complete, self.reading = True, None

    # the connection
    def run(self) -> None:
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock.setblocking(False)
            if self.server.tls is not None:
                self.sock = self.server.tls.wrap_socket(
                    self.sock, server_side=True, do_handshake_on_connect=False
                )
                self._handshake()
            while self._next():
                pass
        except Abort as abort:
            if abort.status:
                self._last_word(abort)
        except (OSError, ssl.SSLError):
            pass  # (the client went away: no one to tell)
        finally:
            self.sock.close()
            self.server._ended(self.refuse)

    def _next(self) -> bool:
        """Answer the next request, or read more; False: the connection ends here."""
        if self.ready:
            return self._answer(self.ready[0])
        if self.broken is not None:
            raise self.broken
        between = not self.head_open and self.reading is None
        deadline = self.last + IDLE_S if between else self.started + REQUEST_S
        data = self._recv(deadline, between)
        if data:
            self._feed(data)
            return True
        if between:
            return False  # (closed by the client, idle too long, or the server stops)
        raise _cut(data)

    def read_body(self, request: Request) -> bytes | None:
        try:
            if request.expect and not request.complete:
                request.expect = False
                self._send(b"HTTP/1.1 100 Continue\r\n\r\n")
            while not (request.complete or request.too_large):
                if self.broken is not None:
                    raise self.broken
                data = self._recv(request.started + REQUEST_S, False)
                if not data:
                    raise _cut(data)
                self._feed(data)
        except (OSError, ssl.SSLError):  # (not the handler's fault: the connection just ends)
            raise Abort(0, "the client went away") from None
        return None if request.too_large else b"".join(request.parts)

    def _feed(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:  # (another protocol follows: answered, then closed)
            self.broken = self.broken or Abort(0, "the client switched protocols")
        except httptools.HttpParserError as exc:
            self.broken = Abort(400, f"malformed HTTP request: {exc}")
        if self.head_open:
            self.head_size += len(data)  # (bytes the parser holds unparsed count too)
            if self.head_size > MAX_HEAD:
                self.broken = Abort(431, f"a request's head is at most {MAX_HEAD // 1024} KB")

    def _answer(self, request: Request) -> bool:
        try:
            status, headers, body = _refused() if self.refuse else self.server.handler(request)
        except Abort:
            raise
        except Exception as exc:  # (a fault of ours: said, and the connection goes on)
            traceback.print_exc(file=sys.stderr)
            status, headers, body = _error(500, f"internal error: {exc!r}")
        self.ready.popleft()
        # (the last request before a switch of protocol: nothing after it is answered)
        last = self.broken is not None and not self.broken.status and not self.ready
        keep = request.keep_alive and request.complete and not last
        keep = keep and not (self.server.stopping or self.refuse)
        self._reply((status, headers, body), keep, request)
        if not request.complete:
            self._linger()
        return keep

    def _reply(self, response: Response, keep: bool, request: Request | None = None) -> None:
        status, headers, body = response
        head = [b"HTTP/1.1 " + _STATUS.get(status, str(status).encode()), b"date: " + _date()]
        head += [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
        head.append(b"content-length: " + str(len(body)).encode())
        if not keep:
            head.append(b"connection: close")
        elif request is not None and request.version == "1.0":
            head.append(b"connection: keep-alive")  # (HTTP/1.0 closes unless told so)
        if request is not None and request.method == "HEAD":
            body = b""  # (its length, not itself)
        self._send(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self.last = time.monotonic()

    def _last_word(self, abort: Abort) -> None:
        """The status an aborted connection ends with (unless a reply was under way)."""
        try:
            self._reply(_error(abort.status, abort.why), keep=False)
            self._linger()
        except (Abort, OSError, ssl.SSLError):
            pass

    def _handshake(self) -> None:
        assert isinstance(self.sock, ssl.SSLSocket)
        deadline = time.monotonic() + HANDSHAKE_S
        while True:
            try:
                self.sock.do_handshake()
                return
            except ssl.SSLWantReadError:
                ready = self._wait(select.POLLIN, deadline)
            except ssl.SSLWantWriteError:
                ready = self._wait(select.POLLOUT, deadline)
            if not ready:
                raise Abort(0, "no TLS handshake in time")

    def _recv(self, deadline: float, between: bool) -> bytes | None:
        """What the client sent next: empty once it closed; None at ``deadline`` or (``between``
        requests) once the server stops."""
        sock = self.sock
        while True:
            buffered = isinstance(sock, ssl.SSLSocket) and sock.pending()  # (decrypted, unread)
            if buffered or self._wait(select.POLLIN, deadline, between):
                try:
                    return sock.recv(CHUNK)
                except _NOT_YET:  # (a part of a TLS record)
                    continue
            return None

    def _send(self, data: bytes) -> None:
        deadline = time.monotonic() + WRITE_S
        view = memoryview(data)
        while view:
            try:
                view = view[self.sock.send(view) :]
            except _NOT_YET:
                if not self._wait(select.POLLOUT, deadline):
                    raise Abort(0, "the client took no reply") from None

    def _wait(self, events: int, deadline: float, wake: bool = False) -> bool:
        """Whether the socket is ready before ``deadline`` (and, with ``wake``, before the
        server stops: a request sent already is still served)."""
        polling = self.polls.get((events, wake))
        if polling is None:
            polling = self.polls[events, wake] = select.poll()
            polling.register(self.sock, events)
            if wake:
                polling.register(self.server.wake, select.POLLIN)
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        return any(fd != self.server.wake for fd, _ in polling.poll(left * 1000))

    def _linger(self) -> None:
        """After a reply sent before its request was all read, what the client still sends
        is read for a while and dropped: it then reads the reply rather than a reset."""
        try:
            if not isinstance(self.sock, ssl.SSLSocket):
                self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_S
            while self._recv(deadline, False):
                pass
        except (OSError, ssl.SSLError):
            pass


def _cut(data: bytes | None) -> Abort:
    """Why a request ends unread: its client closed, or took too long to send it."""
    if data is None:
        return Abort(408, f"a request must be sent whole within {REQUEST_S:.0f} s")
    return Abort(400, "the connection ended inside a request")


def _path(url: bytes) -> str:
    """A request target's path, percent-decoded (``/mcp``, as it almost always is, at once)."""
    if url == b"/mcp":
        return "/mcp"
    try:
        path = httptools.parse_url(url).path or b"/"
    except httptools.HttpParserInvalidURLError:
        return ""
    return unquote(path.decode("latin-1"))


def _error(status: int, message: str) -> Response:
    body = json.dumps({"error": message}).encode()
    return status, {"content-type": "application/json"}, body


def _refused() -> Response:
    status, headers, body = _error(503, f"{MAX_CONNECTIONS} connections are open: try again")
    return status, {**headers, "retry-after": "1"}, body


_dated: tuple[int, bytes] = (0, b"")


def _date() -> bytes:
    """The Date header's value, made once a second."""
    global _dated
    now = int(time.time())
    if _dated[0] != now:
        _dated = (now, formatdate(now, usegmt=True).encode())
    return _dated[1]
