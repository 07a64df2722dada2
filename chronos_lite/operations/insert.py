"""The insert operation: a file's rows (CSV, TSV, JSON, NDJSON) loaded into a table on a
branch by ``statements.loading``. The CLI's, the shell's and the Python API's; not an MCP tool,
since it reads the local disk."""

from __future__ import annotations

from ..storage.db import Database
from .registry import Caller, Reply, operation


@operation(
    "insert",
    "Load a file into a table",
    "Loads the rows of a CSV, TSV, JSON (an array of objects) or NDJSON file on the local disk "
    "into a table on a branch, all in one transaction (a bad row and nothing is inserted); "
    "creates the table if missing, its column types detected (pk: its primary key). upsert: "
    "insert or update by primary key. Not an MCP tool: it reads the local disk.",
    destructive=True,
    mcp=False,
)
def insert_op(db: Database, args: dict, caller: Caller) -> Reply:
    from ..statements import loading  # (sqlite-utils, ~0.1 s to import: only to load a file)

    done = loading.insert(
        db,
        args.get("branch") or "main",
        args["table"],
        args["file"],
        args.get("pk"),
        bool(args.get("upsert")),
        args.get("format"),
        args.get("encoding"),
    )
    noun = "row" if done.rows == 1 else "rows"
    verb = "upserted" if done.upsert else "inserted"
    text = f"{verb} {done.rows} {noun} into {done.table} on {done.branch}"
    if done.created is not None:
        made = done.created.removeprefix("create table ")
        text = f"created table {made} on {done.branch} and {verb} {done.rows} {noun}"
    if done.upsert:
        text += f" ({done.inserted} inserted, {done.updated} updated)"
    if not done.rows:
        text += f" ({done.file} holds no rows)"
    return Reply(text, done.data(), value=done)
