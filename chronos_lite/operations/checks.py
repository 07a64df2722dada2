"""The rules merges keep to: merge checks (queries every merge's result must find nothing in).

Setting or dropping one needs the database's own user or an admin agent; in safe mode nothing
changes, and the reply (an error) is the SQL for a person to run, so an agent drafts a rule and
a person applies it.
"""

from __future__ import annotations

from .. import render, sqltext
from ..errors import BAD_ARGUMENT, REFUSED, ChronosError
from ..merge import checks
from ..storage import moments
from ..storage.db import Database
from ..storage.governance import checks as mergechecks
from .registry import Caller, Reply, operation

COLUMNS = ["name", "tables", "timeout_ms", "query", "created"]


@operation(
    "merge_checks",
    "List the merge checks",
    "Lists the merge checks: queries every merge's result must find nothing in.",
    read_only=True,
    idempotent=True,
)
def merge_checks_op(db: Database, args: dict, caller: Caller) -> Reply:
    found = mergechecks.listing(db.main.conn)
    rows = [
        [
            c.name,
            ", ".join(c.tables) if c.tables else "(every merge)",
            c.timeout_ms,
            c.query,
            moments.show_moment(c.created),
        ]
        for c in found
    ]
    text = render.table(COLUMNS, rows)
    if not found:
        text += "\n(no merge checks: CREATE MERGE CHECK <name> AS SELECT ... makes one)"
    data = {
        "checks": [
            {**dict(zip(COLUMNS, r, strict=True)), "tables": list(c.tables or [])}
            for r, c in zip(rows, found, strict=True)
        ]
    }
    return Reply(text, data, (COLUMNS, rows))


@operation(
    "set_merge_check",
    "Create or replace a merge check",
    "Creates or replaces a merge check: a query whose rows in a merge's result refuse it. Needs "
    "admin; in safe mode it drafts the SQL.",
    destructive=True,
    idempotent=True,
)
def set_merge_check_op(db: Database, args: dict, caller: Caller) -> Reply:
    name, query = args["name"], args["query"].strip().rstrip(";").strip()
    tables, timeout = args.get("tables") or None, args["timeout_ms"]
    if caller.mode == "safe":
        raise draft(db, _create_sql(name, query, tables, timeout))
    statements = sqltext.split_statements(query)
    if len(statements) != 1:
        raise ChronosError(
            f"a merge check's query is one SELECT, not {len(statements)} statements",
            BAD_ARGUMENT,
        )
    if tables:
        _main_tables(db, tables)
    check = mergechecks.MergeCheck(name, query, tuple(tables) if tables else None, timeout, 0)
    conn = db.main.conn
    with db.write(conn):
        found = checks.run(db, conn, check, "nothing changed")  # (it must run on main now)
        made, replaced = mergechecks.put(conn, name, query, tables, timeout)
    now = f"; on main now it finds {len(found[1])} row{'s' if len(found[1]) != 1 else ''}"
    return Reply(
        f"{'replaced' if replaced else 'created'} merge check {made.name}"
        + (f" (on tables {', '.join(made.tables)})" if made.tables else " (every merge)")
        + now,
        {"name": made.name, "replaced": replaced, "finds_now": len(found[1])},
    )


@operation(
    "drop_merge_check",
    "Remove a merge check",
    "Removes a merge check. Needs admin; in safe mode it drafts the SQL.",
    destructive=True,
)
def drop_merge_check_op(db: Database, args: dict, caller: Caller) -> Reply:
    if caller.mode == "safe":
        raise draft(db, f"DROP MERGE CHECK {args['name']};")
    with db.write(db.main.conn):
        mergechecks.drop(db.main.conn, args["name"])
    return Reply(f"dropped merge check {args['name']}", {"name": args["name"], "dropped": True})


def _main_tables(db: Database, tables: list[str]) -> None:
    """Each of a check's tables is one of main's (a typo would never run the check)."""
    have = {t.lower(): t for t in db.tables()}
    missing = [t for t in tables if t.lower() not in have]
    if missing:
        raise ChronosError(
            f"no table {missing[0]!r} on main: a merge check's tables are main's tables "
            f"({', '.join(sorted(have.values())) or 'none yet'})",
            BAD_ARGUMENT,
        )


def _create_sql(name: str, query: str, tables: list[str] | None, timeout: int) -> str:
    on = f" ON TABLES ({', '.join(_quoted(t) for t in tables)})" if tables else ""
    within = f" WITH (timeout_ms = {timeout})" if timeout != mergechecks.DEFAULT_TIMEOUT_MS else ""
    return f"CREATE OR REPLACE MERGE CHECK {name}{on}{within} AS {query};"


def _quoted(name: str) -> str:
    """A table's name as the drafted SQL writes it: bare if plain lower case, else quoted."""
    plain = name.replace("_", "").isalnum() and name.isascii() and not name[0].isdigit()
    return name if plain and name == name.lower() else sqltext.quote_ident(name)


def draft(db: Database, sql: str, what: str = "merge checks") -> ChronosError:
    """Safe mode's reply to a rule setter: nothing changed, and the SQL for a person."""
    return ChronosError(
        f"safe mode: agents can't change {what}, so nothing changed; a person runs this "
        f"SQL (in `chronos {db.folder}`, the shell, or with its sql): {sql}",
        REFUSED,
    )
