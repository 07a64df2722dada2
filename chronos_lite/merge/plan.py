"""A merge's plan: each changed row's outcome (applied, a conflict, settled by hand), the
world's schema changes that go with it, and where it goes. What the gate, the policy, the
scope and the checks judge before anything is written (``apply`` makes and applies it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..storage.db import Session
from ..storage.worlds import World
from .changes import Change
from .names import Names
from .schema import Step


@dataclass
class Outcome:
    change: Change
    outcome: str  # apply, conflict, theirs, combined, by hand
    detail: str
    result: dict[str, Any] | None = None  # the row the parent gets (None: deleted)
    write: bool = True

    @property
    def deletes(self) -> bool:
        return self.outcome != "conflict" and self.write and self.result is None


@dataclass
class Plan:
    world: World
    parent: Session
    outcomes: list[Outcome] = field(default_factory=list)
    partial: bool = False
    other: bool = False  # into a branch that is not the world's parent
    schema: list[Step] = field(default_factory=list)  # the world's schema changes that go
    names: Names = field(default_factory=lambda: Names({}, {}))  # the parent's names for them
    dropped_values: int = 0  # values its dropped columns held (counted when a policy judges)

    @property
    def parent_name(self) -> str:
        return self.parent.branch

    @property
    def conflicts(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.outcome == "conflict"]

    @property
    def writes(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.outcome != "conflict" and o.write]

    @property
    def deletes(self) -> int:
        """Rows the merge deletes: row by row, and with the tables it drops."""
        return sum(o.deletes for o in self.writes) + sum(s.rows for s in self.schema)
