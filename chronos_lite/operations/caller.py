"""Who acts in a call: the database's owner, an agent in safe mode, or a named agent with its
rights and quotas, and the limits its session gives every call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import NOT_FOUND, ChronosError
from ..statements import budget
from ..storage.db import Database
from ..storage.governance import agents
from . import rights


@dataclass
class Caller:
    """Who acts: the database's own user (mode ``owner``); an agent in safe mode (``safe``),
    which writes only on the worlds it forked (their ids, kept as long as the process); or a
    named agent (``agent``: ``name``), with only its rights (``agentrights``) and quotas."""

    name: str = "owner"
    mode: str = "owner"
    own_worlds: set[str] = field(default_factory=set)
    rights: frozenset[str] = frozenset()  # an agent's (admin made every right)
    max_rows: int | None = None  # rows a result may hold (MCP: 1000); None: all
    max_chars: int | None = None  # characters a result may take (MCP: 24,000); None: any
    max_query_ms: int | None = None  # the call's time limit (safe mode: 30 s); None: none
    max_memory_mb: int | None = None  # the memory a call may take; None: no limit
    quotas: dict[str, int | None] = field(default_factory=dict)  # an agent's, read per call
    seen: tuple[tuple[int, int], float] | None = None  # the file version its rights were read at
    policy: str | None = None  # the merge policy an agent keeps to (read with its rights)
    production: bool = False  # the database is in production mode (read with its rights)
    run: str | None = None  # the caller's run id (agents, later), kept with what it writes

    @classmethod
    def for_agent(cls, db: Database, name: str, **session: Any) -> Caller:
        """The named agent as a caller (``session``: the session's own limits, as
        ``max_rows``); an unknown, disabled or dropped agent is refused."""
        found = agents.find(db.main.conn, name)
        if found is None:
            raise ChronosError(
                f"no agent {name}: SHOW AGENTS lists them (chronos {db.folder} agent list); "
                f"create one with chronos {db.folder} agent create {name} --rights ...",
                NOT_FOUND,
            )
        caller = cls(name=found.name, mode="agent", **session)
        rights.refresh(db, caller)
        return caller

    @property
    def budget(self) -> budget.Budget:
        return budget.Budget(self.max_rows, self.max_chars)

    def own_world_names(self, db: Database) -> list[str]:
        return [w.name for w in db.worlds() if w.wid in self.own_worlds]
