"""Who may do what: the session's mode, checked once, in the registry, for every front end.

* ``owner``: the database's own user (the CLI, the Python API, ``chronos mcp --allow-merge``):
  everything.
* ``safe``: ``chronos mcp`` by default. An agent reads every branch and forks; it writes only on
  the worlds it forked in this session; merge (and later restore, undo_merge) is a person's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import sqltext
from .errors import REFUSED, ChronosError

if TYPE_CHECKING:
    from .registry import Caller, Operation

# Operations a person runs: not listed in safe mode, refused if called.
PERSON_ONLY = {"merge", "restore", "undo_merge"}
# Operations that change the branch they name: safe mode needs one of its own worlds.
WRITES_BRANCH = {"put", "delete", "set_meta", "discard", "rebase", "checkpoint", "rollback"}
# Statements that change the session or the file rather than rows; refused in safe mode.
SETTINGS = {"PRAGMA", "ATTACH", "DETACH", "VACUUM", "REINDEX", "ANALYZE"}


def listed(op: Operation, caller: Caller) -> bool:
    return caller.mode != "safe" or op.name not in PERSON_ONLY


def check(db: Any, op: Operation, args: dict, caller: Caller) -> None:
    """Refuse a call the caller may not make (nothing has run yet)."""
    if caller.mode != "safe":
        return
    if op.name in PERSON_ONLY:
        raise ChronosError(
            f"safe mode: agents can't {op.name.replace('_', ' ')}. A person reviews your diff "
            f"and runs `chronos {db.folder} merge <branch>`: report the branch name",
            REFUSED,
        )
    if op.name == "sql":
        _check_sql(db, args, caller)
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


def _check_sql(db: Any, args: dict, caller: Caller) -> None:
    statements = sqltext.split_statements(args.get("sql", ""))
    for stmt in statements:
        first = (sqltext.keywords(stmt, 1) or [""])[0]
        if first in SETTINGS:
            raise ChronosError(
                f"safe mode: agents can't change settings in SQL ({first}); read with SELECT, "
                f"write rows on a branch you forked",
                REFUSED,
            )
    if any(sqltext.may_write(s) for s in statements):
        _need_own(db, args.get("branch"), caller)


def _need_own(db: Any, branch: str | None, caller: Caller) -> None:
    if branch in (None, "", "main") or "@" in (branch or ""):
        pass
    else:
        world = db.world(branch)  # a clear error for a branch that doesn't exist
        if world.wid in caller.own_worlds:
            return
    mine = sorted(caller.own_world_names(db))
    if branch is None:
        raise ChronosError(
            'safe mode: changes need branch="<a branch you forked>". Call fork first.', REFUSED
        )
    yours = f"your branches: {', '.join(mine)}" if mine else "you haven't forked one yet"
    raise ChronosError(
        f'safe mode: changes need branch="<a branch you forked in this session>" ({yours}), '
        f"and '{branch}' isn't one. Call fork first to get a branch of your own",
        REFUSED,
    )
