"""Text renderings shared by every front end: psql-style tables and JSON-ish values."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any


def cell(value: Any) -> str:
    """A value as psql shows it: NULL empty, blobs as \\x hex."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
    return str(value)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A psql-style aligned table ending in ``(n rows)``. Numbers right-aligned."""
    texts = [[cell(v) for v in row] for row in rows]
    numeric = [
        all(
            isinstance(row[i], int | float) and not isinstance(row[i], bool)
            for row in rows
            if row[i] is not None
        )
        and any(row[i] is not None for row in rows)
        for i in range(len(columns))
    ]
    widths = [
        max([len(c), *(max(len(line) for line in t[i].split("\n")) for t in texts)])
        for i, c in enumerate(columns)
    ]
    lines = [_join([c.ljust(w) for c, w in zip(columns, widths)])]
    lines.append("-+-".join("-" * w for w in widths).join(["-", "-"]))
    for t in texts:
        cells = [v.split("\n") for v in t]
        for k in range(max((len(c) for c in cells), default=1)):
            parts = [
                (c[k] if k < len(c) else "").rjust(w)
                if numeric[i]
                else (c[k] if k < len(c) else "").ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths))
            ]
            # psql's mark for a value that goes on on the next line: + after it
            lines.append(_join(parts, [k < len(c) - 1 for c in cells]))
    n = len(rows)
    lines.append(f"({n} row{'s' if n != 1 else ''})")
    return "\n".join(lines)


def _join(parts: list[str], more: list[bool] | None = None) -> str:
    if not more or not any(more):
        return (" " + " | ".join(parts)).rstrip()
    return "|".join(f" {p}{'+' if m else ' '}" for p, m in zip(parts, more)).rstrip()


def json_value(value: Any) -> Any:
    """A database value as JSON: blobs become hex strings ("\\x..."), the infinities the
    strings "Infinity" and "-Infinity" (JSON has no such numbers: one spelling, as MCP sends
    them, that a strict parser reads), everything else as is."""
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return value


def finite(value: Any) -> Any:
    """Data as strict JSON can hold it: the infinities (and NaN) in any reply, however deep,
    spelled as ``json_value`` spells them."""
    if isinstance(value, float):
        return json_value(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row as JSON data (blobs as hex strings); None stays None (no row)."""
    return None if row is None else {k: json_value(v) for k, v in row.items()}


def row_json(row: dict[str, Any]) -> str:
    """A row as one line of JSON text."""
    return json.dumps(json_row(row), ensure_ascii=False)
