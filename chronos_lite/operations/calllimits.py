"""A call's time and memory limits: the session's own (``chronos mcp --max-query-ms``), safe
mode's and an agent's default, and an agent's quotas where they are less; each with whose it
is, for the error that stops a statement at it."""

from __future__ import annotations

from ..storage import limits
from ..storage.limits import Limits
from .caller import Caller


def time_limit(caller: Caller) -> int | None:
    """A caller's statement time limit in ms (None: none)."""
    return limits_of(caller).ms


def limits_of(caller: Caller) -> Limits:
    """A caller's limits: for time, the session's own (``max_query_ms``: 0 is none), else safe
    mode's and an agent's default, and an agent's quota where it is less; for memory, the
    caller's ``max_memory_mb`` and the agent's quota, the lesser."""
    if caller.max_query_ms is not None:
        ms: int | None = caller.max_query_ms or None
    else:
        ms = limits.AGENT_QUERY_MS if caller.mode in ("safe", "agent") else None
    ms_from = ""
    quota = caller.quotas.get("max_query_ms")
    if quota is not None and (ms is None or quota < ms):
        ms, ms_from = quota, f"agent {caller.name}'s max_query_ms"
    memory, memory_from = caller.max_memory_mb, "the session's max_memory_mb"
    quota = caller.quotas.get("max_memory_mb")
    if quota is not None and (memory is None or quota <= memory):
        memory, memory_from = quota, f"agent {caller.name}'s max_memory_mb"
    return Limits(ms, ms_from, memory, memory_from if memory else "")
