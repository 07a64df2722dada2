"""Text renderings shared by every front end: psql-style tables, and values as JSON.

A value JSON can't hold has one spelling in every JSON chronos writes (MCP, ``--json``, diff,
merge_preview, history, errors' data), which ``put`` and a merge's ``rows`` read back
(``storage/codec.py``): a BLOB is ``{"$blob": "<hex>"}``, the infinities are the strings
``"Infinity"`` and ``"-Infinity"``. Integers are JSON numbers, whatever their size.

What a person reads in a terminal holds no character the terminal would obey or not show
(``terminal``): a control character (ESC, backspace, carriage return, C1), a format character
(zero-width, bidi overrides and isolates) or a line or paragraph separator prints as an escape
(``\\x1b``, ``\\u202e``), whether it is in a value, a name an old version let in, or a message;
newlines and tabs stay. Data (JSON) keeps every character: ``json_text`` writes those as JSON's
own escapes, the same string for a program."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

BLOB = "$blob"  # the key of a BLOB's JSON spelling: {"$blob": "<hex>"}

# Unicode's control (Cc), format (Cf) and line and paragraph separator (Zl, Zp) characters, as
# of Unicode 15 (tests/storage/test_names.py checks them against Python's unicodedata), but
# for C0's: those json.dumps escapes itself, and a terminal's text keeps newline and tab.
_UNSEEN = (
    "\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
)
_TERMINAL = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSEEN}]")
_JSON_UNSEEN = re.compile(f"[{_UNSEEN}]")


def terminal(text: str) -> str:
    """Text as a terminal may show it: what it would obey or not show, escaped (``\\x1b``,
    ``\\u202e``, ``\\U000e0041``); newlines and tabs kept."""
    if text.isprintable():  # (most text: one test in C)
        return text
    return _TERMINAL.sub(_escape, text)


def _escape(found: re.Match) -> str:
    code = ord(found.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def json_text(text: str) -> str:
    """JSON text as a terminal may show it, the same data: the characters ``terminal`` escapes
    as JSON's escapes (json.dumps writes the C0 controls so itself)."""
    return _JSON_UNSEEN.sub(_json_escape, text)


def _json_escape(found: re.Match) -> str:
    data = found.group().encode("utf-16-be")  # (a surrogate pair beyond the BMP)
    return "".join(f"\\u{int.from_bytes(data[i : i + 2]):04x}" for i in range(0, len(data), 2))


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
    return terminal(str(value))


# A value a table (or a diff's line) shows is cut past this many characters, a BLOB's hex too:
# a person can't read a 100 KB cell, and every row of a table is padded to its widest one. The
# data beside the text (--json, MCP's structuredContent) keeps every value whole.
SHOWN_CHARS = 200
CUT_NOTE = (
    "(values over {n} characters are cut here (…); the data beside this text has them whole "
    "(--json, structuredContent), or read one in parts: substr(column, 1, 5000), length(column))"
)


def shown(text: str, value: Any = None) -> str:
    """A value's text (``cell``'s, or its JSON) as a table or a diff's line shows it: cut past
    SHOWN_CHARS, with how long the whole is (``value``: the value, a BLOB's told in bytes)."""
    if len(text) <= SHOWN_CHARS:
        return text
    hexed = value.hex() if isinstance(value, bytes) else blob_hex(value)
    if hexed is not None:
        whole = f"{len(hexed) // 2:,} bytes"
    else:
        whole = f"{len(value) if isinstance(value, str) else len(text):,} characters"
    return f"{text[:SHOWN_CHARS]}… ({whole})"


def shown_cells(rows: Sequence[Sequence[Any]]) -> tuple[list[list[str]], str | None]:
    """Each row's cells as a table (or a record) shows them, and the note to put under them if
    a value was cut (None: none was)."""
    texts, cut = [], False
    for row in rows:
        cells = []
        for value in row:
            whole = cell(value)
            cells.append(shown(whole, value))
            cut = cut or len(whole) > SHOWN_CHARS
        texts.append(cells)
    return texts, CUT_NOTE.format(n=SHOWN_CHARS) if cut else None


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A psql-style aligned table ending in ``(n rows)``. Numbers right-aligned; what a
    terminal would obey or not show, escaped; a value past SHOWN_CHARS cut, and a note says so."""
    columns = [terminal(c) for c in columns]
    texts, note = shown_cells(rows)
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
        max([width(c), *(max(width(line) for line in t[i].split("\n")) for t in texts)])
        for i, c in enumerate(columns)
    ]
    lines = [_join([pad(c, w) for c, w in zip(columns, widths)])]
    lines.append("-+-".join("-" * w for w in widths).join(["-", "-"]))
    for t in texts:
        cells = [v.split("\n") for v in t]
        for k in range(max((len(c) for c in cells), default=1)):
            parts = [
                pad(c[k] if k < len(c) else "", w, numeric[i])
                for i, (c, w) in enumerate(zip(cells, widths))
            ]
            # psql's mark for a value that goes on on the next line: + after it
            lines.append(_join(parts, [k < len(c) - 1 for c in cells]))
    n = len(rows)
    lines.append(f"({n} row{'s' if n != 1 else ''})")
    if note:
        lines.append(note)
    return "\n".join(lines)


def width(text: str) -> int:
    """The columns ``text`` takes on a terminal: two for a wide (CJK) character, none for a
    combining one (wcwidth's tables, as prompt_toolkit's); ASCII at once."""
    if text.isascii():
        return len(text)
    from wcwidth import wcswidth  # (only for text beyond ASCII)

    columns = wcswidth(text)
    return columns if columns >= 0 else len(text)


def pad(text: str, columns: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``columns`` of display width (on the left: ``right``)."""
    fill = " " * (columns - width(text))
    return fill + text if right else text + fill


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


def differing(sides: Sequence[dict[str, Any] | None]) -> list[str]:
    """The fields whose values aren't the same on every side of a change (base, ours,
    theirs): what a preview shows of each. Every field when none differ, or when a side has no
    row (an insert, a delete: the whole row)."""
    names = list(dict.fromkeys(k for side in sides if side for k in side))
    differ = [k for k in names if len({_side_value(s, k) for s in sides}) > 1]
    return differ or names


def _side_value(side: dict[str, Any] | None, field: str) -> str:
    return "(none)" if side is None else repr(side.get(field))  # (repr: 1, 1.0, True apart)


def row_json(row: dict[str, Any]) -> str:
    """A row as one line of JSON text."""
    return json.dumps(json_row(row), ensure_ascii=False)


def terminal_size(fallback: tuple[int, int] = (80, 24)) -> os.terminal_size:
    """The terminal's size as ``shutil.get_terminal_size`` gives it (COLUMNS and LINES first,
    then stdout's terminal, else ``fallback``), without importing shutil: argparse asks it on
    every add_argument, and shutil's imports (zlib, bz2, lzma) cost each start ~2 ms."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size(fallback)
        if columns <= 0:
            columns = size.columns or fallback[0]
        if lines <= 0:
            lines = size.lines or fallback[1]
    return os.terminal_size((columns, lines))
