"""merge_preview: what a merge would do, row by row, without doing it."""

from __future__ import annotations

from collections import Counter

from .. import hints, render
from ..errors import CONFLICT, ChronosError
from ..storage.db import Database
from ..storage.worlds import World
from .apply import position, prepare
from .diff import diff, page_footer, row_text
from .readers import readers
from .request import Options
from .schema import Step
from .tally import tally

COLUMNS = ["table", "id", "outcome", "detail", "base", "ours", "theirs", "result"]


def preview(
    db: Database,
    world: World,
    opts: Options,
    limit: int,
    offset: int,
    blocked: str | None = None,
) -> tuple[str, dict]:
    """What merging ``world`` as ``opts`` asks would do, a page of rows (``opts.version``: the
    version the first page showed). ``blocked``: why the caller's merge would wait for a
    person (its merge policy), shown first."""
    name, version = world.name, opts.version
    if version is not None and version != world.version:
        raise ChronosError(
            f"{name} is at version {world.version}, not {version}: it changed since the first "
            f"page; preview again from offset 0",
            CONFLICT,
        )
    p, reach = prepare(db, world, opts)
    stands = position(db, p.parent)
    counted = tally(db, p, reach, opts, offset, limit)  # (the counts, and this page's rows)
    summary = _summary_rows(counted.per_table)
    page = [_row(o) for o in counted.page]
    schema = [_schema_row(s) for s in p.schema] if offset == 0 else []
    first = [["(merge)", "", "blocked", blocked, None, None, None, None]] if blocked else []
    text = render.table(COLUMNS, first + summary + schema + page)
    footer = page_footer(offset, len(page), counted.total, "rows", "merge_preview")
    read_by, read_data = _readers(db, world, opts) if offset == 0 else ("", None)
    pass_version = hints.arg("version", world.version)
    tail = [
        f"{name} is at version {world.version}; {p.parent_name} stands at {stands}. Merge with "
        f"{pass_version} (MERGE WORLD {name} AT VERSION {world.version}) to merge exactly this"
        + (f" (and {hints.arg('target', stands)} with rows settled)" if _settled(opts) else "")
        + (f"; pass {pass_version} with later pages" if footer else "")
        + "."
    ]
    conflicts = counted.conflicts + sum(bool(s.conflict) for s in p.schema)
    if conflicts:
        tail.insert(
            0,
            f"{conflicts} conflict{'s' if conflicts != 1 else ''}: "
            f"the merge would be refused until they are settled",
        )
    deletes = counted.deletes + sum(s.rows for s in p.schema)
    if deletes:
        tail.append(
            f"It deletes {deletes} row{'s' if deletes != 1 else ''} "
            f"({hints.arg('confirm_deletes', deletes)})."
        )
    data = {
        "branch": name,
        "into": p.parent_name,
        "version": world.version,
        "target": stands,
        "conflicts": conflicts,
        "schema": [
            {"table": s.table, "sql": s.op.sql(s.table), "outcome": s.outcome, "detail": s.conflict}
            for s in p.schema
        ],
        "deletes": deletes,
        "blocked": blocked,
        "total": counted.total,
        "rows": [_row_data(o) for o in counted.page],
    }
    if read_data is not None:
        data["readers"] = read_data
    return "\n".join([text, *([footer] if footer else []), *read_by, *tail]), data


def _readers(db: Database, world: World, opts: Options) -> tuple[list[str], dict]:
    """What reads the columns the merge changes (on the first page): DIFF ... READERS' (what
    no declared reader reads, where the database declares some)."""
    tables = set(opts.only_tables) if opts.only_tables is not None else None
    text, data = readers(db, diff(db, world, tables), uncovered_always=False)
    return [f"What reads the changed columns: {text}"], data


def _settled(opts: Options) -> bool:
    return opts.resolve != "fail" or opts.by_columns or bool(opts.rows)


def _summary_rows(per_table: dict[str, Counter]) -> list[list]:
    return [
        [
            table,
            None,
            "summary",
            f"{k['delete']} deleted, {k['update']} updated, {k['insert']} inserted",
            None,
            None,
            None,
            None,
        ]
        for table, k in sorted(per_table.items())
    ]


def _schema_row(s: Step) -> list:
    detail = f"schema: {s.op.sql(s.table)}" + (f" ({s.conflict})" if s.conflict else "")
    return [s.table, None, s.outcome, detail, None, None, None, None]


def _row_data(o) -> dict:
    c = o.change
    return {
        "table": c.table,
        "id": c.id,
        "key": c.where,
        "outcome": o.outcome,
        "detail": "DELETE: the merge deletes this row" if o.deletes else o.detail,
        "base": render.json_row(c.base),
        "ours": render.json_row(c.ours),
        "theirs": render.json_row(c.theirs),
        "result": None
        if o.outcome == "conflict"
        else render.json_row(o.result if o.write else c.theirs),
    }


def _row(o) -> list:
    """A row of the preview's text: each side shows the fields that differ between the fork
    point, the branch and the parent (as the review page does; the data holds whole rows),
    the parent's "same as base" when it didn't change the row, the result "same as ours"
    when it is the branch's."""
    c = o.change
    detail = "DELETE: the merge deletes this row" if o.deletes else o.detail
    fields = render.differing([c.base, c.ours, c.theirs])
    theirs = _fields_text(c.theirs, fields)
    if c.theirs is not None and c.theirs == c.base:
        theirs = "same as base"
    result = "" if o.outcome == "conflict" else "(unchanged)"
    if o.write and o.outcome != "conflict":
        same = o.result is not None and o.result == c.ours
        result = "same as ours" if same else _fields_text(o.result, fields)
    base, ours = _fields_text(c.base, fields), _fields_text(c.ours, fields)
    return [c.table, c.id, o.outcome, detail, base, ours, theirs, result]


def _fields_text(row: dict | None, fields: list[str]) -> str:
    if row is None:
        return "(none)"
    return row_text({k: row[k] for k in fields if k in row})
