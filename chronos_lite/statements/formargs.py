"""A chronos statement's words as its operation's arguments, where they differ: a policy's
list as its rules, an agent's list spread out, a FIND's list as its filter."""

from __future__ import annotations

import json
from typing import Any

from ..errors import BAD_ARGUMENT, ChronosError

# Rules a policy's (key = value, ...) list writes as one string of names: 'payments, users'.
LIST_RULES = {"tables", "review_tables", "review_columns"}


def _items(value: Any) -> Any:
    """A list the statement writes as one string, ``'read, fork'``: its items."""
    if not isinstance(value, str):
        return value  # (the operation's schema says what it takes)
    return [v.strip() for v in value.split(",") if v.strip()]


def policy_args(args: dict[str, Any]) -> dict[str, Any]:
    """A merge policy statement's arguments: its name, and its list as the rules."""
    rules = {}
    for key, value in args.get("meta", {}).items():
        key = key.lower()
        rules[key] = _items(value) if key in LIST_RULES else value
    return {"name": args["name"], **({"rules": rules} if "meta" in args else {})}


def find_args(args: dict[str, Any], branch: str | None) -> dict[str, Any]:
    """A FIND statement's arguments: its (field = value, ...) list as where, its vector's
    JSON as numbers, the session's branch if it names none."""
    out = {k: v for k, v in args.items() if k != "meta"}
    if "meta" in args:
        out["where"] = args["meta"]
    if "vector" in out:
        try:
            out["vector"] = json.loads(out["vector"])
        except ValueError:
            raise ChronosError(
                f"VECTOR takes a JSON array of numbers in quotes ('[0.1, 0.3]'), not "
                f"{out['vector']!r}",
                BAD_ARGUMENT,
            ) from None
    out.setdefault("branch", branch or "main")
    return out


def agent_args(action: str, args: dict[str, Any]) -> dict[str, Any]:
    """An agent statement's arguments: its action, its name, and its list spread out."""
    out = {"action": action, **{k: v for k, v in args.items() if k != "meta"}}
    for key, value in args.get("meta", {}).items():
        key = key.lower()
        if key == "rights":
            value = _items(value)
        if key == "enabled":
            if not isinstance(value, bool):
                raise ChronosError(f"enabled is true or false, not {value!r}", BAD_ARGUMENT)
            key, value = ("enable" if value else "disable"), True
        out[key] = value
    return out
