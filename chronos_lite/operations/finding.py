"""The find operation: a table's rows by exact filters, ranked by words (BM25) and vectors (dot
product), counted, a page of them best first (or in key order)."""

from __future__ import annotations

from typing import Any

from .. import hints, render
from ..search import find as finding
from ..search import text as textmod
from ..storage.db import Database
from .registry import Args, Caller, Reply, branch_of, operation


@operation(
    "find",
    "Find rows",
    "Finds rows by exact filters, text search and/or vector similarity, best first. Ask for "
    "small pages.",
    read_only=True,
    idempotent=True,
)
def find_op(db: Database, args: Args, caller: Caller) -> Reply:
    page = (args["limit"], args["offset"])  # (the schema's caps, ef's too: the registry's)
    found = finding.find(
        db,
        args.place(db),
        args["table"],
        args.get("where") or {},
        page,
        branch_of(args),
        args.get("text"),
        (args.get("vector"), args.get("vector_field")),
    )
    return Reply(value=found, render=lambda: _reply(found))


def _reply(found: finding.Found) -> Reply:
    noun = "match" if found.matches == 1 else "matches"
    head = f"{found.matches} {noun}"
    last = found.offset + len(found.rows)
    if not found.rows and found.matches:
        head += f"; none past offset {found.offset}"
    elif found.rows and (found.offset or last < found.matches):
        first = found.offset + 1
        head += f"; row {first} shown" if first == last else f"; rows {first}-{last} shown"
        if last < found.matches:
            head += f" (the next: {hints.arg('offset', last)})"
    shown = [*_SCORED.get(found.ranked_by, ()), *found.columns]
    scores = found.scores or [{} for _row in found.rows]
    cells = [
        [
            *(_score(s.get(k)) for k, _name in _KEYS if _name in shown),
            *(row[c] for c in found.columns),
        ]
        for row, s in zip(found.rows, scores)
    ]
    data: dict[str, Any] = {
        "table": found.table,
        "branch": found.branch,
        "matches": found.matches,
        "offset": found.offset,
        "ranked_by": found.ranked_by,
        "rows": [render.json_row(row) for row in found.rows],
    }
    if found.scores is not None:
        data["scores"] = found.scores
    notes = "".join(f"\nnote: {note}" for note in found.notes or ())
    text = head if not found.rows else f"{head}\n{render.table(shown, cells)}"
    return Reply(text + notes, data, (shown, cells))


_KEYS = (("fused", "score"), ("text", "text score"), ("vector", "vector score"))
_SCORED = {
    "text": ("text score",),
    "vector": ("vector score",),
    "text+vector": ("score", "text score", "vector score"),
}


def _score(value: float | None) -> str:
    """A score as a table shows it (the structured reply has it exactly)."""
    return "" if value is None else f"{value:.6g}"


@operation(
    "index",
    "Make a table's text index",
    "Makes a table's text index now (a find with text makes it when it first needs one), or "
    "brings it up to date with main's rows: FTS5 over the table's string fields (columns "
    "declared TEXT, VARCHAR, CHAR or CLOB), in the file, kept up from main's history (an "
    "app's own writes included) at each find.",
    mcp=False,
    idempotent=True,
)
def index_op(db: Database, args: Args, caller: Caller) -> Reply:
    n, t = db.table(args["table"], None)
    fields = textmod.text_fields(t)
    if not fields:
        raise finding.no_text_fields(t.name)
    notes: list[str] = []
    rows = textmod.index_now(db, t, n, notes)
    noun = "field" if len(fields) == 1 else "fields"
    text = f"text index of {t.name}: {len(fields)} {noun} ({', '.join(fields)})"
    if rows is None:
        text += f"; {t.name}'s key isn't an integer: each connection indexes it at its first find"
    else:
        text += f", {rows} {'row' if rows == 1 else 'rows'}; kept in the file"
    data = {"table": t.name, "fields": fields, "rows": rows, "notes": notes}
    return Reply(text + "".join(f"\nnote: {note}" for note in notes), data)
