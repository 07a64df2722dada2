"""Who an HTTP request acts as: always an agent, by ``Authorization: Bearer <token>``.

* an agent's own token: that agent (its rights, quotas and audit trail);
* under ``--safe``, no token on a server without ``--token``, or the server's token: the agent
  ``guest`` (made when the server starts if the file has none: read, fork, write_own, no
  quotas). Every such client is the same guest: they share its worlds;
* the server's token without ``--safe``, the admin token, and no token without ``--safe``: 403
  (the database's own user runs ``chronos mcp`` on the database's machine);
* any other token (wrong, rotated, a disabled or dropped agent's): 401. After a few wrong
  tokens from one address, its requests wait out a growing pause (429 with ``Retry-After``)
  before a token is looked at again: guessing one is slow.
"""

from __future__ import annotations

import hmac
import math
import time
from dataclasses import dataclass, field

import apsw

from ..storage.governance import agents

GUEST = "guest"
GUEST_RIGHTS = ("read", "fork", "write_own")
FREE_TRIES = 3  # wrong tokens an address may send before it waits
LONGEST_WAIT = 60.0


class Denied(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


@dataclass
class Access:
    """The server's tokens and mode, and the wrong tokens each address sent."""

    conn: apsw.Connection  # (the event loop's own, for token lookups)
    safe: bool = False
    token: str | None = None
    admin_token: str | None = None
    wrong: dict[str, tuple[int, float]] = field(default_factory=dict)
    verified: dict[bytes, bytes] = field(default_factory=dict)  # (agents.by_token's)

    def caller(self, authorization: str | None, client: str) -> str:
        """The agent a request acts as (its name), or Denied with the status to answer."""
        self._not_waiting(client)
        if authorization is None:
            if self.safe and self.token is None:
                return GUEST
            raise Denied(403, self._no_token())
        token = _bearer(authorization)
        if self.token is not None and _same(token, self.token):
            if self.safe:
                return GUEST
            raise Denied(
                403,
                "the server's token acts as no agent (without --safe): send an "
                "agent's own token (chronos <folder> agent create <name>)",
            )
        if self.admin_token is not None and _same(token, self.admin_token):
            raise Denied(
                403,
                "the admin token isn't an agent's: the database's own user runs "
                "chronos mcp <folder> on the database's machine",
            )
        agent = agents.by_token(self.conn, token, self.verified)
        if agent is None:
            self._wrong(client)
            raise Denied(
                401,
                "the token is no enabled agent's (wrong, rotated, or its agent "
                "disabled or dropped)",
                {"www-authenticate": "Bearer"},
            )
        self.wrong.pop(client, None)
        return agent.name

    def _no_token(self) -> str:
        if self.safe:
            return "this server needs a token: an agent's own, or the server's (--token)"
        return (
            "send an agent's token (Authorization: Bearer <token>); a server started with "
            "--safe lets a request without one act as the agent guest"
        )

    def _not_waiting(self, client: str) -> None:
        count, until = self.wrong.get(client, (0, 0.0))
        wait = until - time.monotonic()
        if wait > 0:
            raise Denied(
                429,
                f"{count} wrong tokens from {client}: wait {wait:.1f} s before the next one",
                {"retry-after": str(math.ceil(wait))},
            )

    def _wrong(self, client: str) -> None:
        count = self.wrong.get(client, (0, 0.0))[0] + 1
        pause = 0.0 if count <= FREE_TRIES else min(0.25 * 2 ** (count - FREE_TRIES), LONGEST_WAIT)
        self.wrong[client] = (count, time.monotonic() + pause)
        if len(self.wrong) > 10_000:  # (addresses that gave up long ago)
            now = time.monotonic()
            self.wrong = {k: v for k, v in self.wrong.items() if v[1] > now}


def _bearer(authorization: str) -> str:
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _same(given: str, kept: str) -> bool:
    return hmac.compare_digest(given.encode(), kept.encode())


def ensure_guest(conn: apsw.Connection) -> None:
    """The agent guest, made if the file has none (in the caller's write transaction)."""
    if agents.find(conn, GUEST, dropped=True) is None:
        agents.create(conn, GUEST, agents.ordered(GUEST_RIGHTS), {})
