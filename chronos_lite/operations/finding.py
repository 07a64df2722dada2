"""The find operation: a table's rows by exact filters, counted, a page of them in key order.
(Text and vector ranking are issue 26's next parts.)"""

from __future__ import annotations

from typing import Any

from .. import render
from ..search import find as finding
from ..storage.db import Database
from .registry import Args, Caller, Reply, branch_of, operation


@operation(
    "find",
    "Find rows",
    'Rows of a table whose fields hold the values given (where: {"field": value, ...}, all '
    "must match), on any branch: the match count (1 match, 3 matches), then up to limit rows "
    "in key order. At most 1000 rows a call and offsets to 100000; past those, read with the "
    "sql tool.",
    read_only=True,
    idempotent=True,
)
def find_op(db: Database, args: Args, caller: Caller) -> Reply:
    page = (args["limit"], args["offset"])  # (the schema's caps: the registry's check)
    found = finding.find(
        db, args.place(db), args["table"], args.get("where") or {}, page, branch_of(args)
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
            head += f" (the next: offset={last})"
    cells = [[row[c] for c in found.columns] for row in found.rows]
    data: dict[str, Any] = {
        "table": found.table,
        "branch": found.branch,
        "matches": found.matches,
        "offset": found.offset,
        "rows": [render.json_row(row) for row in found.rows],
    }
    text = head if not found.rows else f"{head}\n{render.table(found.columns, cells)}"
    return Reply(text, data, (found.columns, cells))
