"""The audit trail: every call of an agent that changed something, and every refusal.

Kept in the file (``_chronos_audit``) for the retention window, like history: the time, the
agent, the tool (or the statement, for sql), the branch, a short form of the arguments (never a
token: values of parameters that could hold one are left out), the outcome (``ok``,
``refused``, ``stopped`` by a quota, or ``error``, with the SQLSTATE and the message), the rows
changed, and the run fields the branch's meta names (``run_id``, ``prompt_version``, ``model``,
``tool_schema``).

An entry is written in its own short transaction once the call has ended, so a refused or
failed call is kept too; the change itself is in history (``_chronos_events``, same
transaction as the change) under the agent's name and run whatever happens to the entry.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import apsw

from ..fetch import all_rows

DDL = """
CREATE TABLE IF NOT EXISTS _chronos_audit(
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    branch TEXT,
    args TEXT NOT NULL,                -- a short form (JSON), at most ARGS_CHARS
    outcome TEXT NOT NULL,             -- ok | refused | stopped | error
    code TEXT,                         -- the SQLSTATE of a refusal or error
    message TEXT,
    rows INTEGER NOT NULL DEFAULT 0,   -- rows changed
    run_id TEXT,
    prompt_version TEXT,
    model TEXT,
    tool_schema TEXT
);
CREATE INDEX IF NOT EXISTS _chronos_audit_agent ON _chronos_audit(agent, time);
"""

RUN_FIELDS = ("run_id", "prompt_version", "model", "tool_schema")
ARGS_CHARS = 600  # an entry's arguments, cut to this
VALUE_CHARS = 120  # one value, cut to this
SQL_CHARS = 300  # ... a sql call's statements
# Parameters whose values are never kept (a token could be in them).
WITHHELD = {"token", "password", "secret"}
COLUMNS = (
    "time",
    "agent",
    "tool",
    "branch",
    "args",
    "outcome",
    "code",
    "message",
    "rows",
    *RUN_FIELDS,
)


@dataclass
class Entry:
    agent: str
    tool: str
    branch: str | None
    args: dict[str, Any]
    outcome: str
    code: str | None = None
    message: str | None = None
    rows: int = 0
    run: dict[str, str] | None = None


def short(args: dict[str, Any]) -> str:
    """The arguments in a short form: long values cut, withheld ones left out."""
    kept = {
        k: _cut(v, SQL_CHARS if k == "sql" else VALUE_CHARS)
        for k, v in args.items()
        if k.lower() not in WITHHELD
    }
    text = json.dumps(kept, ensure_ascii=False, default=str)
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 3] + "..."


def _cut(value: Any, most: int) -> Any:
    if isinstance(value, str) and len(value) > most:
        return value[: most - 3] + "..."
    if isinstance(value, dict | list):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return value if len(text) <= most else text[: most - 3] + "..."
    return value


def run_fields(meta: dict[str, Any] | None) -> dict[str, str]:
    """The run fields a world's meta names (each as text)."""
    meta = meta or {}
    return {k: str(meta[k]) for k in RUN_FIELDS if meta.get(k) is not None}


def record(conn: apsw.Connection, entry: Entry) -> None:
    run = entry.run or {}
    message = entry.message if entry.message is None else entry.message[:1000]
    conn.execute(
        "insert into main._chronos_audit(time, agent, tool, branch, args, outcome, code, "
        "message, rows, run_id, prompt_version, model, tool_schema) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            time.time(),
            entry.agent,
            entry.tool,
            entry.branch,
            short(entry.args),
            entry.outcome,
            entry.code,
            message,
            entry.rows,
            *(run.get(k) for k in RUN_FIELDS),
        ),
    )


def listing(
    conn: apsw.Connection, agent: str | None, since: float | None, limit: int
) -> list[tuple]:
    """The newest entries first (of one agent, since a moment), ``COLUMNS`` each."""
    where: list[str] = []
    args: list[Any] = []
    if agent is not None:
        where.append("agent = ? collate nocase")
        args.append(agent)
    if since is not None:
        where.append("time >= ?")
        args.append(since)
    clause = f"where {' and '.join(where)} " if where else ""
    return all_rows(
        conn.execute(
            f"select {', '.join(COLUMNS)} from main._chronos_audit {clause}"
            f"order by id desc limit ?",
            (*args, limit),
        )
    )
