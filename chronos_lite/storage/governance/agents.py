"""Agents: who acts on the database, with a name, a secret token and only the rights given.

Kept in the file (``_chronos_agents``). A token is made from the operating system's random
source and shown once; the file keeps only a salted scrypt hash of it, compared in constant
time. A token starts with the agent's public key (``ca_<key>_``), so the one hash to try is
found without trying every agent's. A dropped agent keeps its row (its worlds and history go on
naming it), without a token: its name isn't given to another agent.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import apsw

from ... import errors, names
from ...errors import ChronosError
from ..fetch import all_rows

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_agents(
    name TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,          -- public: the start of its token
    rights TEXT NOT NULL,              -- comma-separated, in RIGHTS' order
    enabled INTEGER NOT NULL DEFAULT 1,
    max_concurrent INTEGER,
    max_query_ms INTEGER,
    max_memory_mb INTEGER,
    salt BLOB,
    hash BLOB,                         -- scrypt(token, salt); NULL once dropped
    created REAL NOT NULL,
    changed REAL NOT NULL,
    dropped REAL
) WITHOUT ROWID;
"""

RIGHTS = ("read", "fork", "write_own", "write_main", "merge_own", "merge", "restore", "admin")
QUOTAS = ("max_concurrent", "max_query_ms", "max_memory_mb")
# Names history gives callers that aren't agents (a safe-mode session's, safe:<hex>, can't be
# an agent's: no agent's name holds a colon).
RESERVED = {"owner", "app"}
# scrypt's cost: ~50 ms and 16 MB a check on this machine class (RFC 7914's interactive level)
_N, _R, _P = 2**14, 8, 1


@dataclass(frozen=True)
class Agent:
    name: str
    key: str
    rights: tuple[str, ...]
    enabled: bool
    max_concurrent: int | None
    max_query_ms: int | None
    max_memory_mb: int | None
    created: float
    changed: float
    dropped: float | None = None

    def quotas(self) -> dict[str, int | None]:
        return {q: getattr(self, q) for q in QUOTAS}


def ordered(rights: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Rights (the operation's schema has checked each) in RIGHTS' order, each once."""
    wanted = {r.lower() for r in rights}
    return tuple(r for r in RIGHTS if r in wanted)


# (hashlib, hmac and secrets are imported where a token is made or checked: most commands
# never do, and they cost a start several milliseconds)


def _hash(token: str, salt: bytes) -> bytes:
    import hashlib

    return hashlib.scrypt(token.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)


def _new_token(key: str) -> tuple[str, bytes, bytes]:
    import secrets

    token = f"ca_{key}_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    return token, salt, _hash(token, salt)


def _row(r: tuple) -> Agent:
    rights = tuple(x for x in r[2].split(",") if x)
    return Agent(r[0], r[1], rights, bool(r[3]), r[4], r[5], r[6], r[7], r[8], r[9])


_COLUMNS = (
    "name, key, rights, enabled, max_concurrent, max_query_ms, max_memory_mb, created, changed, "
    "dropped"
)


def find(conn: apsw.Connection, name: str, dropped: bool = False) -> Agent | None:
    """The agent of that name (any case); a dropped one only with ``dropped``."""
    rows = all_rows(
        conn.execute(
            f"select {_COLUMNS} from main._chronos_agents where name = ? collate nocase", (name,)
        )
    )
    if not rows:
        return None
    agent = _row(rows[0])
    return agent if dropped or agent.dropped is None else None


def get(conn: apsw.Connection, name: str) -> Agent:
    agent = find(conn, name)
    if agent is None:
        raise ChronosError(
            f"no agent {name}: SHOW AGENTS lists them (chronos <folder> agent list)",
            errors.NOT_FOUND,
        )
    return agent


def listing(conn: apsw.Connection) -> list[Agent]:
    return [
        _row(r)
        for r in all_rows(
            conn.execute(
                f"select {_COLUMNS} from main._chronos_agents where dropped is null order by name"
            )
        )
    ]


def create(
    conn: apsw.Connection, name: str, rights: tuple[str, ...], quotas: dict[str, int | None]
) -> tuple[Agent, str]:
    """A new agent (in the caller's write transaction) and its token, the only time it is
    seen."""
    names.check(name, "an agent's name")
    if name.lower() in RESERVED:
        raise ChronosError(
            f"{name} can't be an agent's name: history and worlds' owner say owner for the "
            f"database's own user and app for an app writing main directly, so an agent named "
            f"so would own what they made; choose another name",
            errors.BAD_ARGUMENT,
        )
    was = find(conn, name, dropped=True)
    if was is not None and was.dropped is None:
        raise ChronosError(
            f"an agent named {was.name} exists: alter it (ALTER AGENT {was.name} SET (...)), or "
            f"give it a new token (chronos <folder> agent token {was.name} --rotate)",
            errors.UNIQUE_VIOLATION,
        )
    if was is not None:
        raise ChronosError(
            f"an agent named {was.name} was dropped; its worlds and history keep the name: "
            f"choose another name",
            errors.UNIQUE_VIOLATION,
        )
    import secrets

    key = secrets.token_hex(4)
    token, salt, digest = _new_token(key)
    now = time.time()
    conn.execute(
        "insert into main._chronos_agents(name, key, rights, enabled, max_concurrent, "
        "max_query_ms, max_memory_mb, salt, hash, created, changed) "
        "values (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)",
        (
            name,
            key,
            ",".join(rights),
            *(quotas.get(q) for q in QUOTAS),
            salt,
            digest,
            now,
            now,
        ),
    )
    return get(conn, name), token


def alter(
    conn: apsw.Connection,
    name: str,
    rights: tuple[str, ...] | None = None,
    quotas: dict[str, int | None] | None = None,
    enabled: bool | None = None,
) -> Agent:
    """Change what is given (rights replaced whole; the quotas named; enabled or not)."""
    agent = get(conn, name)
    sets: list[str] = []
    args: list[object] = []
    if rights is not None:
        sets.append("rights = ?")
        args.append(",".join(rights))
    for q, value in (quotas or {}).items():
        sets.append(f"{q} = ?")
        args.append(value)
    if enabled is not None:
        sets.append("enabled = ?")
        args.append(int(enabled))
    if not sets:
        raise ChronosError(
            "nothing to change: give rights, a quota (max_concurrent, max_query_ms, "
            "max_memory_mb), enabled, or policy",
            errors.BAD_ARGUMENT,
        )
    conn.execute(
        f"update main._chronos_agents set {', '.join(sets)}, changed = ? where name = ?",
        (*args, time.time(), agent.name),
    )
    return get(conn, agent.name)


def rotate(conn: apsw.Connection, name: str) -> tuple[Agent, str]:
    """A new token for the agent; the old one stops working."""
    agent = get(conn, name)
    token, salt, digest = _new_token(agent.key)
    conn.execute(
        "update main._chronos_agents set salt = ?, hash = ?, changed = ? where name = ?",
        (salt, digest, time.time(), agent.name),
    )
    return agent, token


def drop(conn: apsw.Connection, name: str) -> Agent:
    """The agent can act no more; its row stays, without a token, so its name stays its."""
    agent = get(conn, name)
    now = time.time()
    conn.execute(
        "update main._chronos_agents set salt = NULL, hash = NULL, enabled = 0, dropped = ?, "
        "changed = ? where name = ?",
        (now, now, agent.name),
    )
    return agent


def by_token(
    conn: apsw.Connection, token: str, verified: dict[bytes, bytes] | None = None
) -> Agent | None:
    """The enabled agent a token is (None for any other token: wrong, rotated, disabled,
    dropped), compared in constant time. ``verified``: tokens this process found right (by
    their SHA-256), with the stored hash they matched: a token seen before skips scrypt (tens
    of milliseconds on purpose) while its agent's hash is the same; a new token or a wrong
    one pays it each time."""
    found = re.match(r"^ca_([0-9a-f]{8})_[A-Za-z0-9_-]{20,}$", token or "")
    if found is None:
        return None
    rows = all_rows(
        conn.execute(
            f"select {_COLUMNS}, salt, hash from main._chronos_agents where key = ?",
            (found.group(1),),
        )
    )
    if not rows or rows[0][-1] is None:
        return None
    agent = _row(rows[0][:10])
    salt, digest = rows[0][10], rows[0][11]
    import hashlib
    import hmac

    seen = hashlib.sha256(token.encode()).digest()
    known = verified is not None and hmac.compare_digest(verified.get(seen, b""), digest)
    if not known:
        if not hmac.compare_digest(_hash(token, salt), digest):
            return None
        if verified is not None:
            if len(verified) >= 4096:
                verified.clear()
            verified[seen] = digest
    return agent if agent.enabled and agent.dropped is None else None
