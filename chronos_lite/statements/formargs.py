"""A chronos statement's words as its operation's arguments, where they differ: a policy's
list as its rules, an agent's list spread out, a FIND's list as its filter, a MARK READER's
columns."""

from __future__ import annotations

import json
from typing import Any

from .. import sqltext
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


MARK_READER = "mark_reader"


def mark_reader_args(stmt: str, form: str) -> dict[str, Any]:
    """MARK READER name READS (table.column, ...) [CRITICAL]: the mark_reader operation's
    arguments (a name in double quotes keeps its spaces and dots: "odd table".email)."""
    toks = [t[:2] for t in sqltext.tokens(stmt, "_-$")]
    while toks and toks[-1] == (";", "punct"):
        toks.pop()
    at = 0

    def fail(why: str) -> ChronosError:
        shown = toks[at][0] if at < len(toks) else "the end"
        return ChronosError(f"{why}, not {shown}; its form: {form}", BAD_ARGUMENT)

    def word(text: str) -> None:
        nonlocal at
        if at >= len(toks) or toks[at][1] != "word" or toks[at][0].upper() != text:
            raise fail(f"expected {text}")
        at += 1

    def punct(ch: str) -> bool:
        nonlocal at
        if at < len(toks) and toks[at] == (ch, "punct"):
            at += 1
            return True
        return False

    def name(what: str) -> str:
        nonlocal at
        if at >= len(toks) or toks[at][1] not in ("word", "name"):
            raise fail(f"expected {what}")
        at += 1
        return toks[at - 1][0]

    word("MARK")
    word("READER")
    args: dict[str, Any] = {"name": name("<name>")}
    word("READS")
    if not punct("("):
        raise fail("expected ( and the columns it reads, (table.column, ...)")
    reads = []
    while True:
        table = name("<table.column>")
        if not punct("."):
            raise fail(f'expected . and a column after {table} ("table.column")')
        reads.append(f"{table}.{name('<table.column>')}")
        if punct(")"):
            break
        if not punct(","):
            raise fail("expected , or ) after a column")
    args["reads"] = reads
    if at < len(toks):
        word("CRITICAL")
        args["critical"] = True
    if at < len(toks):
        raise fail("unexpected")
    return args
