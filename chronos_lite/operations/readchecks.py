"""check_reads: whether anything a branch read changed under it since it forked
(``merge/reads.py`` compares; here the reply)."""

from __future__ import annotations

from .. import render
from ..errors import BAD_ARGUMENT, ChronosError
from ..merge import reads as merge_reads
from ..storage.db import Database
from ..storage.governance import reads as kept_reads
from .registry import Args, Caller, Reply, operation


@operation(
    "check_reads",
    "Whether anything the branch read changed since it forked",
    "Whether what a branch forked with check_reads read has changed since. Call it before each "
    "step of a long task.",
    read_only=True,
)
def check_reads_op(db: Database, args: Args, caller: Caller) -> Reply:
    world = args.world_named(db)
    if not kept_reads.keeps(world.meta):
        raise ChronosError(
            f"{world.name} doesn't keep what it reads: fork it with meta "
            f'{{"check_reads": true}} (FORK WORLD {world.name} WITH (check_reads = true)), '
            "and it keeps every query it runs from then on",
            BAD_ARGUMENT,
        )
    checked = merge_reads.check(db, world)
    data = {
        "branch": world.name,
        "checked_against": checked.against,
        "reads": checked.reads,
        "changed": [
            {"query": c.query, "params": c.params, "then": c.then, "now": c.now, "why": c.why}
            for c in checked.changed
        ],
    }
    if not checked.changed:
        kept = f"{checked.reads} quer{'y' if checked.reads == 1 else 'ies'}"
        return Reply(
            f"Nothing {world.name} read changed since it forked ({kept} checked against "
            f"{checked.against})",
            data,
        )
    columns = ["checked_against", "changed"]
    rows = [(checked.against, c.shown()) for c in checked.changed]
    return Reply(render.table(columns, rows), data, (columns, rows))
