"""Merge policies: the rules under which an agent's merge lands without a person.

A policy is a name and its rules (``_chronos_merge_policies``, every rule kept, defaults
included); an agent keeps to at most one (``_chronos_agent_policies``). A policy only ever takes
rights away: a merge that breaks a rule waits in reviews for a person instead of landing.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from ... import errors, names
from ...errors import ChronosError
from ..fetch import all_rows

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_merge_policies(
    name TEXT PRIMARY KEY COLLATE NOCASE,
    rules TEXT NOT NULL,               -- JSON: every rule, defaults included
    created REAL NOT NULL,
    changed REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _chronos_agent_policies(
    agent TEXT PRIMARY KEY COLLATE NOCASE,
    policy TEXT NOT NULL COLLATE NOCASE
) WITHOUT ROWID;
"""

# Each rule: what kind of value it takes, and its default (a new policy gets every default).
RULES: dict[str, tuple[str, Any]] = {
    "max_rows": ("count", None),
    "max_deletes": ("count", None),
    "rows_per_hour": ("count", None),
    "deletes_per_hour": ("count", None),
    "max_age": ("age", None),
    "tables": ("tables", []),
    "review_tables": ("tables", []),
    "review_columns": ("columns", []),
    "schema": ("flag", False),
    "overwrite": ("flag", False),
    "critical": ("flag", False),
    "check_reads": ("flag", False),
    "require_scope": ("flag", False),
    "confirm_deletes_over": ("count", None),
    "reviewer": ("agent", None),
}
DEFAULTS = {rule: default for rule, (_kind, default) in RULES.items()}
_KINDS = {
    "count": "a whole number of 0 or more, or null (no limit)",
    "age": 'a length of time ("1h", "30m", "2d") or milliseconds, or null (no limit)',
    "tables": "a list of table names",
    "columns": 'a list of "table.column" names',
    "flag": "true or false",
    "agent": "an agent's name, or null (no reviewer)",
}
_AGE = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)"
    r"\s*$",
    re.IGNORECASE,
)
_AGE_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


@dataclass(frozen=True)
class Policy:
    name: str
    rules: dict[str, Any]
    created: float
    changed: float

    def non_default(self) -> dict[str, Any]:
        return {k: v for k, v in self.rules.items() if v != DEFAULTS[k]}


def age_ms(value: str | int | None) -> int | None:
    """``max_age`` in milliseconds (None: no limit)."""
    if value is None or isinstance(value, int):
        return value
    m = _AGE.match(value)
    if not m:
        raise _bad("max_age", value)
    unit = m.group(2).lower()
    unit = "ms" if unit.startswith("milli") or unit == "ms" else unit[0]
    return int(float(m.group(1)) * _AGE_MS[unit])


def checked_rules(
    given: dict[str, Any], agent_exists: Callable[[str], bool], tables: dict[str, list[str]]
) -> dict:
    """The rules given, each checked (an unknown rule or a wrong type is refused with the
    rules' names); ``tables``: main's tables (lower-case name -> columns), which the table and
    column rules must name, so a typo can't leave a rule that never holds."""
    out: dict[str, Any] = {}
    for rule, value in given.items():
        if rule not in RULES:
            raise ChronosError(
                f"no merge policy rule {rule!r}: the rules are {', '.join(RULES)}",
                errors.BAD_ARGUMENT,
            )
        kind = RULES[rule][0]
        out[rule] = _checked(rule, kind, value, agent_exists, tables)
    return out


def _checked(
    rule: str, kind: str, value: Any, agent_exists: Callable[[str], bool], tables: dict
) -> Any:
    if kind == "count":
        if value is None or (type(value) is int and value >= 0):
            return value
    elif kind == "age":
        if value is None or (type(value) is int and value >= 0):
            return value
        if isinstance(value, str):
            age_ms(value)
            return value.strip()
    elif kind == "flag":
        if type(value) is bool:
            return value
    elif kind == "agent":
        if value is None:
            return None
        if isinstance(value, str) and value:
            if not agent_exists(value):
                raise ChronosError(
                    f"reviewer {value!r} is no agent: SHOW AGENTS lists them",
                    errors.BAD_ARGUMENT,
                )
            return value
    elif isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        names = [v.strip() for v in value]
        for name in names:
            _known(rule, kind, name, tables)
        return names
    raise _bad(rule, value)


def _known(rule: str, kind: str, name: str, tables: dict[str, list[str]]) -> None:
    have = ", ".join(sorted(tables)) or "none yet"
    if kind == "tables":
        if name.lower() not in tables:
            raise ChronosError(
                f"{rule}: no table {name!r} on main (its tables: {have})", errors.BAD_ARGUMENT
            )
        return
    table, _, column = name.rpartition(".")
    if not table:
        raise ChronosError(
            f'{rule}: {name!r} isn\'t "table.column" (as "users.email")', errors.BAD_ARGUMENT
        )
    if table.lower() not in tables:
        raise ChronosError(
            f"{rule}: no table {table!r} on main (its tables: {have})", errors.BAD_ARGUMENT
        )
    if column.lower() not in {c.lower() for c in tables[table.lower()]}:
        raise ChronosError(
            f"{rule}: {table} has no column {column!r} (its columns: "
            f"{', '.join(tables[table.lower()])})",
            errors.BAD_ARGUMENT,
        )


def _bad(rule: str, value: Any) -> ChronosError:
    return ChronosError(
        f"merge policy rule {rule} is {_KINDS[RULES[rule][0]]}, not {json.dumps(value)}",
        errors.BAD_ARGUMENT,
    )


def _row(r: tuple) -> Policy:
    return Policy(r[0], {**DEFAULTS, **json.loads(r[1])}, r[2], r[3])


def listing(conn: apsw.Connection) -> list[Policy]:
    rows = all_rows(
        conn.execute(
            "select name, rules, created, changed from main._chronos_merge_policies order by name"
        )
    )
    return [_row(r) for r in rows]


def find(conn: apsw.Connection, name: str) -> Policy | None:
    rows = all_rows(
        conn.execute(
            "select name, rules, created, changed from main._chronos_merge_policies where name = ?",
            (name,),
        )
    )
    return _row(rows[0]) if rows else None


def get(conn: apsw.Connection, name: str) -> Policy:
    found = find(conn, name)
    if found is None:
        names = ", ".join(p.name for p in listing(conn)) or "none yet"
        raise ChronosError(
            f"no merge policy {name} (merge policies: {names}; CREATE MERGE POLICY {name} WITH "
            f"(...) makes one)",
            errors.NOT_FOUND,
        )
    return found


def put(conn: apsw.Connection, name: str, rules: dict[str, Any]) -> tuple[Policy, bool]:
    """Create the policy with these rules (the rest their defaults), or change the rules given
    of the one of that name (the others stay); whether it was made."""
    was = find(conn, name)
    now = time.time()
    if was is None:
        names.check(name, "a merge policy's name")
        conn.execute(
            "insert into main._chronos_merge_policies values (?, ?, ?, ?)",
            (name, json.dumps({**DEFAULTS, **rules}), now, now),
        )
    else:
        conn.execute(
            "update main._chronos_merge_policies set rules = ?, changed = ? where name = ?",
            (json.dumps({**was.rules, **rules}), now, was.name),
        )
    return get(conn, name), was is None


def drop(conn: apsw.Connection, name: str, release: bool) -> tuple[Policy, list[str]]:
    """Remove the policy (refused while agents keep to it, unless ``release``); the agents
    released."""
    policy = get(conn, name)
    keeping = agents_of(conn, policy.name)
    if keeping and not release:
        raise ChronosError(
            f"{'agents' if len(keeping) > 1 else 'agent'} {', '.join(keeping)} "
            f"{'keep' if len(keeping) > 1 else 'keeps'} to merge policy {policy.name}: give "
            f"release_agents (DROP MERGE POLICY "
            f"{policy.name} CASCADE) to take it from them too, or give them another first",
            errors.IN_USE,
        )
    conn.execute("delete from main._chronos_agent_policies where policy = ?", (policy.name,))
    conn.execute("delete from main._chronos_merge_policies where name = ?", (policy.name,))
    return policy, keeping


def assign(conn: apsw.Connection, agent: str, policy: str | None) -> None:
    """Have the agent keep to the policy from now on (None: to none)."""
    if policy is None:
        conn.execute("delete from main._chronos_agent_policies where agent = ?", (agent,))
        return
    conn.execute(
        "insert or replace into main._chronos_agent_policies values (?, ?)", (agent, policy)
    )


def agents_of(conn: apsw.Connection, policy: str) -> list[str]:
    rows = all_rows(
        conn.execute(
            "select agent from main._chronos_agent_policies where policy = ? order by agent",
            (policy,),
        )
    )
    return [r[0] for r in rows]


def kept(conn: apsw.Connection) -> list[tuple[str, str]]:
    """(agent, policy) for every agent keeping to one, by agent."""
    return [
        (r[0], r[1])
        for r in all_rows(
            conn.execute("select agent, policy from main._chronos_agent_policies order by agent")
        )
    ]


def policy_of(conn: apsw.Connection, agent: str) -> Policy | None:
    """The policy the agent keeps to, if any."""
    rows = all_rows(
        conn.execute(
            "select p.name, p.rules, p.created, p.changed from main._chronos_agent_policies a "
            "join main._chronos_merge_policies p on p.name = a.policy where a.agent = ?",
            (agent,),
        )
    )
    return _row(rows[0]) if rows else None
