"""Who may do what: the session's mode, checked once, in the registry, for every front end.

* ``owner``: the database's own user (the CLI, the Python API, ``chronos mcp --allow-merge``):
  everything.
* ``safe``: ``chronos mcp`` by default. An agent reads every branch and forks; it writes only on
  the worlds it forked in this session; merge, restore and undo_merge are a person's.
* ``agent``: ``chronos mcp --agent NAME``: only the named agent's rights (``agentrights``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from .. import sqltext
from ..errors import REFUSED, ChronosError
from ..statements import chronos_sql
from ..storage import guard, worlds
from ..storage.db import Database
from ..storage.governance import agents
from ..storage.governance import mode as db_mode
from ..storage.governance import policies as mergepolicies
from ..storage.worlds import World
from . import agentrights
from .args import Args


class Operation(Protocol):
    """What the rights read of an operation (the registry's ``Operation``)."""

    name: str
    mcp: bool


class Caller(Protocol):
    """What the rights read of a caller (the registry's ``Caller``)."""

    name: str
    mode: str
    own_worlds: set[str]
    rights: frozenset[str]

    quotas: dict[str, int | None]
    seen: tuple[tuple[int, int], float] | None
    policy: str | None
    production: bool

    def own_world_names(self, db: Database) -> list[str]: ...


FRESH_S = 0.05  # an agent's rights and quotas are at most this old when a call checks them

# Operations a person runs: not listed in safe mode, refused if called.
PERSON_ONLY = {"merge", "restore", "undo_merge"}
PERSON_ONLY |= {"backup", "export", "verify"}  # (files elsewhere on the disk: written, read)
# Operations that change the branch they name: safe mode needs one of its own worlds.
WRITES_BRANCH = {"put", "delete", "set_meta", "discard", "rebase", "checkpoint", "rollback"}
WRITES_BRANCH.add("insert")  # loading a file into a table (loading.py): as put


def listed(op: Operation, caller: Caller) -> bool:
    if not op.mcp:
        return False
    if caller.mode == "agent":
        return agentrights.listed(op.name, caller)
    return caller.mode != "safe" or op.name not in PERSON_ONLY


def refresh(db: Database, caller: Caller, current: bool = False) -> bool:
    """An agent's rights and quotas as the file has them: read again when this process saw the
    file change (its own commits, and others' as its reads found them) and at least every
    ``FRESH_S``, so a person's ALTER AGENT holds within that; a disabled or dropped agent's
    calls are refused. ``current``: the file as it is now, another process's last commit
    included (a call that may write). Whether they were read again."""
    conn = db.main.conn
    if current:  # (the pager learns of others' commits as a read transaction starts)
        conn.execute("SELECT 1 FROM main._chronos_meta LIMIT 1").fetchall()
    # (apsw's data_version() is the pager's, free to ask: a pragma data_version would cost a
    # read transaction, two locks, on every call)
    seen, now = (conn.data_version(), conn.total_changes()), time.monotonic()
    if caller.seen is not None and caller.seen[0] == seen and now - caller.seen[1] < FRESH_S:
        return False
    agent = agents.find(conn, caller.name)
    if agent is None or not agent.enabled:
        state = "dropped" if agent is None else "disabled"
        raise ChronosError(
            f"agent {caller.name} is {state}: it can act no more"
            + (
                f" (a person enables it: chronos {db.folder} agent alter {caller.name} --enable)"
                if agent
                else ""
            ),
            REFUSED,
        )
    caller.rights = agentrights.effective(agent.rights)
    caller.quotas = agent.quotas()
    policy = mergepolicies.policy_of(conn, agent.name)
    caller.policy = policy.name if policy else None
    caller.production = db_mode.mode(conn) == "production"
    caller.seen = (seen, now)
    return True


def check(
    db: Database, op: Operation, args: Args, caller: Caller, reads_only: Callable[[str], bool]
) -> None:
    """Refuse a call the caller may not make (nothing has run yet). ``reads_only``: whether
    the registry's operation of that name only reads (what a chronos statement runs)."""
    if caller.mode == "agent":
        agentrights.check(db, op.name, reads_only(op.name), args, caller)
        return
    if caller.mode != "safe":
        return
    if op.name in PERSON_ONLY:
        if op.name == "merge":
            then = f"A person reviews your diff and runs `chronos {db.folder} merge <branch>`"
        else:
            then = f"A person runs `chronos {db.folder} {op.name.replace('_', '-')} ...`"
        raise ChronosError(
            f"safe mode: agents can't {op.name.replace('_', ' ')}. {then}: report the branch "
            f"name (on your own branch, checkpoint and rollback work)",
            REFUSED,
        )
    if op.name == "sql":
        _check_sql(args, reads_only)
    elif op.name in WRITES_BRANCH:
        if not _owns(db, args, caller):
            raise _not_own(db, args.given("branch"), caller)
        if op.name == "discard" and args.given("cascade"):
            world = args.world_named(db)
            below = worlds.children(db.main.conn, world)
            strangers = [w.name for w in below if w.wid not in caller.own_worlds]
            if strangers:
                raise ChronosError(
                    f"safe mode: discard with cascade would throw away {', '.join(strangers)}, "
                    f"which this session didn't fork; discard only your own branches",
                    REFUSED,
                )


def sql_access(
    db: Database, branch: str | None, caller: Caller
) -> Callable[[World | None], guard.Access]:
    """What a sql call's statements may touch, given the world its session is on (None: main),
    which the guard holds them to as SQLite prepares them: everything for the database's own
    user; in safe mode, writes only on the session's own worlds, and no settings anywhere; an
    agent, what its rights allow."""
    if caller.mode == "agent":
        return agentrights.sql_access(db, caller)
    if caller.mode != "safe":
        return _everything

    def access(world: World | None) -> guard.Access:
        own = world is not None and world.wid in caller.own_worlds
        return guard.Access(own, False, lambda denial: _refusal(db, branch, caller, denial))

    return access


def _everything(_world: World | None) -> guard.Access:
    return guard.OWNER


def _refusal(
    db: Database, branch: str | None, caller: Caller, denial: guard.Denial
) -> ChronosError:
    if denial.kind == "admin":
        return ChronosError(
            f"safe mode: agents can't read the agents or the audit trail ({denial.name}); a "
            f"person reads them (chronos {db.folder} agent list, chronos {db.folder} audit)",
            REFUSED,
        )
    if denial.kind == "settings":
        return ChronosError(
            f"safe mode: agents can't change settings in SQL ({denial.name}); read with SELECT "
            f"(the describe tool shows the tables), write rows on a branch you forked",
            REFUSED,
        )
    return _not_own(db, branch, caller)


def _check_sql(args: Args, reads_only: Callable[[str], bool]) -> None:
    """Chronos' statements are refused or let through here (what SQLite runs, the guard
    checks as it prepares it)."""
    for stmt in args.statements():
        if chronos_sql.is_chronos(stmt):
            _check_statement(stmt, sqltext.keywords(stmt, 2) or [""], reads_only)


def _check_statement(stmt: str, words: list[str], reads_only: Callable[[str], bool]) -> None:
    """Chronos statements that only read (SHOW WORLDS, DIFF, MERGE ... DRY RUN, SHOW HISTORY)
    run in safe mode; the rest change worlds, which the tools do on an agent's own branches."""
    op, _args = chronos_sql.parse(stmt)  # a malformed one: the error shows its form
    if op == "audit":
        raise ChronosError(
            "safe mode: agents can't read the audit trail (SHOW AUDIT): a person reads it with "
            "`chronos <folder> audit`",
            REFUSED,
        )
    if reads_only(op):
        return
    if op in agentrights.RULE_SETTERS:  # (merge checks, merge policies, declared readers)
        raise ChronosError(
            f"safe mode: agents can't change what holds a merge ({' '.join(words)}), so nothing "
            f"changed: a person runs the statement (chronos <folder> -c, the shell, or its sql)",
            REFUSED,
        )
    raise ChronosError(
        f"safe mode: agents can't fork, merge, restore, drop or switch worlds in SQL "
        f"({' '.join(words)}); use the fork tool to fork and the tools on a branch you forked "
        f"(a person merges, restores and undoes merges)",
        REFUSED,
    )


def _owns(db: Database, args: Args, caller: Caller) -> bool:
    """Whether the call's branch is a world this session forked (main, and a branch as it
    was, aren't)."""
    ref = args.given_ref()
    if ref is None or ref.is_main or ref.past:
        return False
    world = args.world(db)  # (a clear error for no such branch)
    return world is not None and world.wid in caller.own_worlds


def _not_own(db: Database, branch: str | None, caller: Caller) -> ChronosError:
    mine = sorted(caller.own_world_names(db))
    how = (
        f"your branches: {', '.join(mine)}"
        if mine
        else "you haven't forked one yet: call fork first"
    )
    if branch is None:
        return ChronosError(
            f'safe mode: changes need branch="<a branch you forked>" ({how})', REFUSED
        )
    return ChronosError(
        f'safe mode: changes need branch="<a branch you forked in this session>" ({how}), '
        f"and '{branch}' isn't one",
        REFUSED,
    )
