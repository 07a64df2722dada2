"""A call's time and memory limits: the session's own (``chronos mcp --max-query-ms``), safe
mode's and an agent's default, and an agent's quotas where they are less; each with whose it
is, for the error that stops a statement at it."""

from __future__ import annotations

from typing import Any

from ..storage import limits

Limits = tuple[tuple[int | None, str], tuple[int | None, str]]


def time_limit(caller: Any) -> int | None:
    """A caller's statement time limit in ms (None: none)."""
    return time_limit_of(caller)[0]


def time_limit_of(caller: Any) -> tuple[int | None, str]:
    """A caller's time limit in ms, and whose it is: the session's own (``max_query_ms``: 0 is
    none), else safe mode's and an agent's default; an agent's quota if that is less."""
    if caller.max_query_ms is not None:
        session = caller.max_query_ms or None
    else:
        session = limits.AGENT_QUERY_MS if caller.mode in ("safe", "agent") else None
    quota = caller.quotas.get("max_query_ms")
    if quota is not None and (session is None or quota < session):
        return quota, f"agent {caller.name}'s max_query_ms"
    return session, ""


def limits_of(caller: Any) -> tuple[tuple[int | None, str], tuple[int | None, str]]:
    """A caller's time and memory limits, each with whose it is."""
    return time_limit_of(caller), memory_limit_of(caller)


def memory_limit_of(caller: Any) -> tuple[int | None, str]:
    """A caller's memory limit in MB (None: none), and whose it is."""
    quota = caller.quotas.get("max_memory_mb")
    session = caller.max_memory_mb
    if quota is not None and (session is None or quota <= session):
        return quota, f"agent {caller.name}'s max_memory_mb"
    return session, "the session's max_memory_mb" if session else ""
