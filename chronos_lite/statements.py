"""Chronos' own SQL statements for history, run through the registry like the tools:

    SHOW HISTORY [OF] <branch> [LIMIT n]
    RESTORE WORLD <branch> TO '<moment>'
    CHECKPOINT WORLD <branch> <name>
    ROLLBACK WORLD <branch> TO <checkpoint>
    UNDO MERGE <branch> [SKIP CHANGED]
    UNDO AGENT <name> SINCE '<moment>' [WHERE run_id = '<run>']

Each is a call of its own (it runs its own transaction). Names may be quoted like SQL names,
moments are SQL strings.
"""

from __future__ import annotations

from typing import Any

from . import sqltext
from .errors import BAD_ARGUMENT, ChronosError

FIRST = {"SHOW", "RESTORE", "CHECKPOINT", "ROLLBACK", "UNDO"}
FORMS = {
    "SHOW": "SHOW HISTORY [OF] <branch> [LIMIT n]",
    "RESTORE": "RESTORE WORLD <branch> TO '<moment>'",
    "CHECKPOINT": "CHECKPOINT WORLD <branch> <name>",
    "ROLLBACK": "ROLLBACK WORLD <branch> TO <checkpoint>",
    "UNDO": "UNDO MERGE <branch> [SKIP CHANGED] or UNDO AGENT <name> SINCE '<moment>' "
    "[WHERE run_id = '<run>']",
}


def is_chronos(stmt: str) -> bool:
    words = sqltext.keywords(stmt, 2)
    if not words or words[0] not in FIRST:
        return False
    if words[0] == "ROLLBACK":  # a transaction's ROLLBACK stays SQLite's
        return words[1:2] == ["WORLD"]
    return True


def parse(stmt: str) -> tuple[str, dict[str, Any]]:
    """The registry operation a statement runs, and its arguments."""
    tokens = _tokens(stmt)
    upper = [t.upper() if kind == "word" else None for t, kind in tokens]
    first = upper[0]
    try:
        if first == "SHOW" and upper[1] == "HISTORY":
            at = 3 if upper[2:3] == ["OF"] else 2
            args: dict[str, Any] = {"branch": _name(tokens, at)}
            if upper[at + 1 : at + 2] == ["LIMIT"]:
                args["limit"] = int(tokens[at + 2][0])
            return "history", args
        if first == "RESTORE" and upper[1] == "WORLD" and upper[3] in ("TO", "AT"):
            return "restore", {"branch": _name(tokens, 2), "at": _string(tokens, 4)}
        if first == "CHECKPOINT" and upper[1] == "WORLD":
            return "checkpoint", {"branch": _name(tokens, 2), "name": _name(tokens, 3)}
        if first == "ROLLBACK" and upper[1] == "WORLD" and upper[3] == "TO":
            return "rollback", {"branch": _name(tokens, 2), "checkpoint": _name(tokens, 4)}
        if first == "UNDO" and upper[1] == "MERGE":
            skip = upper[3:5] == ["SKIP", "CHANGED"]
            return "undo_merge", {"branch": _name(tokens, 2), "skip_changed": skip}
        if first == "UNDO" and upper[1] == "AGENT" and upper[3] == "SINCE":
            args = {"agent": _name(tokens, 2), "since": _string(tokens, 4)}
            if upper[5:6] == ["WHERE"]:
                if [t for t, _ in tokens[6:8]] != ["run_id", "="]:
                    raise IndexError
                args["run"] = _string(tokens, 8)
            return "undo_agent", args
    except (IndexError, ValueError, TypeError):
        pass
    raise ChronosError(f"can't read this statement; its form: {FORMS[first]}", BAD_ARGUMENT)


def _tokens(stmt: str) -> list[tuple[str, str]]:
    """Words (names like before-migration or 10:00 included), quoted names and strings."""
    return [(text, kind) for text, kind, _s, _e in sqltext.tokens(stmt, "_-.:") if text != ";"]


def _name(tokens: list, at: int) -> str:
    text, kind = tokens[at]
    if kind not in ("word", "name", "string"):
        raise ValueError
    return text


def _string(tokens: list, at: int) -> str:
    text, kind = tokens[at]
    if kind != "string":
        raise ValueError
    return text
