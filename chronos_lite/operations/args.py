"""A call's arguments once validated: defaults filled in, what the caller gave told apart, and
the branches it names read once (the registry makes them; rights, handlers and the engine
below take those values)."""

from __future__ import annotations

from typing import Any

from .. import sqltext
from ..storage.branchref import MAIN, BranchRef
from ..storage.db import Database
from ..storage.worlds import World

# The parameters that name a branch: each read once, at validation, into a BranchRef.
BRANCH_KEYS = frozenset({"branch", "into", "to", "from"})


class Args(dict):
    """Validated arguments, defaults filled in; ``given`` tells what the caller sent. The
    branches the call names are parsed once (``ref``) and their worlds looked up once per
    call (``world``): everything below takes those values, not the text."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.defaulted: set[str] = set()
        self.refs: dict[str, BranchRef] = {}
        self._worlds: dict[str, World | None] = {}
        self._statements: list[str] | None = None

    def given(self, key: str) -> Any:
        """The caller's value for ``key``; None where it sent none (the default filled in)."""
        return None if key in self.defaulted else self.get(key)

    def statements(self) -> list[str]:
        """The ``sql`` argument's statements, split once for the call (rights and the run)."""
        if self._statements is None:
            self._statements = sqltext.split_statements(self.get("sql") or "")
        return self._statements

    def ref(self, key: str = "branch") -> BranchRef:
        """The branch ``key`` names (main where the call names none)."""
        return self.refs.get(key, MAIN)

    def given_ref(self, key: str = "branch") -> BranchRef | None:
        """The branch the caller named with ``key``; None where it named none."""
        return None if key in self.defaulted else self.refs.get(key)

    def world(self, db: Database, key: str = "branch") -> World | None:
        """The open world ``key`` names, as it is now (None for main; for ``name@when``, the
        world ``name``), looked up once."""
        if key not in self._worlds:
            ref = self.ref(key)
            now = BranchRef(ref.name) if ref.past else ref
            self._worlds[key] = None if ref.is_main else db.world(now)
        return self._worlds[key]

    def target(self, db: Database, key: str = "branch") -> World | BranchRef:
        """What ``db.session`` takes for the branch ``key`` names: its world, looked up once,
        or for main and a branch as it was, the reference."""
        ref = self.ref(key)
        if ref.is_main or ref.past:
            return ref
        world = self.world(db, key)
        assert world is not None  # (not main)
        return world

    def place(self, db: Database, key: str = "branch") -> World | BranchRef:
        """What ``db.session`` takes for the branch ``key`` names: its world if the call looked
        it up already, else the reference (the session looks it up, or finds its connection
        as it left it: see ``Database.session``)."""
        return self.target(db, key) if key in self._worlds else self.ref(key)

    def world_named(self, db: Database, key: str = "branch") -> World:
        """The open world ``key`` names, for an operation on a world (main is refused, and
        told apart: it is the database itself; a branch as it was can only be read)."""
        if self.ref(key).past:
            raise self.ref(key).read_only()
        world = self.world(db, key)
        return world if world is not None else db.world(MAIN)
