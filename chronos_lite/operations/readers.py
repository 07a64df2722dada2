"""Declared readers: the programs, reports and people outside the database that read main's
columns (``storage.governance.readers``), which ``diff`` with readers names and a merge policy's
``critical`` rule guards.

Anyone who reads may list them (SHOW READERS); marking or dropping one changes what holds a
merge, so it needs the database's own user or an admin agent; in safe mode nothing changes, and
the reply (an error) is the SQL for a person to run. They are the CLI's and SQL's (MARK READER,
SHOW READERS, DROP READER through the sql tool), not MCP tools of their own.
"""

from __future__ import annotations

from .. import render
from ..errors import BAD_ARGUMENT, ChronosError
from ..storage import moments
from ..storage.db import Database
from ..storage.governance import readers
from .checks import draft
from .registry import Args, Caller, Reply, operation

COLUMNS = ["name", "reads", "critical", "created"]
WHAT = "declared readers"


@operation(
    "readers",
    "List the declared readers",
    "The readers people declared: who outside the database reads which of main's columns, "
    "and whether it is critical (a merge policy's critical rule holds a merge that changes a "
    "column a critical reader reads). A psql-style table (name, reads, critical, created). No "
    "parameters. Runs SHOW READERS.",
    read_only=True,
    idempotent=True,
    mcp=False,
)
def readers_op(db: Database, args: Args, caller: Caller) -> Reply:
    found = readers.listing(db.main.conn)
    have = {f"{name}.{c}".lower() for name, (_n, t) in db.tables().items() for c in t.column_names}
    gone = [[c for c in r.columns if c.lower() not in have] for r in found]
    rows = [
        [
            r.name,
            ", ".join(f"{c} (gone)" if c in missing else c for c in r.columns),
            "yes" if r.critical else "no",
            moments.show_moment(r.created),
        ]
        for r, missing in zip(found, gone, strict=True)
    ]
    text = render.table(COLUMNS, rows)
    if not found:
        text += "\n(no readers: MARK READER <name> READS (table.column, ...) declares one)"
    if any(gone):
        text += (
            "\n(gone: main has no such column now, renamed or dropped since the reader was "
            "marked; DROP READER and MARK READER it again with the columns it reads now)"
        )
    data = {
        "readers": [
            {
                "name": r.name,
                "reads": list(r.columns),
                "critical": r.critical,
                "created": row[3],
                "gone": missing,
            }
            for r, row, missing in zip(found, rows, gone, strict=True)
        ]
    }
    return Reply(text, data, (COLUMNS, rows))


@operation(
    "mark_reader",
    "Declare a reader",
    "Declares a reader: a program, report or team outside the database that reads these of "
    "main's columns (table.column). critical: a merge policy's critical rule holds a merge "
    "that changes one of them for a person. Needs admin; in safe mode nothing changes and the "
    "reply is the SQL for a person to run. Runs MARK READER name READS (table.column, ...) "
    "[CRITICAL].",
    destructive=True,
    mcp=False,
)
def mark_reader_op(db: Database, args: Args, caller: Caller) -> Reply:
    name, critical = args["name"], bool(args.get("critical"))
    conn = db.main.conn
    columns = _main_columns(db, args["reads"])
    if caller.mode == "safe":
        raise draft(db, mark_sql(name, columns, critical), WHAT)
    with db.write(conn):
        reader = readers.mark(conn, name, columns, critical)
    kind = "critical reader" if critical else "reader"
    return Reply(
        f"marked {kind} {reader.name}: reads {', '.join(reader.columns)}",
        {"name": reader.name, "reads": list(reader.columns), "critical": reader.critical},
    )


@operation(
    "drop_reader",
    "Remove a declared reader",
    "Removes a declared reader (DROP READER name). Needs admin; in safe mode nothing changes "
    "and the reply is the SQL for a person to run.",
    destructive=True,
    mcp=False,
)
def drop_reader_op(db: Database, args: Args, caller: Caller) -> Reply:
    if caller.mode == "safe":
        raise draft(db, f"DROP READER {args['name']};", WHAT)
    with db.write(db.main.conn):
        reader = readers.drop(db.main.conn, args["name"])
    return Reply(f"dropped reader {reader.name}", {"name": reader.name, "dropped": True})


def _main_columns(db: Database, given: list[str]) -> list[str]:
    """Each ``table.column`` as main's schema spells it, in the order given, each once; one
    that isn't main's is refused (a typo would be a reader no diff ever names)."""
    tables = {name.lower(): t for name, (_n, t) in db.tables().items()}
    have = ", ".join(sorted(t.name for t in tables.values())) or "none yet"
    out: list[str] = []
    for item in given:
        table, _, column = item.strip().rpartition(".")
        if not table or not column:
            raise ChronosError(
                f'a reader reads "table.column" names (as users.email), not {item!r}',
                BAD_ARGUMENT,
            )
        t = tables.get(table.lower())
        if t is None:
            raise ChronosError(f"no table {table!r} on main (its tables: {have})", BAD_ARGUMENT)
        spelled = {c.lower(): c for c in t.column_names}
        if column.lower() not in spelled:
            raise ChronosError(
                f"{t.name} has no column {column!r} (its columns: {', '.join(t.column_names)})",
                BAD_ARGUMENT,
            )
        full = f"{t.name}.{spelled[column.lower()]}"
        if full not in out:
            out.append(full)
    return out


def mark_sql(name: str, columns: list[str], critical: bool) -> str:
    """The statement a person runs for mark_reader's call."""
    return f"MARK READER {name} READS ({', '.join(columns)}){' CRITICAL' if critical else ''};"
