"""Who may use the review page: the secret made at start (in the printed URL, then a cookie),
a Host naming loopback on every request (DNS rebinding), and for a change, a request from the
page's own origin (a cross-site form or script is refused)."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
HOST = "127.0.0.1"  # (the only address the page listens on)


@dataclass(frozen=True)
class Access:
    """The server's secret and port, and the checks a request passes."""

    port: int
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @property
    def cookie_name(self) -> str:
        # (cookies aren't kept apart by port: two servers on one machine each have their own)
        return f"chronos_web_{self.port}"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?token={self.secret}"

    def set_cookie(self) -> str:
        """The Set-Cookie value that carries the secret after the first visit."""
        return f"{self.cookie_name}={self.secret}; Path=/; HttpOnly; SameSite=Strict"

    def host_refusal(self, host: str | None) -> str | None:
        """Why a Host header isn't this server on loopback (a DNS-rebound name), or None."""
        name, _, port = (host or "").rpartition(":")
        if name.lower() in LOOPBACK_NAMES and port == str(self.port):
            return None
        return (
            f"this page answers only at http://{HOST}:{self.port}/ (or localhost:{self.port}): "
            f"open the URL chronos web printed"
        )

    def has_secret(self, query_token: str | None, cookie_header: str | None) -> bool:
        """Whether the request carries the secret, in ``?token=`` or in the page's cookie."""
        given = query_token if query_token is not None else self._cookie(cookie_header)
        return given is not None and hmac.compare_digest(given.encode(), self.secret.encode())

    def _cookie(self, header: str | None) -> str | None:
        if not header:
            return None
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(header)
        except CookieError:
            return None
        morsel = jar.get(self.cookie_name)
        return morsel.value if morsel is not None else None

    def origin_refusal(self, host: str | None, origin: str | None, site: str | None) -> str | None:
        """Why a change (a POST) isn't from this page itself, or None: its ``Origin`` must be
        this page's (``http://`` and the Host, checked already), its ``Sec-Fetch-Site``
        same-origin. A browser says at least one of them; a request saying neither is refused."""
        own = f"http://{host or ''}"
        if site is not None and site != "same-origin":
            return f"a change must come from this page itself, not {site!r} (Sec-Fetch-Site)"
        if origin is not None and origin != own:
            return f"a change must come from this page itself ({own}), not from {origin!r}"
        if site is None and origin is None:
            return "a change must come from this page itself: its Origin header is missing"
        return None
