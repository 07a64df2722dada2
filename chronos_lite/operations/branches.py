"""The branch operations: fork, a branch's notes, the list of branches, discard.

Each handler takes the database, validated arguments and the caller, and returns a Reply whose
text is what every front end shows (the shell's output for the same command)."""

from __future__ import annotations

import json
from typing import Any

from .. import hints, render
from ..merge import diff as merge_diff
from ..storage import lifecycle
from ..storage.db import Database
from ..storage.governance import reads as kept_reads
from ..storage.worlds import World
from . import reviewing
from .registry import REGISTRY, Args, Caller, Reply, operation


@operation(
    "fork",
    "Create a branch",
    "Creates a branch: a private copy to change freely. Fork one per task, then pass "
    'branch="<name>" to other tools.',
)
def fork_op(db: Database, args: dict, caller: Caller) -> Reply:
    source = args.get("from") or "main"
    reviewing.check_scope(db, args.get("meta") or {}, caller)
    meta = kept_reads.fork_meta(db.main.conn, args.get("meta"), caller.policy)
    world = lifecycle.fork(db, args["name"], source, meta, owner=caller.name)
    caller.own_worlds.add(world.wid)
    return Reply(
        f"created branch {world.name} (world id {world.wid}) from {source}; "
        f"{hints.work_on(world.name)} to work on it",
        _world_data(db, world),
        value=world,
    )


@operation(
    "set_meta",
    "Set a branch's notes",
    "Merges keys into a branch's notes (meta).",
    idempotent=True,
)
def set_meta_op(db: Database, args: Args, caller: Caller) -> Reply:
    args.ref().writable()  # (a branch as it was is only read)
    world = args.world(db)
    if world is not None:  # (main has no meta: set_meta refuses it)
        reviewing.check_scope(db, args["meta"], caller, world)
        kept_reads.check_change(world.name, world.meta, args["meta"], caller.mode == "owner")
    # (an agent's set_meta leaves the scope its fork declared standing; a person's replaces it)
    world = lifecycle.set_meta(db, world, args["meta"], rescope=caller.mode != "agent")
    return Reply(
        f"{world.name}: {json.dumps(world.meta, ensure_ascii=False)}",
        {"branch": world.name, "meta": world.meta},
        value=world,
    )


@operation(
    "branches",
    "List branches",
    "Lists the branches with their parent, changes, owner and notes.",
    read_only=True,
    idempotent=True,
)
def branches_op(db: Database, args: dict, caller: Caller) -> Reply:
    worlds = db.worlds()
    return Reply(value=worlds, render=lambda: _branches_table(db, worlds))


def _branches_table(db: Database, worlds: list[World]) -> Reply:
    columns = ["name", "world_id", "parent", "changes", "version", "owner", "meta"]
    table_rows: list[list[Any]] = [["main", None, None, None, None, None, None]]
    data = [{"name": "main"}]
    for w in worlds:
        item = _world_data(db, w)
        data.append(item)
        table_rows.append(
            [
                w.name,
                w.wid,
                w.parent,
                item["changes"],
                w.version,
                w.owner,
                json.dumps(w.meta, ensure_ascii=False) if w.meta else None,
            ]
        )
    return Reply(render.table(columns, table_rows), {"branches": data}, (columns, table_rows))


@operation(
    "discard",
    "Throw a branch away",
    "Throws a branch and its changes away.",
    destructive=True,
)
def discard_op(db: Database, args: Args, caller: Caller) -> Reply:
    world = args.world_named(db)
    reviewing.refuse_discard(db, world, caller)
    gone = lifecycle.discard(db, world, bool(args.get("cascade")))
    names = ", ".join(f"{w.name} (world id {w.wid})" for w in gone)
    noun = "branch" if len(gone) == 1 else "branches"
    return Reply(f"discarded {noun} {names}", {"discarded": [w.name for w in gone]}, value=gone)


def _world_data(db: Database, world: World) -> dict:
    return {
        "name": world.name,
        "world_id": world.wid,
        "parent": world.parent,
        "changes": merge_diff.diff(db, world).count,  # as diff counts them
        "version": world.version,
        "owner": world.owner,
        "meta": world.meta,
    }


__all__ = ["REGISTRY"]


# --- diff and merge (chronos_lite/merge) ------------------------------------------------------
