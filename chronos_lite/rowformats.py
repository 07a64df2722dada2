"""A reply's rows in the formats people pipe into other tools: CSV, TSV, NDJSON and Markdown
(`--format` on the command line; a table and JSON are the reply's own text and data).

The rows are found in the reply's data, whatever the operation: a query's results (``columns``
and ``rows``), one row (``row``), a list of records (branches, history's events, a diff's
changes), or else the reply itself as one record. A nested value (a diff's row, a branch's
notes) is written as its JSON; NULL as an empty field in CSV and TSV, null in JSON."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

from . import render

FORMATS = ("table", "csv", "tsv", "json", "ndjson", "markdown")
TABULAR = ("csv", "tsv", "ndjson", "markdown")  # (table and json: the reply's own text, data)

Table = tuple[list[str], list[list[Any]]]


def tables_in(data: Any) -> list[Table]:
    """The tables of rows a reply's data holds (a script of several queries: one each)."""
    if not isinstance(data, dict):
        return [(["value"], [[data]])]
    results = data.get("results")
    if isinstance(results, list):
        found = [_query(r) for r in results if isinstance(r, dict) and "columns" in r]
        if found:
            return found
    if "columns" in data and isinstance(data.get("rows"), list):
        return [_query(data)]
    if isinstance(data.get("row"), dict):
        return [_records([data["row"]])]
    for value in data.values():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return [_records(value)]
    return [_records([{k: v for k, v in data.items() if not isinstance(v, list)}])]


def _query(result: dict) -> Table:
    return list(result["columns"]), [list(row) for row in result.get("rows") or []]


def _records(records: list[dict]) -> Table:
    """Records as a table: every key any record has, in the order first seen."""
    columns: dict[str, None] = {}
    for record in records:
        columns.update(dict.fromkeys(record))
    return list(columns), [[record.get(c) for c in columns] for record in records]


def formatted(fmt: str, data: Any) -> str:
    """The rows of ``data`` in ``fmt`` (one of TABULAR); tables one after another."""
    blank = "" if fmt == "ndjson" else "\n"  # (a blank line between two CSV tables)
    return blank.join(rows_text(fmt, columns, rows) for columns, rows in tables_in(data))


def rows_text(fmt: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """One table's rows in ``fmt`` (one of TABULAR)."""
    write = {"csv": csv_text, "tsv": _tsv, "ndjson": _ndjson, "markdown": _markdown}[fmt]
    return write(columns, rows)


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[Any]], delimiter: str = ",") -> str:
    """The rows as CSV (the shell's --csv and .mode csv too), a header line first."""
    import csv  # (only for CSV: a command's start needn't pay for it)

    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([field(v) for v in row] for row in rows)
    return out.getvalue()


def _tsv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return csv_text(columns, rows, "\t")


def field(value: Any) -> Any:
    """A value in CSV: NULL empty, a blob as \\x hex (as psql writes one), a nested value as
    its JSON, else as JSON has it."""
    if value is None or isinstance(value, bytes) or render.blob_hex(value) is not None:
        return render.cell(value)
    if isinstance(value, dict | list):
        return _json(value)
    return render.json_value(value)


def _ndjson(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return "".join(_json(dict(zip(columns, row))) + "\n" for row in rows)


def _markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table: a | in a value escaped, a newline as <br>."""
    lines = [_md_line(columns), "|" + "|".join(" --- " for _ in columns) + "|"]
    lines.extend(_md_line(_md_cells(row)) for row in rows)
    return "\n".join(lines) + "\n"


def _md_cells(row: Sequence[Any]) -> Iterator[str]:
    for value in row:
        text = _json(value) if isinstance(value, dict | list) else render.cell(value)
        yield render.shown(text, value)


def _md_line(cells: Iterator[str] | Sequence[str]) -> str:
    escaped = (render.terminal(c).replace("|", "\\|").replace("\n", "<br>") for c in cells)
    return "| " + " | ".join(escaped) + " |"


def _json(value: Any) -> str:
    text = json.dumps(render.finite(value), ensure_ascii=False, default=render.json_default)
    return render.json_text(text)
