"""What may hold a merge for a person, asked inside the merge's transaction once its plan is
settled: the agent's merge policy (or production mode), its world's declared scope, and a
person's confirm_deletes_over. The merge checks come after, on the merged result."""

from __future__ import annotations

from dataclasses import dataclass

from .. import errors, hints
from ..errors import ChronosError
from ..storage.db import Database
from ..storage.governance import holds
from . import scope
from .plan import Plan
from .policy import Counts, Hold, counts
from .policy import reasons as policy_reasons


@dataclass
class Gate:
    """What may hold a merge for a person. ``hold``: the agent's merge policy (or production):
    each rule it breaks, each part of its world's declared scope and each merge check is a
    reason, and the merge is held (``Held``) instead of refused. ``confirm_over``: a person's
    merge of a world whose owner's policy has confirm_deletes_over, which must name its
    deletes. ``dry``: say whether it would be held (``Held``, perhaps without reasons), always
    rolling back."""

    hold: Hold | None = None
    confirm_over: int | None = None
    dry: bool = False
    reviewer: bool = False  # (a policy's reviewer approving: it can't confirm deletes)


def judge(db: Database, p: Plan, gate: Gate, confirm_deletes: int | None) -> list[str]:
    """The reasons the plan is held for, before its rows apply (a merge naming a wrong count
    of deletes, a person's merge outside its world's declared scope, or not naming deletes
    over confirm_deletes_over, is refused)."""
    deletes = p.deletes
    if confirm_deletes is not None and confirm_deletes != deletes:
        raise ChronosError(
            f"confirm_deletes is {confirm_deletes}, but merging {p.world.name} deletes "
            f"{deletes} row{'s' if deletes != 1 else ''}; nothing was merged",
            errors.BAD_ARGUMENT,
        )
    over = gate.confirm_over
    if over is not None and deletes > over and gate.reviewer:
        raise ChronosError(
            f"merging {p.world.name} deletes {deletes} rows, more than its merge policy's "
            f"confirm_deletes_over ({over}): a reviewer can't confirm that; a person merges it "
            f"with {hints.arg('confirm_deletes', deletes)}; nothing was merged",
            errors.REFUSED,
        )
    if over is not None and deletes > over and confirm_deletes is None and not gate.dry:
        raise ChronosError(
            f"merging {p.world.name} deletes {deletes} row{'s' if deletes != 1 else ''}, more "
            f"than its merge policy's confirm_deletes_over ({over}): confirm the count with "
            f"{hints.arg('confirm_deletes', deletes)} ({hints.op('merge_preview')} shows the "
            f"rows); nothing was merged",
            errors.BAD_ARGUMENT,
        )
    ruled = gate.hold is not None and gate.hold.policy is not None
    held_to = scope.scopes(db, p.world)
    taken = holds.taken_over(db.main.conn, p.world.id) if ruled else frozenset()
    n = counts(p, taken) if ruled or held_to else Counts()  # (only if asked)
    p.dropped_values = n.removed - n.deletes
    held = policy_reasons(db, p, gate.hold, n) if gate.hold is not None else []
    broken = scope.breaks(db, p, n, held_to)
    if broken and gate.hold is None:
        raise ChronosError(
            f"merging {p.world.name} goes outside its declared scope: {'; '.join(broken)}; "
            f"nothing was merged (a person merges it with the scope taken out of its meta)",
            errors.REFUSED,
        )
    return held + broken
