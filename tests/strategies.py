"""The property tests' setup, in one place: every hypothesis test's settings (a plain test's,
a state machine's, a fuzzer's example count from its environment variable), and the pieces the
model-based state machines share (the world names they fork, how many may be open at once, the
strategies that pick a world or a branch).

A module of its own rather than conftest.py: conftest.py is pytest's, for fixtures and hooks,
loaded for every test (most need no hypothesis); these are plain values imported by name, as
helpers.py is (pyproject's pythonpath puts tests/ on sys.path for every folder of tests).
"""

from __future__ import annotations

import os
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


# What no property test here is held to: each case runs real SQLite (processes, for some), so
# its time varies with the machine; a failing case re-run under a tracer (the explain phase)
# takes minutes; slow cases and large data are what some of them draw on purpose.
_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def example_settings(examples: int, *, fixture: bool = False, keep: bool = True) -> settings:
    """A property test's settings: ``examples`` cases. ``fixture``: it takes a function-scoped
    fixture on purpose (one database for all its cases); ``keep``: failing examples are kept in
    hypothesis' database for the next run (not for fuzzers, whose cases are processes)."""
    suppressed = [*_SUPPRESSED, *([HealthCheck.function_scoped_fixture] if fixture else [])]
    return settings(
        max_examples=examples,
        deadline=None,
        report_multiple_bugs=False,
        phases=[p for p in Phase if p is not Phase.explain],
        suppress_health_check=suppressed,
        **({} if keep else {"database": None}),
    )


def machine_settings(examples: int, steps: int) -> settings:
    """A state machine's settings: ``examples`` runs of up to ``steps`` rules each."""
    return settings(example_settings(examples), stateful_step_count=steps)


def examples_from(variable: str, default: int) -> int:
    """How many cases a test runs: the environment's ``variable`` (``python3 dev.py fuzz N``
    sets the fuzzers'), else ``default``."""
    return int(os.environ.get(variable, str(default)))
