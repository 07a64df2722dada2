"""``chronos <folder> web``: the review page over HTTP on loopback. Every request needs the
secret made at start and a Host naming loopback; a change (POST) needs the page's own origin
too. One database, one call at a time, each a registry call as the database's own user."""

from __future__ import annotations

import os
import secrets
import signal
import sys
import threading
import webbrowser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ..errors import ChronosError
from ..operations.caller import Caller
from ..operations.registry import REGISTRY, Reply
from ..storage.db import Database
from . import actions, pages
from .access import HOST, Access
from .html import page

STOPS = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C, and a service manager's stop
DRAIN_SECONDS = 60.0  # how long a stop waits for the answers being written
MAX_BODY = 16 * 1024  # a form of a few fields; anything bigger is refused unread
CSP = (
    "default-src 'none'; style-src 'nonce-{n}'; script-src 'nonce-{n}'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


class Site:
    """The open database and what every request shares: one registry call at a time, and the
    requests being answered (a stop lets them finish; none starts after it)."""

    def __init__(self, db: Database, access: Access, folder: str) -> None:
        self.db, self.access, self.folder = db, access, folder
        self.lock = threading.Lock()
        self.caller = Caller(name="owner", mode="owner")
        self.answering = 0
        self.closing = False
        self.idle = threading.Condition()

    def call(self, name: str, args: dict[str, Any]) -> Reply:
        with self.lock:
            return REGISTRY.call(self.db, name, args, self.caller)

    @contextmanager
    def answer(self) -> Iterator[bool]:
        """Around a request's answer: False once the server is stopping (then nothing is
        written: the client sees the connection close, never half an answer)."""
        with self.idle:
            if self.closing:
                yield False
                return
            self.answering += 1
        try:
            yield True
        finally:
            with self.idle:
                self.answering -= 1
                self.idle.notify_all()

    def drain(self, timeout: float) -> None:
        """Stop taking requests; wait for those being answered (at most ``timeout`` s)."""
        with self.idle:
            self.closing = True
            self.idle.wait_for(lambda: self.answering == 0, timeout)


class Handler(BaseHTTPRequestHandler):
    server_version = "chronos-web"
    protocol_version = "HTTP/1.1"
    site: Site  # (set on the class the server makes)

    def do_GET(self) -> None:
        self._answered(self._get)

    def do_POST(self) -> None:
        self._answered(self._post)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # (the stdlib's own answers: 501 for another method, 400 for a bad request line)
        self._answered(lambda: super(Handler, self).send_error(code, message, explain))

    def _answered(self, answer: Callable[[], None]) -> None:
        with self.site.answer() as open_:
            if open_:
                answer()
            else:
                self.close_connection = True

    def _get(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if not self._allowed(query):
            return
        if "token" in query:  # (the secret leaves the address bar: the cookie carries it)
            rest = urlencode([(k, v) for k, vs in query.items() if k != "token" for v in vs])
            self._redirect(url.path + ("?" + rest if rest else ""))
            return
        views: dict[str, Callable[[], tuple[str, str]]] = {
            "/": lambda: pages.overview(self.site.call),
            "/world": lambda: pages.world(
                self.site.call,
                _text(query, "name"),
                _offset(query, "doff"),
                _offset(query, "poff"),
            ),
            "/history": lambda: pages.history(self.site.call, _offset(query, "page")),
        }
        view = views.get(url.path)
        if view is None:
            self._plain(HTTPStatus.NOT_FOUND, f"no page {url.path}: the page starts at /")
            return
        self._page(HTTPStatus.OK, view)

    def _post(self) -> None:
        url = urlsplit(self.path)
        if not self._allowed(parse_qs(url.query)):
            return
        headers = self.headers
        refusal = self.site.access.origin_refusal(
            headers.get("Host"), headers.get("Origin"), headers.get("Sec-Fetch-Site")
        )
        if refusal:
            self._plain(HTTPStatus.FORBIDDEN, refusal)
            return
        decide = {"/approve": actions.approve, "/reject": actions.reject}.get(url.path)
        if decide is None:
            self._plain(HTTPStatus.NOT_FOUND, f"nothing to do at {url.path}: /approve, /reject")
            return
        form = self._form()
        if form is None:
            return
        outcome = decide(self.site.call, form)
        said = (outcome.message, outcome.done)
        if outcome.bad_form:
            self._plain(HTTPStatus.BAD_REQUEST, outcome.message)
        elif outcome.done:
            self._page(HTTPStatus.OK, lambda: pages.overview(self.site.call, said))
        else:  # (the world's page again, as it is now, under the refusal)
            name = form.get("world", [""])[0]
            self._page(HTTPStatus.CONFLICT, lambda: pages.world(self.site.call, name, 0, 0, said))

    def _page(self, status: HTTPStatus, view: Callable[[], tuple[str, str]]) -> None:
        """A view's page; a wrong address or a read the database refused (busy, say) as text."""
        try:
            title, body = view()
        except BadQuery as exc:
            self._plain(HTTPStatus.BAD_REQUEST, str(exc))
        except ChronosError as exc:
            self._plain(HTTPStatus.SERVICE_UNAVAILABLE, f"chronos: {exc.message} (reload)")
        else:
            self._html(status, title, body)

    def _allowed(self, query: dict[str, list[str]]) -> bool:
        """The Host is this server on loopback and the secret is there; else refused."""
        access = self.site.access
        refusal = access.host_refusal(self.headers.get("Host"))
        if refusal:
            self._plain(HTTPStatus.FORBIDDEN, refusal)
            return False
        tokens = query.get("token", [])
        token = tokens[0] if len(tokens) == 1 else ("" if tokens else None)  # (two: neither)
        if not access.has_secret(token, self.headers.get("Cookie")):
            said = "this page needs its secret: open the URL `chronos <folder> web` printed"
            self._plain(HTTPStatus.FORBIDDEN, said)
            return False
        return True

    def _form(self) -> dict[str, list[str]] | None:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self._plain(HTTPStatus.LENGTH_REQUIRED, "a form needs its Content-Length")
            return None
        if int(length) > MAX_BODY:  # (refused unread: a POST's connection closes after it)
            self._plain(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a form is at most {MAX_BODY} bytes")
            return None
        body = self.rfile.read(int(length)).decode("utf-8", "replace")
        return parse_qs(body)

    def _html(self, status: HTTPStatus, title: str, body: str) -> None:
        nonce = secrets.token_urlsafe(16)
        html = page(title, body, self.site.folder, nonce).encode()
        self._send(status, "text/html; charset=utf-8", html, CSP.format(n=nonce))

    def _plain(self, status: HTTPStatus, text: str) -> None:
        self._send(
            status, "text/plain; charset=utf-8", (text + "\n").encode(), "default-src 'none'"
        )

    def _redirect(self, where: str) -> None:
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header("Location", where)
        self.send_header("Set-Cookie", self.site.access.set_cookie())
        self.send_header("Content-Length", "0")
        self.send_header("Referrer-Policy", "same-origin")
        self.end_headers()

    def _send(self, status: HTTPStatus, kind: str, body: bytes, csp: str) -> None:
        self.send_response(status)
        if self.command == "POST":  # (a refused POST's body is left unread: no next request)
            self.send_header("Connection", "close")
        for name, value in (
            ("Content-Type", kind),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            ("Content-Security-Policy", csp),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "same-origin"),
        ):
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # (quiet: the URL with its secret is the one thing it prints)


class BadQuery(ValueError):
    """A page's address with a parameter that isn't what the page takes."""


def _text(query: dict[str, list[str]], key: str) -> str:
    return query.get(key, [""])[0]


def _offset(query: dict[str, list[str]], key: str) -> int:
    text = query.get(key, ["0"])[0]
    if not text.isdigit():
        raise BadQuery(f"{key} is a whole number of at least 0 (the page's own links give it)")
    return int(text)


def run(folder: str, db: Database, port: int, browser: bool) -> int:
    """Serve the page until Ctrl-C or SIGTERM (then exit 0); print its URL, and open it in a
    browser where there is one."""
    try:
        server = ThreadingHTTPServer((HOST, port), Handler)
    except OSError as exc:
        raise ChronosError(
            f"can't listen on {HOST}:{port} ({exc.strerror}): give another port with --port "
            f"(0: any free one)"
        ) from None
    server.daemon_threads = True
    access = Access(port=server.server_address[1])
    site = Site(db, access, folder)
    server.RequestHandlerClass = type("Handler", (Handler,), {"site": site})

    def stop(signum: int, frame: Any) -> None:
        # (serving ends between requests: an exception raised here could land anywhere, even
        # in the server's own handling of a request, which would swallow it)
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {signum: signal.signal(signum, stop) for signum in STOPS}  # (before the URL)
    try:
        print(f"chronos web: the review page of {folder} at {access.url}", flush=True)
        print("(Ctrl-C stops it)", flush=True)
        if browser:
            _open(access.url)
        server.serve_forever()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        server.server_close()
    site.drain(DRAIN_SECONDS)  # (a request in flight, a merge say, is answered first)
    with site.lock:  # (and no call runs while the database closes)
        print("chronos web: stopped", flush=True)
    return 0


def _open(url: str) -> None:
    """The URL in a browser, where there is a graphical one; never an error."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return  # (no screen: a text browser would take the terminal over)
    try:
        webbrowser.open(url)
    except Exception:  # (a browser that fails to start is not the page's failure)
        pass


def open_web(folder: str, port: int, browser: bool) -> int:
    """Open the folder and serve it (the CLI's entry)."""
    from ..opening import open_folder

    with open_folder(folder) as db:
        return run(folder, db, port, browser)
