"""The simulate and replay operations: many worlds forked at one moment, a script run and scored
in each, the best kept (``statements/simulation.py`` does the work); a kept world made again
from what it recorded, and whether it comes out identical."""

from __future__ import annotations

from typing import Any

from ..errors import BAD_ARGUMENT, ChronosError
from ..statements import simulation
from ..storage.db import Database
from . import reviewing, rights
from .registry import Args, Caller, Reply, operation


@operation(
    "simulate",
    "Fork, run and score many worlds",
    "Forks many worlds, runs a SQL script in each, scores them and keeps the best.",
    destructive=True,
)
def simulate_op(db: Database, args: Args, caller: Caller) -> Reply:
    keep = args["keep"]
    if isinstance(keep, str):  # (the schema: an integer, or "all")
        keep = None
    source = args.get("from") or "main"
    args.world(db, "from")  # (a clear error for no such branch, before anything is made)
    reviewing.check_scope(db, {}, caller)  # (an agent whose policy asks forks to declare one)
    request = simulation.Request(
        args["worlds"],
        args["prefix"],
        args["script"],
        args["score"],
        source,
        keep,
        args["order"],
        args["seed"],
        args["threads"],
    )
    access = rights.sql_access(db, None, caller)
    done = simulation.simulate(db, request, caller.name, access, caller.own_worlds)
    return Reply(value=done, render=lambda: _simulated(done))


def _simulated(done: simulation.Simulation) -> Reply:
    kept = [o.name for o in done.kept]
    n, failed = len(done.outcomes), len(done.failed)
    named = ", ".join(kept[:SHOWN_KEPT]) if kept else "none"
    if len(kept) > SHOWN_KEPT:
        named += f" and {len(kept) - SHOWN_KEPT} more"
    lines = [
        f"{n} world{'s' if n != 1 else ''} from {done.base} in {done.ms} ms, best first; "
        f"{failed} failed; kept: {named}"
    ]
    for o in done.outcomes[: simulation.SHOWN]:
        if o.error is not None:
            lines.append(f"{o.name} (index {o.index}): failed: {o.error}")
        else:
            lines.append(
                f"{o.name} (index {o.index}): score {score_text(o.score)}"
                + (", kept" if o.kept else "")
            )
    if n > simulation.SHOWN:
        lines.append(f"({n - simulation.SHOWN} more)")
    data = {
        "base": done.base,
        "ms": done.ms,
        "threads": done.threads,
        "kept": kept,
        "failed": failed,
        "worlds": [_outcome(o) for o in done.outcomes],
    }
    return Reply("\n".join(lines), data)


SHOWN_KEPT = 20  # kept worlds the first line names


def _outcome(o: simulation.Outcome) -> dict[str, Any]:
    out: dict[str, Any] = {"name": o.name, "index": o.index, "seed": o.seed, "kept": o.kept}
    if o.error is not None:
        out["error"] = o.error
    else:
        out["score"] = o.score
    return out


def score_text(value: float | int | None) -> str:
    """A score as the reply shows it: exactly (a float's shortest form that reads back)."""
    return "none" if value is None else repr(value)


@operation(
    "replay",
    "Re-run a simulated world",
    "Makes a simulated world again and says whether it comes out identical.",
)
def replay_op(db: Database, args: Args, caller: Caller) -> Reply:
    world = db.world(args["world"])  # (main and an unknown name: their own clear errors)
    keep_as = args.get("as")
    if keep_as == world.name:
        raise ChronosError(
            f"'as' names the replay's own world: pick a name other than {world.name}",
            BAD_ARGUMENT,
        )
    access = rights.sql_access(db, None, caller)
    done = simulation.replay(db, world, keep_as, caller.name, access, caller.own_worlds)
    return Reply(value=done, render=lambda: _replayed(done))


def _replayed(done: simulation.Replay) -> Reply:
    rows = f"{done.differ} row{'s differ' if done.differ != 1 else ' differs'}"
    said = "identical" if done.identical else "differs"
    text = (
        f"{done.world}: {said} ({rows}; score {score_text(done.score)} now, "
        f"{score_text(done.recorded)} recorded)"
    )
    if done.error is not None:
        text += f"; failed: {done.error}"
    if done.kept_as is not None:
        text += f"; kept as {done.kept_as}"
    data = {
        "world": done.world,
        "identical": done.identical,
        "rows_differ": done.differ,
        "score": done.score,
        "recorded": done.recorded,
        "error": done.error,
        "kept_as": done.kept_as,
        "differences": done.changes,
    }
    return Reply(text, data)
