"""Reading a result within a budget: at most so many rows, and so many characters rendered.

A client keeps only so much of a tool's result (Claude Code: 50,000 characters), so a result is
read a row at a time and stops before the row that would take its psql-style text or its JSON
past the budget: no more rows are read from SQLite than fit, and the reply is never built
larger than the budget. A single row too large for it on its own keeps its values' beginnings,
cut to fit, and says so: a long value is read in parts with ``substr()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import render

CUT_MARK = "…"


@dataclass(frozen=True)
class Budget:
    rows: int | None = None  # rows a result may hold (None: all)
    chars: int | None = None  # characters its text, and its JSON, may each take (None: any)


UNBOUNDED = Budget()


@dataclass
class Read:
    rows: list[tuple] = field(default_factory=list)
    more: bool = False  # rows were left unread (the row cap or the budget)
    by_size: bool = False  # ... because the next row didn't fit the character budget
    cut: bool = False  # values of the one row shown were cut to fit


def read(rows: Iterable[tuple], budget: Budget, columns: list[str]) -> Read:
    """Read rows until the budget is spent; one past it tells whether there are more."""
    out = Read()
    if budget.rows is None and budget.chars is None:
        out.rows = list(rows)
        return out
    size = _Size(columns)
    for row in rows:
        if budget.rows is not None and len(out.rows) >= budget.rows:
            out.more = True
            break
        if budget.chars is not None and not size.fits(row, budget.chars):
            out.more = out.by_size = True
            if not out.rows:  # not even one row fits: its values' beginnings do
                out.rows.append(_cut(row, budget.chars))
                out.cut = True
            break
        size.add(row)
        out.rows.append(row)
    return out


class _Size:
    """The size of a psql-style table (every line padded to the widest value of each column)
    and of the rows as JSON, as rows are added."""

    def __init__(self, columns: list[str]) -> None:
        self.widths = [len(c) for c in columns]
        self.lines = 3  # the header, its rule and the row count
        self.json = sum(len(c) + 3 for c in columns) + 200  # and the reply's other fields

    def fits(self, row: tuple, chars: int) -> bool:
        widths = [max(w, c) for w, c in zip(self._padded(len(row)), map(_width, row))]
        lines = self.lines + max((_lines(v) for v in row), default=1)
        text = lines * (sum(widths) + 3 * len(widths))
        return text <= chars and self.json + sum(map(_json_size, row)) + 2 <= chars

    def add(self, row: tuple) -> None:
        self.widths = [max(w, c) for w, c in zip(self._padded(len(row)), map(_width, row))]
        self.lines += max((_lines(v) for v in row), default=1)
        self.json += sum(map(_json_size, row)) + 2

    def _padded(self, n: int) -> list[int]:
        return self.widths + [0] * (n - len(self.widths))


def _width(value: Any) -> int:
    text = render.cell(value)
    return max(map(len, text.split("\n"))) if "\n" in text else len(text)


def _lines(value: Any) -> int:
    return value.count("\n") + 1 if isinstance(value, str) else 1


def _json_size(value: Any) -> int:
    if isinstance(value, str):
        if value.isprintable():
            return len(value) + 2 + value.count('"') + value.count("\\") + 1
        return len(json.dumps(value, ensure_ascii=False)) + 1
    if isinstance(value, bytes):
        return 2 * len(value) + 6
    return len(repr(value)) + 1


def _cut(row: tuple, chars: int) -> tuple:
    """The row with each long value cut to its share of the budget (marked with …)."""
    share = max(16, chars // (4 * max(1, len(row))))
    out: list[Any] = []
    for value in row:
        if isinstance(value, str) and len(value) > share:
            value = value[:share] + CUT_MARK
        elif isinstance(value, bytes) and len(value) > share // 2:
            value = value[: share // 2]
        out.append(value)
    return tuple(out)


def note(read: Read, budget: Budget, columns: list[str]) -> str:
    """What the reply says of a result it cut, and how to read the rest."""
    shown = len(read.rows)
    if read.cut:
        return (
            f"(this row alone is larger than a reply holds ({budget.chars:,} characters): its "
            f"long values are cut (…); read them in parts, e.g. select substr({columns[0]}, 1, "
            f"5000), or fewer columns)"
        )
    if read.by_size:
        return (
            f"(showing the first {shown} rows, as many as fit in a reply of {budget.chars:,} "
            f"characters; there are more: page with LIMIT {shown} OFFSET {shown}, or select "
            f"fewer or shorter columns)"
        )
    return (
        f"(showing the first {shown} rows; there are more: page with LIMIT {shown} OFFSET "
        f"{shown}, or select only the rows you need)"
    )
