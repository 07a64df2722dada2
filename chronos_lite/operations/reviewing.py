"""Reviews: the merges a merge policy (or production mode) held for a person, and how a merge
is gated by them.

An agent's merge under a policy is judged inside the merge (``merge.gate``); held, nothing of
it stays, and its world is queued here with the reasons. A person approves by merging it at
the version they read (``merge --version``), or rejects it by discarding it; a policy's
reviewer may decide first (``review``). An agent can't merge or discard its queued world.
"""

from __future__ import annotations

from dataclasses import replace

from .. import render
from ..errors import NOT_FOUND, REFUSED, ChronosError
from ..merge import apply as merge_apply
from ..merge import diff as merge_diff
from ..merge import scope
from ..merge.gate import Gate
from ..merge.policy import PRODUCTION, Held, Hold, because
from ..merge.request import Options
from ..storage import lifecycle, moments
from ..storage.db import Database
from ..storage.governance import holds as worldholds
from ..storage.governance import mode as db_mode
from ..storage.governance import policies as mergepolicies
from ..storage.governance import reviews
from ..storage.governance.reviews import Review
from ..storage.worlds import World
from .registry import Args, Caller, Reply, operation

COLUMNS = [
    "world",
    "owner",
    "policy",
    "reasons",
    "asked",
    "version",
    "changed_since",
    "scope",
    "changes",
    "verdict",
]


def gate_for(db: Database, world: World, caller: Caller) -> Gate:
    """What holds this caller's merge of ``world``: for an agent under a merge policy (or in
    production), the policy; for anyone else, the confirm_deletes_over of the world's
    owner's policy. An agent's merge of a world waiting in reviews is refused."""
    conn = db.main.conn
    if caller.mode == "agent":
        waiting = reviews.find(conn, world.id)
        if waiting is not None:
            raise _waits(db, world.name, waiting)
        policy = mergepolicies.policy_of(conn, caller.name)
        if policy is not None or caller.production:
            return Gate(hold=Hold(caller.name, policy, caller.production))
    return Gate(confirm_over=_confirm_over(db, world.owner))


def _confirm_over(db: Database, owner: str) -> int | None:
    """The confirm_deletes_over of the policy a world's owner keeps to (a person's merge of
    more deletes names their count)."""
    policy = mergepolicies.policy_of(db.main.conn, owner)
    return policy.rules["confirm_deletes_over"] if policy else None


def blocked(db: Database, world: World, opts: Options, caller: Caller) -> str | None:
    """Why this caller's merge of ``world`` would wait for a person, if it would
    (merge_preview shows it first): tried as the merge would run, and rolled back."""
    try:
        gate = gate_for(db, world, caller)
    except Waiting as waiting:  # (it waits in reviews already)
        return waiting.message
    if gate.hold is None:
        return None
    try:
        merge_apply.merge(db, world, replace(opts, gate=Gate(hold=gate.hold, dry=True)))
    except Held as held:
        if held.reasons:
            policy = held.hold.policy_name if held.hold else None
            return f"merging {world.name} would wait for a person ({because(policy, held.reasons)})"
    except ChronosError:
        return None  # (the preview's rows show why it would be refused)
    return None


def check_scope(db: Database, meta: dict, caller: Caller, world: World | None = None) -> None:
    """A declared scope in a fork's (or set_meta's, of ``world``) meta must be one the merge
    can hold to. An agent whose merge policy has require_scope keeps one: its fork declares
    may_change or a tenant that doesn't select every row, and set_meta can't take it out (its
    fork's scope is held at its merge whatever meta says later)."""
    scope.check_meta(meta)
    if caller.mode != "agent" or caller.policy is None:
        return
    policy = mergepolicies.find(db.main.conn, caller.policy)
    if policy is None or not policy.rules["require_scope"]:
        return
    forking = world is None
    after = meta if world is None else lifecycle.meta_after(world.meta, meta)
    requires = f"agent {caller.name} keeps to merge policy {policy.name}, which has require_scope"
    if after.get("may_change") is None and after.get("tenant") is None:
        if not forking:
            raise ChronosError(
                f"{requires}: a world's declared scope stays (its fork's is held at its merge "
                f"in any case); keep may_change or tenant in its meta",
                REFUSED,
            )
        raise ChronosError(
            f"{requires}: declare what the world may change in its meta, as "
            f'{{"may_change": "leads.status, lists"}} or {{"tenant": "org_id = 42"}} (with '
            f"intent and run if you like)",
            REFUSED,
        )
    if after.get("may_change") is None and ("tenant" in meta or "may_change" in meta):
        every = scope.selects_every_row(db, after["tenant"])
        if every:
            raise ChronosError(
                f"{requires}: its tenant ({after['tenant']}) selects every row of {every}, so "
                f"it isn't a scope; declare one that some rows don't meet, as "
                f'"org_id = 42", or may_change',
                REFUSED,
            )


def queued(db: Database, world: World, held: Held, caller: Caller) -> ChronosError:
    """Queue the held merge of ``world`` for a person (its own short write); the refusal the
    agent gets."""
    policy = held.hold.policy_name if held.hold else None
    with db.write(db.main.conn) as conn:
        reviews.queue(conn, world.id, caller.name, policy, held.reasons, held.version)
    return ChronosError(
        f"{held.message}; it's queued (SHOW REVIEWS)",
        REFUSED,
        {"branch": held.name, "queued": True, "reasons": held.reasons, "version": held.version},
    )


def refuse_discard(db: Database, world: World, caller: Caller) -> None:
    """An agent can't take its world out of the queue by discarding it."""
    if caller.mode != "agent":
        return
    waiting = reviews.find(db.main.conn, world.id)
    if waiting is not None:
        raise _waits(db, world.name, waiting, "discard")


class Waiting(ChronosError):
    """The world waits in reviews: an agent can't merge or discard it."""


def _waits(db: Database, name: str, r: Review, doing: str = "merge") -> Waiting:
    return Waiting(
        f"{name} waits in reviews for a person (asked {moments.show_moment(r.asked)}: "
        f"{because(r.policy, r.reasons)}): an agent can't {doing} it; a person merges it "
        f"(chronos {db.folder} merge {name} --version {r.version}) or discards it",
        REFUSED,
    )


@operation(
    "reviews",
    "Merges waiting for a person",
    "Lists the merges held for a person, oldest first, with why.",
    read_only=True,
    idempotent=True,
)
def reviews_op(db: Database, args: dict, caller: Caller) -> Reply:
    held = reviews.listing(db.main.conn)
    open_worlds = {w.id: w for w in db.worlds()}
    rows, data = [], []
    for r in held:
        world = open_worlds[r.world]
        changes = _changes(merge_diff.diff(db, world))
        declared = scope.declared(world.meta, shown=True)
        fixed = worldholds.fork_scope(db.main.conn, world.id)
        if fixed and fixed != scope.declared(world.meta):  # (its merge holds to both)
            declared["at fork"] = ", ".join(f"{k} {v}" for k, v in fixed.items())
        verdict = f"{r.verdict} by {r.reviewer}: {r.reason}" if r.verdict else ""
        row = [
            world.name,
            world.owner,
            r.policy or "(production mode)",
            because(r.policy, r.reasons),
            moments.show_moment(r.asked),
            r.version,
            "yes" if world.version != r.version else "no",
            ", ".join(f"{k} {v}" for k, v in declared.items()),
            changes,
            verdict,
        ]
        rows.append(row)
        data.append(
            {
                **dict(zip(COLUMNS, row, strict=True)),
                "reasons": r.reasons,
                "changed_since": world.version != r.version,
                "scope": declared,
                "verdict": r.verdict,
                "reviewer": r.reviewer,
                "reason": r.reason,
            }
        )
    text = render.table(COLUMNS, rows)
    if not held:
        text += "\n(no merges wait for a person)"
    else:
        text += "\nA person approves with merge --version <version>, or rejects with discard."
    return Reply(text, {"reviews": data}, (COLUMNS, rows))


def _changes(d: merge_diff.Diff) -> str:
    """Per table, deleted, updated and inserted (tables that delete first)."""
    parts = d.per_table(deletes_first=True)
    if d.schema:
        parts.insert(0, f"schema: {len(d.schema)} change{'s' if len(d.schema) != 1 else ''}")
    return "; ".join(parts) or "none"


@operation(
    "review",
    "Decide a held merge (a policy's reviewer)",
    "For a merge policy's reviewer: approve, reject or pass a held merge.",
    destructive=True,
)
def review_op(db: Database, args: Args, caller: Caller) -> Reply:
    verdict, reason = args["verdict"], args["reason"]
    conn = db.main.conn
    world = args.world_named(db)
    r = reviews.find(conn, world.id)
    if r is None:
        raise ChronosError(
            f"{world.name} isn't waiting in reviews: SHOW REVIEWS lists the held merges",
            NOT_FOUND,
        )
    _need_reviewer(db, r, world, caller, verdict)
    if verdict == "approve":
        over = _confirm_over(db, world.owner)
        gate = Gate(confirm_over=over, reviewer=caller.mode != "owner")
        p = merge_apply.merge(db, world, Options(version=r.version, gate=gate))
        n = len(p.writes) + len(p.schema)
        return Reply(
            f"approved {world.name}: merged {n} change{'s' if n != 1 else ''} into "
            f"{p.parent_name} ({reason})",
            {"branch": world.name, "verdict": verdict, "merged": n, "into": p.parent_name},
        )
    with db.write(conn):
        reviews.decide(conn, world.id, verdict, caller.name, reason)
    said = {"reject": "it won't merge unless a person merges it", "pass": "left to a person"}
    return Reply(
        f"{verdict} {world.name}: {said[verdict]} ({reason})",
        {"branch": world.name, "verdict": verdict, "reason": reason},
    )


def _need_reviewer(db: Database, r: Review, world: World, caller: Caller, verdict: str) -> None:
    """Only the reviewer the holding policy names (or the database's own user, or an admin
    agent) decides; no agent decides its own world, and only a person approves what
    production mode held."""
    if caller.mode == "owner":
        return
    whom = f"agent {caller.name}" if caller.mode == "agent" else "safe mode"
    if world.owner.lower() == caller.name.lower():
        raise ChronosError(
            f"{whom} can't review {world.name}: it is its own world, and no one decides their "
            f"own merge; a person merges or discards it",
            REFUSED,
        )
    if verdict == "approve" and (
        PRODUCTION in r.reasons or db_mode.mode(db.main.conn) == "production"
    ):
        raise ChronosError(
            f"{whom} can't approve {world.name}: {PRODUCTION}, so only a person approves it "
            f"(chronos {db.folder} merge {world.name} --version {r.version}); a reviewer may "
            f"reject or pass",
            REFUSED,
        )
    if caller.mode == "agent" and "admin" in caller.rights:
        return
    policy = mergepolicies.find(db.main.conn, r.policy) if r.policy else None
    reviewer = policy.rules["reviewer"] if policy else None
    if reviewer is None or reviewer.lower() != caller.name.lower():
        who = f"its reviewer, {reviewer}" if reviewer else "a person (its policy names no reviewer)"
        raise ChronosError(
            f"{whom} can't review {world.name}: {who} decides it "
            f"(merge policy {r.policy or '(production mode)'}); a person merges or discards it",
            REFUSED,
        )
