"""The sql operation: a call's SQL runs on its branch through the executor, under the caller's
rights and result budget; chronos' own statements (FORK WORLD, SHOW HISTORY, ...) run their
registry operation, so they are checked and rendered as the tool of the same name."""

from __future__ import annotations

from .. import render
from ..errors import BAD_ARGUMENT, ChronosError
from ..statements import budget, chronos_sql, sqlrun
from ..storage.db import Database
from . import rights
from .registry import REGISTRY, Args, Caller, Reply, operation


def _chronos_statement(
    db: Database, branch: str | None, statements: list[str], caller: Caller
) -> sqlrun.SqlOutcome:
    """FORK WORLD, SHOW HISTORY, ...: the registry's operation, as a statement's result."""
    if len(statements) > 1:
        first = next(s for s in statements if chronos_sql.is_chronos(s))
        raise ChronosError(
            f"{chronos_sql.lead(first)} runs its own transaction: send it in a call of its own",
            BAD_ARGUMENT,
        )
    stmt = statements[0]
    op, args = chronos_sql.parse(stmt, branch)
    if op == chronos_sql.USE:
        raise ChronosError(
            "USE WORLD switches the shell's branch; elsewhere name the branch with the call "
            f'(branch="{args["branch"]}", or -b {args["branch"]} on the command line)',
            BAD_ARGUMENT,
        )
    reply = REGISTRY.call(db, op, args, caller)  # (its own checks: rights, bounds)
    result = (
        sqlrun.StatementResult(stmt, reply.table[0], [tuple(r) for r in reply.table[1]])
        if reply.table
        else sqlrun.StatementResult(stmt, tag=reply.text)
    )
    result.report = reply.data
    return sqlrun.SqlOutcome(branch or "main", [result])


def _short(sql: str) -> str:
    """A statement as named in data: its start (the caller has the rest)."""
    return sql if len(sql) <= 200 else sql[:197] + "..."


@operation(
    "sql",
    "Run SQL",
    "Runs SQL on a branch as one transaction: SQLite's, and chronos' own (SHOW WORLDS, DIFF, AS "
    "OF ...). Select only the rows and columns you need.",
    destructive=True,
)
def sql_op(db: Database, args: Args, caller: Caller) -> Reply:
    statements = args.statements()  # (split once: the rights read them too)
    if any(chronos_sql.is_chronos(s) for s in statements):  # its operation, through the registry
        outcome = _chronos_statement(db, args.get("branch") or "main", statements, caller)
    else:
        access = rights.sql_access(db, args.given("branch"), caller)  # (none isn't "main")
        where, params = args.place(db), args.get("params")
        outcome = sqlrun.run(db, where, statements, params, caller.budget, access)
    return Reply(value=outcome, render=lambda: _rendered(outcome, caller))


def _rendered(outcome: sqlrun.SqlOutcome, caller: Caller) -> Reply:
    """The results as psql-style tables and tags, and as data."""
    parts, data = [], []
    for result in outcome.results:
        if result.columns is not None:
            text = render.table(result.columns, result.rows)
            if result.more:  # cut for a client with a result size limit
                read = result.read or budget.Read()
                text += "\n" + budget.note(read, caller.budget, result.columns)
            parts.append(text)
            data.append(
                {
                    "statement": _short(result.sql),
                    "columns": result.columns,
                    "rows": [[render.json_value(v) for v in row] for row in result.rows],
                    "more": result.more,
                }
            )
            if result.read is not None and result.read.cut:  # values only begun
                data[-1]["cut"] = [result.columns[i] for i in result.read.cut]
        else:
            parts.append(result.tag)
            data.append({"statement": _short(result.sql), "tag": result.tag})
        if result.report is not None:  # a chronos statement: its operation's data too
            data[-1]["data"] = result.report
    if outcome.rolled_back_open:
        parts.append(
            "ROLLBACK: the call ended with its transaction still open, so it was rolled back; "
            "put COMMIT in the same call"
        )
    return Reply(
        "\n".join(parts),
        {"branch": outcome.branch, "results": data, "rolled_back": outcome.rolled_back_open},
    )
