"""The find operation: a table's rows by exact filters, counted, a page of them in key order.
(Text and vector ranking are issue 26's next parts.)"""

from __future__ import annotations

from typing import Any

from .. import render
from ..errors import BAD_ARGUMENT, ChronosError
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
    limit, offset = args.get("limit", 20), args.get("offset", 0)
    _within_caps(args["table"], limit, offset)
    found = finding.find(
        db, args.place(db), args["table"], args.get("where") or {}, (limit, offset), branch_of(args)
    )
    return Reply(value=found, render=lambda: _reply(found))


def _within_caps(table: str, limit: int, offset: int) -> None:
    if limit <= finding.MOST_ROWS and offset <= finding.MOST_OFFSET:
        return
    raise ChronosError(
        f"find gives at most {finding.MOST_ROWS} rows a call and pages to offset "
        f"{finding.MOST_OFFSET:,} (asked: limit {limit}, offset {offset}): read further with "
        f"the sql tool (select * from {table} where ... order by ... limit ... offset ...)",
        BAD_ARGUMENT,
    )


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
