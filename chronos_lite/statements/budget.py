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

from .. import render

CUT_MARK = "…"
# The widest a value is in a table's text: its first SHOWN_CHARS and "… (1,234,567 characters)"
SHOWN_WIDTH = render.SHOWN_CHARS + len("… (1,234,567,890 characters)")


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
    cut: list[int] = field(default_factory=list)  # columns whose values were cut to fit


def read(rows: Iterable[tuple], budget: Budget, columns: list[str]) -> Read:
    """Read rows until the budget is spent; one past it tells whether there are more."""
    out = Read()
    if budget.rows is None and budget.chars is None:
        out.rows = list(rows)
        return out
    most_rows = budget.rows if budget.rows is not None else -1
    chars = budget.chars if budget.chars is not None else -1
    # the table's text: every line padded to each column's widest value; and the rows as JSON
    widths = [len(c) for c in columns]
    lines = 3  # the header, its rule and the row count
    as_json = sum(len(c) + 3 for c in columns) + 200  # and the reply's other fields
    for row in rows:
        if len(out.rows) == most_rows:
            out.more = True
            break
        if chars >= 0:
            grown, tall, size = _measure(row, widths)
            if (lines + tall) * (sum(grown) + 3 * len(grown)) > chars or as_json + size > chars:
                out.more = out.by_size = True
                if not out.rows:  # not even one row fits: its values' beginnings do
                    shortened, out.cut = _cut(row, chars)
                    out.rows.append(shortened)
                break
            widths, lines, as_json = grown, lines + tall, as_json + size
        out.rows.append(row)
    return out


def _measure(row: tuple, widths: list[int]) -> tuple[list[int], int, int]:
    """The column widths with ``row`` in the table, its height in lines, its size in JSON."""
    grown = list(widths) + [0] * (len(row) - len(widths))
    tall, size = 1, 2
    for i, value in enumerate(row):
        kind = type(value)
        if kind is str:
            if "\n" in value:
                width = max(map(len, value.split("\n")))
                tall = max(tall, value.count("\n") + 1)
            else:
                width = len(value)
            if value.isprintable() and '"' not in value and "\\" not in value:
                size += len(value) + 3
            else:
                size += len(json.dumps(value, ensure_ascii=False)) + 1
        elif kind is bytes:
            width = 2 * len(value) + 2
            size += width + 4
        elif value is None:
            width, size = 0, size + 5
        else:
            width = len(render.cell(value))
            size += width + 1
        width = min(width, SHOWN_WIDTH)  # (the table shows a long value's beginning)
        if width > grown[i]:
            grown[i] = width
    return grown, tall, size


def _cut(row: tuple, chars: int) -> tuple[tuple, list[int]]:
    """The row with each long value cut to its share of the budget (text marked with …), and
    which columns were cut."""
    share = max(16, chars // (4 * max(1, len(row))))
    out: list[Any] = []
    cut: list[int] = []
    for i, value in enumerate(row):
        if isinstance(value, str) and len(value) > share:
            value = value[:share] + CUT_MARK
            cut.append(i)
        elif isinstance(value, bytes) and len(value) > share // 2:
            value = value[: share // 2]
            cut.append(i)
        out.append(value)
    return tuple(out), cut


def note(read: Read, budget: Budget, columns: list[str]) -> str:
    """What the reply says of a result it cut, and how to read the rest."""
    shown = len(read.rows)
    if read.cut:
        names = [columns[i] for i in read.cut if i < len(columns)]
        first = names[0] if names else "column"
        return (
            f"(this row alone is larger than a reply holds ({budget.chars:,} characters): the "
            f"values of {', '.join(names)} are only their beginnings; read them in parts, e.g. "
            f"substr({first}, 1, 5000) and length({first}), or select fewer columns)"
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
