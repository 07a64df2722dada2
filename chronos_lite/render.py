"""Text renderings shared by every front end: psql-style tables, and values as JSON.

A value JSON can't hold has one spelling in every JSON chronos writes (MCP, ``--json``, diff,
merge_preview, history, errors' data), which ``put`` and a merge's ``rows`` read back
(``storage/spelling.py``): a BLOB is ``{"$blob": "<hex>"}``, the infinities are the strings
``"Infinity"`` and ``"-Infinity"``. Integers are JSON numbers, whatever their size."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

BLOB = "$blob"  # the key of a BLOB's JSON spelling: {"$blob": "<hex>"}


def blob_json(value: bytes) -> dict[str, str]:
    """A BLOB as JSON: ``{"$blob": "<hex digits>"}``."""
    return {BLOB: value.hex()}


def blob_hex(value: Any) -> str | None:
    """The hex digits of a BLOB's JSON spelling (an object of that one key, a string); None
    for any other value."""
    if type(value) is dict and len(value) == 1 and type(value.get(BLOB)) is str:
        return value[BLOB]
    return None


def cell(value: Any) -> str:
    """A value as psql shows it: NULL empty, blobs as \\x hex (also spelled as JSON)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    hexed = blob_hex(value)
    if hexed is not None:
        return "\\x" + hexed
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
    """A database value as JSON: a blob ``{"$blob": "<hex>"}``, the infinities the strings
    "Infinity" and "-Infinity" (JSON has no such numbers: one spelling, as MCP sends them, that
    a strict parser reads), everything else as is."""
    if isinstance(value, bytes):
        return blob_json(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return value


def finite(value: Any) -> Any:
    """Data as strict JSON can hold it: the infinities (and NaN) and blobs in any reply,
    however deep, spelled as ``json_value`` spells them."""
    if isinstance(value, float | bytes):
        return json_value(value)
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_default(value: Any) -> Any:
    """``json.dumps``'s ``default``: a blob in data that wasn't spelled yet, as JSON; anything
    else JSON can't hold, as its text."""
    if isinstance(value, bytes):
        return blob_json(value)
    return str(value)


def json_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row as JSON data (see ``json_value``); None stays None (no row)."""
    return None if row is None else {k: json_value(v) for k, v in row.items()}


def row_json(row: dict[str, Any]) -> str:
    """A row as one line of JSON text."""
    return json.dumps(json_row(row), ensure_ascii=False)
