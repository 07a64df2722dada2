"""Who may do what: the session's mode, checked once, in the registry, for every front end.

* ``owner``: the database's own user (the CLI, the Python API, ``chronos mcp --allow-merge``):
  everything.
* ``safe``: ``chronos mcp`` by default. An agent reads every branch and forks; it writes only on
  the worlds it forked in this session; merge (and later restore, undo_merge) is a person's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import guard, sqltext
from . import statements as statements_sql
from .errors import REFUSED, ChronosError

if TYPE_CHECKING:
    from .registry import Caller, Operation

# Operations a person runs: not listed in safe mode, refused if called.
PERSON_ONLY = {"merge", "restore", "undo_merge"}
# Operations that change the branch they name: safe mode needs one of its own worlds.
WRITES_BRANCH = {"put", "delete", "set_meta", "discard", "rebase", "checkpoint", "rollback"}
WRITES_BRANCH.add("insert")  # loading a file into a table (loading.py): as put


def listed(op: Operation, caller: Caller) -> bool:
    return op.mcp and (caller.mode != "safe" or op.name not in PERSON_ONLY)


def check(db: Any, op: Operation, args: dict, caller: Caller) -> None:
    """Refuse a call the caller may not make (nothing has run yet)."""
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
        _check_sql(args, caller)
    elif op.name in WRITES_BRANCH:
        _need_own(db, args.get("branch"), caller)
        if op.name == "discard" and args.get("cascade"):
            world = db.world(args["branch"])
            strangers = [w.name for w in db.children(world) if w.wid not in caller.own_worlds]
            if strangers:
                raise ChronosError(
                    f"safe mode: discard with cascade would throw away {', '.join(strangers)}, "
                    f"which this session didn't fork; discard only your own branches",
                    REFUSED,
                )


def sql_access(db: Any, branch: str | None, caller: Caller) -> Callable[[Any], guard.Access]:
    """What a sql call's statements may touch, given the world its session is on (None: main),
    which the guard holds them to as SQLite prepares them: everything for the database's own
    user; in safe mode, writes only on the session's own worlds, and no settings anywhere."""
    if caller.mode != "safe":
        return _everything

    def access(world: Any) -> guard.Access:
        own = world is not None and world.wid in caller.own_worlds
        return guard.Access(own, False, lambda denial: _refusal(db, branch, caller, denial))

    return access


def _everything(_world: Any) -> guard.Access:
    return guard.OWNER


def _refusal(db: Any, branch: str | None, caller: Caller, denial: guard.Denial) -> ChronosError:
    if denial.kind == "settings":
        return ChronosError(
            f"safe mode: agents can't change settings in SQL ({denial.name}); read with SELECT "
            f"(the describe tool shows the tables), write rows on a branch you forked",
            REFUSED,
        )
    return _not_own(db, branch, caller)


def _check_sql(args: dict, caller: Caller) -> None:
    """Chronos' statements are refused or let through here (what SQLite runs, the guard
    checks as it prepares it)."""
    for stmt in sqltext.split_statements(args.get("sql", "")):
        if statements_sql.is_chronos(stmt):
            _check_statement(stmt, sqltext.keywords(stmt, 2) or [""])


def _check_statement(stmt: str, words: list[str]) -> None:
    """Chronos statements that only read (SHOW WORLDS, DIFF, MERGE ... DRY RUN, SHOW HISTORY)
    run in safe mode; the rest change worlds, which the tools do on an agent's own branches."""
    from .registry import REGISTRY  # the registry imports this module

    op, _args = statements_sql.parse(stmt)  # a malformed one: the error shows its form
    if op in REGISTRY and REGISTRY.get(op).read_only:
        return
    raise ChronosError(
        f"safe mode: agents can't fork, merge, restore, drop or switch worlds in SQL "
        f"({' '.join(words)}); use the fork tool to fork and the tools on a branch you forked "
        f"(a person merges, restores and undoes merges)",
        REFUSED,
    )


def _owns(db: Any, branch: str | None, caller: Caller) -> bool:
    if branch in (None, "", "main") or "@" in (branch or ""):
        return False
    return db.world(branch).wid in caller.own_worlds  # (a clear error for no such branch)


def _need_own(db: Any, branch: str | None, caller: Caller) -> None:
    if not _owns(db, branch, caller):
        raise _not_own(db, branch, caller)


def _not_own(db: Any, branch: str | None, caller: Caller) -> ChronosError:
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
