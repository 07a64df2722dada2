"""A merge's request: everything a merge (its preview, a rebase, a policy's dry run) is asked
to do, in one object from the operation down to the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..storage.branchref import BranchRef
from .gate import Gate


@dataclass
class Options:
    """How rows both sides changed settle (``resolve``, ``by_columns``, ``rows`` by hand),
    which part merges (``only_tables``, ``only_keys``) and where (``into``: another branch
    than the parent); what the merge must match (``version``: the world's, ``target``: the
    target's position as the preview showed it) or confirm (``confirm_deletes``: the count of
    deletes, ``confirm``: after an interrupted merge); and what may hold it (``gate``)."""

    resolve: str = "fail"
    by_columns: bool = False
    rows: dict[str, Any] = field(default_factory=dict)
    only_tables: list[str] | None = None
    only_keys: list[str] | None = None
    into: BranchRef | None = None
    version: int | None = None
    target: int | None = None
    confirm_deletes: int | None = None
    confirm: bool = False
    gate: Gate = field(default_factory=Gate)

    @property
    def partial(self) -> bool:
        """The world stays open: part of it merges, or it goes to a branch by name."""
        return self.only_tables is not None or self.only_keys is not None or self.into is not None

    @property
    def settled(self) -> bool:
        """The caller said how it merges beyond a plain merge (confirm isn't asked for then)."""
        return self.partial or self.by_columns or bool(self.rows) or self.version is not None
