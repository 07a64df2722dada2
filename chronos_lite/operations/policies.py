"""Merge policies: the rules under which an agent's merge lands without a person; trying rules
on a branch's real changes; and the database's mode (development or production).

Setting or dropping a policy needs the database's own user or an admin agent; in safe mode
nothing changes, and the reply (an error) is the SQL for a person to run.
"""

from __future__ import annotations

from typing import Any

from .. import render
from ..merge import apply as merge_apply
from ..merge.gate import Gate
from ..merge.policy import Held, Hold, because
from ..merge.request import Options
from ..storage import moments
from ..storage.db import Database
from ..storage.governance import agents
from ..storage.governance import mode as db_mode
from ..storage.governance import policies as mergepolicies
from ..storage.governance.policies import Policy
from .checks import draft
from .registry import Args, Caller, Reply, operation

COLUMNS = [
    "name",
    "max_rows",
    "max_deletes",
    "tables",
    "review_tables",
    "schema",
    "overwrite",
    "other rules",
    "created",
]
POLICIES = "merge policies"
_SHOWN = {"max_rows", "max_deletes", "tables", "review_tables", "schema", "overwrite"}


@operation(
    "merge_policies",
    "List the merge policies",
    "Lists the merge policies (when an agent's merge needs no person) and who keeps to them.",
    read_only=True,
    idempotent=True,
)
def merge_policies_op(db: Database, args: dict, caller: Caller) -> Reply:
    conn = db.main.conn
    found = mergepolicies.listing(conn)
    rows = [_row(p) for p in found]
    kept = mergepolicies.kept(conn)
    text = render.table(COLUMNS, rows)
    if not found:
        text += "\n(no merge policies: CREATE MERGE POLICY <name> WITH (max_rows = 500) makes one)"
    lines = [f"agent {a} keeps to {p}" for a, p in kept] or ["no agent keeps to a merge policy"]
    data = {
        "policies": [{"name": p.name, "rules": p.rules, "agents": _agents(kept, p)} for p in found],
        "agents": {a: p for a, p in kept},
    }
    return Reply(text + "\n" + "\n".join(lines), data, (COLUMNS, rows))


def _row(p: Policy) -> list[Any]:
    r = p.rules
    other = "; ".join(f"{k} {_value(v)}" for k, v in p.non_default().items() if k not in _SHOWN)
    return [
        p.name,
        r["max_rows"],
        r["max_deletes"],
        ", ".join(r["tables"]) or "(any)",
        ", ".join(r["review_tables"]),
        "yes" if r["schema"] else "no",
        "yes" if r["overwrite"] else "no",
        other,
        moments.show_moment(p.created),
    ]


def _value(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _agents(kept: list[tuple[str, str]], p: Policy) -> list[str]:
    return [a for a, name in kept if name.lower() == p.name.lower()]


@operation(
    "check_merge_policy",
    "Try merge policy rules on a branch",
    "Tries merge policy rules on a branch: would its merge go through alone, and if not why. "
    "Changes nothing.",
    read_only=True,
    idempotent=True,
)
def check_merge_policy_op(db: Database, args: Args, caller: Caller) -> Reply:
    world = args.world_named(db)
    name = world.name
    conn = db.main.conn
    base = mergepolicies.get(conn, args["name"]) if args.get("name") else None
    rules = _checked(db, args.get("rules") or {})
    rules = {**(base.rules if base else mergepolicies.DEFAULTS), **rules}
    hold = Hold(world.owner, Policy(base.name if base else "", rules, 0.0, 0.0))
    reasons: list[str] = []
    try:
        merge_apply.merge(db, world, Options(gate=Gate(hold=hold, dry=True)))
    except Held as held:
        reasons = held.reasons
    under = f"merge policy {base.name}" if base else "those rules"
    text = (
        f"{name}'s merge would wait for a person under {because(None, reasons, under)}"
        if reasons
        else f"{name}'s merge would go through on its own under {under}"
    )
    return Reply(text, {"branch": name, "held": bool(reasons), "reasons": reasons})


def _checked(db: Database, rules: dict) -> dict:
    conn = db.main.conn
    tables = {name.lower(): list(t.column_names) for name, (_n, t) in db.tables().items()}
    return mergepolicies.checked_rules(rules, lambda a: agents.find(conn, a) is not None, tables)


@operation(
    "set_merge_policy",
    "Create or change a merge policy",
    "Creates or changes a merge policy and has agents keep to it. Needs admin; in safe mode it "
    "drafts the SQL.",
    destructive=True,
    idempotent=True,
)
def set_merge_policy_op(db: Database, args: dict, caller: Caller) -> Reply:
    name, given, keeping = args["name"], args.get("rules") or {}, args.get("agents") or []
    conn = db.main.conn
    if caller.mode == "safe":
        exists = mergepolicies.find(conn, name) is not None
        raise draft(db, policy_sql(name, _checked(db, given), exists, keeping), POLICIES)
    with db.write(conn):
        rules = _checked(db, given)
        for agent in keeping:
            agents.get(conn, agent)  # (a clear error for no such agent)
        policy, made = mergepolicies.put(conn, name, rules)
        for agent in keeping:
            mergepolicies.assign(conn, agents.get(conn, agent).name, policy.name)
    kept = mergepolicies.agents_of(conn, policy.name)
    text = f"{'created' if made else 'changed'} merge policy {policy.name}\n"
    text += render.table(COLUMNS, [_row(policy)])
    if kept:
        text += f"\nagents keeping to it: {', '.join(kept)}"
    return Reply(
        text,
        {"name": policy.name, "created": made, "rules": policy.rules, "agents": kept},
        (COLUMNS, [_row(policy)]),
    )


@operation(
    "drop_merge_policy",
    "Remove a merge policy",
    "Removes a merge policy. Needs admin; in safe mode it drafts the SQL.",
    destructive=True,
)
def drop_merge_policy_op(db: Database, args: dict, caller: Caller) -> Reply:
    name, release = args["name"], bool(args.get("release_agents"))
    if caller.mode == "safe":
        raise draft(db, f"DROP MERGE POLICY {name}{' CASCADE' if release else ''};", POLICIES)
    with db.write(db.main.conn):
        policy, released = mergepolicies.drop(db.main.conn, name, release)
    text = f"dropped merge policy {policy.name}"
    if released:
        text += f"; {', '.join(released)} keep{'s' if len(released) == 1 else ''} to none now"
    return Reply(text, {"name": policy.name, "dropped": True, "released": released})


def policy_sql(name: str, rules: dict, exists: bool, keeping: list[str]) -> str:
    """The statements a person runs for set_merge_policy's call."""
    listed = ", ".join(f"{k} = {_sql_value(v)}" for k, v in rules.items())
    if exists:
        sql = f"ALTER MERGE POLICY {name} SET ({listed});" if rules else ""
    else:
        sql = f"CREATE MERGE POLICY {name}" + (f" WITH ({listed})" if rules else "") + ";"
    sql += "".join(f" ALTER AGENT {a} SET (policy = {name});" for a in keeping)
    return sql.strip() or f"ALTER MERGE POLICY {name} SET ();"


def _sql_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    text = ", ".join(v) if isinstance(v, list) else str(v)
    return "'" + text.replace("'", "''") + "'"


@operation(
    "mode",
    "Show or set development or production mode",
    "Shows the database's mode, or sets it: development (agents with write_main and "
    "merge_own reach main, under their merge policy if they have one) or production (their "
    "write_main and merge_own don't apply: every agent's world with changes waits for a "
    "person). In SQL: SET MODE production, SHOW MODE.",
    mcp=False,
)
def mode_op(db: Database, args: dict, caller: Caller) -> Reply:
    conn = db.main.conn
    if args.get("mode"):
        with db.write(conn):
            db_mode.set_mode(conn, args["mode"])
    now = db_mode.mode(conn)
    said = {
        "development": "agents with write_main and merge_own reach main, under their merge "
        "policy if they have one",
        "production": "agents' write_main and merge_own don't apply: every agent's world with "
        "changes waits for a person",
    }[now]
    return Reply(f"mode: {now} ({said})", {"mode": now})
