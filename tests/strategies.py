"""Hypothesis pieces the model-based state machines share (test_isolation_property.py and
test_merge_property.py): the world names they fork, how many may be open at once, the
strategies that pick a world or a branch, and a machine's settings.

A module of its own rather than conftest.py: conftest.py is pytest's, for fixtures and hooks,
loaded for every test (most need no hypothesis); these are plain values imported by name, as
mcp_lines.py is (pytest puts tests/ on sys.path: the folder has no __init__.py).
"""

from __future__ import annotations

from collections.abc import Iterable

import hypothesis.strategies as st
from hypothesis import HealthCheck, Phase, settings

WORLD_NAMES = ("w0", "w1", "w2", "w3", "w4", "w5")
MAX_OPEN = 5  # a machine forks only while fewer worlds than this are open


def free_world_name(open_worlds: Iterable[str]) -> st.SearchStrategy[str]:
    """One of WORLD_NAMES not open now."""
    taken = set(open_worlds)
    return st.sampled_from([w for w in WORLD_NAMES if w not in taken])


def world_of(open_worlds: Iterable[str]) -> st.SearchStrategy[str]:
    """One of the open worlds (in name order)."""
    return st.sampled_from(sorted(open_worlds))


def branch_of(open_worlds: Iterable[str]) -> st.SearchStrategy[str]:
    """main or one of the open worlds (main first, then the worlds in name order)."""
    return st.sampled_from(["main", *sorted(open_worlds)])


def machine_settings(examples: int, steps: int) -> settings:
    """A state machine's settings: ``examples`` runs of up to ``steps`` rules each."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        report_multiple_bugs=False,
        # The explain phase re-runs a failing case under a tracer: minutes for a state machine.
        phases=[p for p in Phase if p is not Phase.explain],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
