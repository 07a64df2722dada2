"""Agents: create, list, alter, give a new token, drop (``storage.agents`` keeps them); and
their audit trail (``storage.audit``).

The database's own user manages them (the CLI, the shell, the Python API, and CREATE / ALTER /
DROP AGENT and SHOW AGENTS in SQL); safe mode can't (it is no MCP tool, and the SQL is refused
there as every statement that changes worlds or settings)."""

from __future__ import annotations

from typing import Any

import apsw

from .. import errors, render
from ..errors import ChronosError
from ..storage import moments
from ..storage.db import Database
from ..storage.governance import agents, audit
from ..storage.governance import policies as mergepolicies
from .registry import Caller, Reply, operation

COLUMNS = ["name", "rights", "enabled", *agents.QUOTAS, "created", "changed"]


@operation(
    "agent",
    "Manage agents",
    "Creates, lists, alters, gives a new token to, or drops an agent: who acts on the database "
    "with only the rights it was given (read, fork, write_own, write_main, merge_own, merge, "
    "restore, admin) and within its quotas. create prints the agent's token, the only time it "
    "is shown (the file keeps a salted hash); token with rotate makes a new one. In SQL: "
    "CREATE AGENT <name> WITH (rights = '...', max_query_ms = ...), ALTER AGENT <name> SET "
    "(...), DROP AGENT <name>, SHOW AGENTS.",
    destructive=True,
    mcp=False,
)
def agent_op(db: Database, args: dict, caller: Caller) -> Reply:
    action = args["action"]
    conn = db.main.conn
    if action == "list":
        return _listing(agents.listing(conn))
    name = args.get("name")
    if not name:
        raise ChronosError(f"'name' is required to {action} an agent", errors.BAD_ARGUMENT)
    quotas = {q: args[q] for q in agents.QUOTAS if q in args}  # (the schema checked them)
    rights = agents.ordered(args["rights"]) if "rights" in args else None
    with db.write(conn):
        if action == "create":
            agent, token = agents.create(conn, name, rights or (), quotas)
            _keep_to(conn, agent.name, args)
            return Reply(
                f"created agent {agent.name} ({', '.join(agent.rights) or 'no rights'}); its "
                f"token, shown this once:\n{token}",
                {**_data(agent), "token": token},
            )
        if action == "alter":
            if args.get("disable") and args.get("enable"):
                raise ChronosError("give disable or enable, not both", errors.BAD_ARGUMENT)
            enabled = False if args.get("disable") else True if args.get("enable") else None
            if "policy" in args and rights is None and not quotas and enabled is None:
                agent = agents.get(conn, name)  # (only its policy changes)
            else:
                agent = agents.alter(conn, name, rights, quotas, enabled)
            _keep_to(conn, agent.name, args)
            return Reply(f"altered agent {agent.name}: {_summary(agent)}", _data(agent))
        if action == "token":
            if not args.get("rotate"):
                raise ChronosError(
                    f"a token is shown only when it is made: give rotate for a new one "
                    f"(chronos <folder> agent token {name} --rotate); the old one stops working",
                    errors.BAD_ARGUMENT,
                )
            agent, token = agents.rotate(conn, name)
            return Reply(
                f"a new token for agent {agent.name} (the old one no longer works), shown this "
                f"once:\n{token}",
                {**_data(agent), "token": token},
            )
        agent = agents.drop(conn, name)
    return Reply(
        f"dropped agent {agent.name}: it can act no more; its worlds and history keep its name",
        {"name": agent.name, "dropped": True},
    )


def _keep_to(conn: apsw.Connection, agent: str, args: dict) -> None:
    """ALTER AGENT ... SET (policy = name | null): the merge policy it keeps to from now on."""
    if "policy" not in args:
        return
    policy = args["policy"]
    mergepolicies.assign(conn, agent, mergepolicies.get(conn, policy).name if policy else None)


def _summary(a: agents.Agent) -> str:
    quotas = ", ".join(f"{q} {v}" for q, v in a.quotas().items() if v is not None)
    state = "enabled" if a.enabled else "disabled"
    return f"{', '.join(a.rights) or 'no rights'}; {state}" + (f"; {quotas}" if quotas else "")


def _data(a: agents.Agent) -> dict[str, Any]:
    return {
        "name": a.name,
        "rights": list(a.rights),
        "enabled": a.enabled,
        **a.quotas(),
        "created": _when(a.created),
        "changed": _when(a.changed),
    }


def _when(t: float) -> str:
    return moments.show_moment(t)


def _listing(found: list[agents.Agent]) -> Reply:
    rows = [
        [
            a.name,
            ", ".join(a.rights),
            "yes" if a.enabled else "no",
            *a.quotas().values(),
            _when(a.created),
            _when(a.changed),
        ]
        for a in found
    ]
    return Reply(
        render.table(COLUMNS, rows), {"agents": [_data(a) for a in found]}, (COLUMNS, rows)
    )


AUDIT_COLUMNS = list(audit.COLUMNS)


@operation(
    "audit",
    "Show the audit trail",
    "What agents did: every call of an agent that changed something, and every refusal, the "
    "newest first: the time, agent, tool, branch, a short form of the arguments, the outcome "
    "(ok, refused, stopped by a quota, error: with the SQLSTATE and message), the rows "
    "changed, and the run fields of the branch's meta (run_id, prompt_version, model, "
    "tool_schema). Kept for the retention window. In SQL: SHOW AUDIT [agent] "
    "[SINCE '<moment>'] [LIMIT n].",
    read_only=True,
    mcp=False,
)
def audit_op(db: Database, args: dict, caller: Caller) -> Reply:
    since = args.get("since")
    moment = moments.parse_moment(since) if since is not None else None
    rows = audit.listing(db.main.conn, args.get("agent"), moment, args["limit"])
    shown = [[_when(r[0]), *(_short(v) for v in r[1:])] for r in rows]  # (data: in full)
    entries = [dict(zip(AUDIT_COLUMNS, [_when(r[0]), *r[1:]], strict=True)) for r in rows]
    text = render.table(AUDIT_COLUMNS, shown)
    if not rows:
        whose = f"agent {args['agent']}" if args.get("agent") else "any agent"
        text += f"\n(no calls of {whose}" + (f" since {since}" if since else "") + ")"
    return Reply(text, {"entries": entries}, (AUDIT_COLUMNS, shown))


TEXT_CHARS = 70  # an audit value in the text table (its data holds the whole)


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > TEXT_CHARS:
        return value[: TEXT_CHARS - 1] + "…"
    return value
