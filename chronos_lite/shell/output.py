"""How the shell shows results: psql's aligned tables, expanded records (\\x), JSON, and the
command line's row formats (CSV, TSV, Markdown, NDJSON); a pager for what doesn't fit the
terminal."""

from __future__ import annotations

import json
import os
import shlex
import signal
from collections.abc import Sequence
from typing import Any, TextIO

from .. import render, rowformats

FORMATS = ("aligned", "csv", "tsv", "markdown", "ndjson", "json")
ROWS_ONLY = rowformats.TABULAR  # formats whose output is the rows alone (tags go to stderr)
EXPANDED = ("off", "on", "auto")
DEFAULT_PAGER = "less -SRFX"


def expanded(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """psql's \\x: a record per row, a line per column."""
    if not rows:
        return "(0 rows)"
    columns = [render.terminal(c) for c in columns]
    width = max(render.width(c) for c in columns) if columns else 0
    values, note = render.shown_cells(rows)
    longest = max((render.width(v) for row in values for v in row), default=0)
    lines = []
    for n, row in enumerate(values, start=1):
        title = f"-[ RECORD {n} ]".ljust(width + 1, "-")
        lines.append(f"{title}+{'-' * (longest + 1)}")
        for column, value in zip(columns, row):
            first, *more = value.split("\n") or [""]
            lines.append(f"{render.pad(column, width)} | {first}".rstrip())
            lines.extend(f"{' ' * width} | {line}".rstrip() for line in more)
    if note:
        lines.append(note)
    return "\n".join(lines)


def rows_text(fmt: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The rows in ``fmt`` (CSV, TSV, Markdown, NDJSON), as the command line's --format
    writes them."""
    return rowformats.rows_text(fmt, columns, rows).rstrip("\n")


def json_text(data: Any) -> str:
    """Data as one line of strict JSON (values JSON can't hold as ``render`` spells them; what
    a terminal would obey as JSON's escapes)."""
    text = json.dumps(render.finite(data), ensure_ascii=False, default=render.json_default)
    return render.json_text(text)


def json_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A result as one line of JSON: an array of row objects."""
    data = [dict(zip(columns, (render.json_value(v) for v in row))) for row in rows]
    return render.json_text(json.dumps(data, ensure_ascii=False, default=render.json_default))


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], mode: str, width: int) -> str:
    """An aligned table, or records when \\x is on (or auto and the table is too wide)."""
    if mode == "on":
        return expanded(columns, rows)
    text = render.table(columns, rows)
    if mode == "auto" and rows and max(map(render.width, text.split("\n"))) > width:
        return expanded(columns, rows)
    return text


def terminal_size() -> os.terminal_size:
    return render.terminal_size((100, 40))


def show(text: str, out: TextIO, pager: str | None) -> None:
    """Write ``text``; through the pager when it is given and the text is taller than the
    terminal (a wide one alone would leave the pager waiting at a screen that fits)."""
    if pager and text.count("\n") >= terminal_size().lines - 2:
        # Ctrl-C belongs to the pager while it runs (it reaches the whole process group)
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            import subprocess  # (here: a script never pages, and its start needn't pay for it)

            subprocess.run(shlex.split(pager), input=text + "\n", text=True, check=False)
            return
        except OSError:
            pass  # no such pager: print it as it is
        finally:
            signal.signal(signal.SIGINT, previous)
    out.write(text + "\n")
    out.flush()
