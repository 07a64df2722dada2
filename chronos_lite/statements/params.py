"""A call's parameters, bound in every form SQLite reads: chronos' ``$1, $2, ...`` (the
array's values by position, in every statement of the call), and SQLite's own ``?``, ``?NNN``,
``:name``, ``@name`` and ``$name``, numbered as SQLite numbers them (a bare ``?`` is one past
the largest number given so far; a name takes the next number the first time it appears).

``params`` is an array: each parameter takes the value at its number, a named one too (as
Python's sqlite3 binds a sequence; the spec's ``params`` is an array); or an object, whose
values the named parameters take by name (``{"name": "Ada"}`` for ``:name``, ``@name`` or
``$name``, as sqlite3 binds a dict). ``?`` and ``?NNN`` are
written as ``$N`` with the number SQLite gives them, so that every parameter has a name and one
set of values binds them all by name (a number SQLite skips, ``?2`` alone, leaves no unnamed
parameter behind).
"""

from __future__ import annotations

import json
from typing import Any

from ..sqltext import tokens

Params = list[Any] | dict[str, Any] | None
MARKS = ":@$"  # (a name given with its mark, {":name": ...}, is the same name)


def bound(statements: list[str], params: Params) -> tuple[list[str], dict[str, Any]]:
    """The statements (``?`` and ``?NNN`` as ``$N``) and the values to bind them by name."""
    numbered = [_numbered(stmt) for stmt in statements]
    texts = [text for text, _names in numbered]
    if isinstance(params, dict):
        return texts, {str(k).lstrip(MARKS): _value(v) for k, v in params.items()}
    values = {str(i): _value(v) for i, v in enumerate(params or [], start=1)}
    for _text, names in numbered:
        for name, index in names.items():
            if name not in values and str(index) in values:
                values[name] = values[str(index)]
    return texts, values


def _value(value: Any) -> Any:
    """A JSON value as SQLite takes it (objects and arrays as JSON text, booleans as 0/1)."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return int(value)
    return value


def _numbered(stmt: str) -> tuple[str, dict[str, int]]:
    """The statement with each ``?`` and ``?NNN`` as ``$N``, and each named parameter's
    number."""
    if not any(mark in stmt for mark in "?:@$"):
        return stmt, {}
    found = tokens(stmt)
    largest, names, edits = 0, dict[str, int](), list[tuple[int, int, str]]()
    for i, (text, kind, at, end) in enumerate(found):
        after = found[i + 1] if i + 1 < len(found) and found[i + 1][2] == end else None
        word = after[0] if after is not None and after[1] == "word" else None
        if kind == "punct" and text == "?":
            if word is not None and word.isdigit():
                largest = max(largest, int(word))
                edits.append((at, end + len(word), f"${int(word)}"))
            else:
                largest += 1
                edits.append((at, end, f"${largest}"))
        elif kind == "punct" and text in ":@" and word is not None:
            largest = _named(names, word, largest)
        elif kind == "word" and text.startswith("$") and len(text) > 1:
            largest = _named(names, text[1:], largest)
    for at, end, text in reversed(edits):
        stmt = stmt[:at] + text + stmt[end:]
    return stmt, names


def _named(names: dict[str, int], name: str, largest: int) -> int:
    if name in names:
        return largest
    names[name] = largest + 1
    return largest + 1
