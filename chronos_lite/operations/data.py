"""The row operations: describe the tables, read, write and delete one row.

Each handler takes the database, validated arguments and the caller, and returns a Reply whose
text is what every front end shows (the shell's output for the same command)."""

from __future__ import annotations

from typing import Any

from .. import render
from ..errors import NOT_FOUND, ChronosError
from ..storage import describe, rows
from ..storage.codec import format_id, key_text, parse_id
from ..storage.db import Database
from ..storage.schema.catalog import TableInfo
from .registry import Args, Caller, Reply, branch_of, operation


class NoRow(ChronosError):
    """get's refusal when the table has no such row (the Python API's get returns None)."""


@operation(
    "describe",
    "Describe the tables",
    "Tables, their fields (types, rules, allowed values or an example) and a sample row. Call "
    "this first.",
    read_only=True,
    idempotent=True,
)
def describe_op(db: Database, args: dict, caller: Caller) -> Reply:
    text, data = describe.describe(db, branch_of(args), args.get("table"))
    return Reply(text, data)


@operation(
    "get",
    "Read one row",
    "Reads one row by its id.",
    read_only=True,
    idempotent=True,
)
def get_op(db: Database, args: Args, caller: Caller) -> Reply:
    longest = caller.max_chars // 5 if caller.max_chars else None  # (text and data: twice)
    t, row, cut = rows.get_within(db, args.place(db), args["table"], args["id"], longest)
    if row is None:
        ident = format_id(t, parse_id(t, args["id"]))  # (as diff spells it)
        raise NoRow(f"no row {key_text(t.name, ident)} on {branch_of(args)}", NOT_FOUND)
    return Reply(value=row, render=lambda: _row_reply(args, t, row, cut, longest))


def _row_reply(args: Args, t: TableInfo, row: dict, cut: list[str], longest: int | None) -> Reply:
    ident = format_id(t, parse_id(t, args["id"]))  # (as diff spells it)
    text = f"{key_text(t.name, ident)} {render.row_json(row)}"
    data: dict[str, Any] = {"table": t.name, "id": ident, "row": render.json_row(row)}
    if cut:  # too long for a reply: each long value's beginning, and how to read the rest
        assert longest is not None  # (values are cut only to a longest)
        text += (
            f"\n(the values of {', '.join(cut)} are only their first {longest:,} characters "
            f"(bytes of a blob): read them in parts with the sql tool, e.g. select "
            f"substr({cut[0]}, {longest + 1}, {longest}) ...)"
        )
        data["cut"] = cut
    return Reply(text, data)


@operation(
    "put",
    "Create or replace one row",
    "Creates or replaces one row (the whole row: columns left out get their default).",
    destructive=True,
    idempotent=True,
)
def put_op(db: Database, args: Args, caller: Caller) -> Reply:
    created = rows.put(db, args.place(db), args["table"], args["id"], args["record"])
    verb = "created" if created else "replaced"
    return Reply(value=created, render=lambda: _written(db, args, verb, created=created))


@operation(
    "delete", "Delete one row", "Deletes one row by its id.", destructive=True, idempotent=True
)
def delete_op(db: Database, args: Args, caller: Caller) -> Reply:
    rows.delete(db, args.place(db), args["table"], args["id"])
    return Reply(render=lambda: _written(db, args, "deleted"))


def _written(db: Database, args: Args, verb: str, **data: Any) -> Reply:
    """A row written: its key as diff spells it, on its branch."""
    branch = branch_of(args)
    _, t = db.table(args["table"], args.world(db))
    ident = format_id(t, parse_id(t, args["id"]))
    return Reply(
        f"{verb} {key_text(t.name, ident)} on {branch}",
        {"table": t.name, "id": ident, **data, "branch": branch},
    )
