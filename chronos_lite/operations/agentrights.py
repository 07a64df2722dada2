"""What a named agent may do: its rights (the concepts page's table), checked per call.

* ``read``: read any branch (its own worlds it reads without it).
* ``fork``: make worlds, which are its own (``owner``), across sessions.
* ``write_own``: change the worlds it forked (rows, schema, checkpoints, rebase).
* ``write_main``: reach main: its direct writes (only while no merge policy holds it and the
  database is in development mode), and with ``merge_own`` its merges into main (under its
  policy, or held for a person in production: ``operations.reviewing``).
* ``merge_own``: merge the worlds it forked (into main with ``write_main``; into a world of its
  own).
* ``merge``: merge any world, anywhere. ``restore``: restore, roll back and undo (UNDO AGENT).
* ``admin``: every right, and managing agents and settings.

A world's statements that SQLite runs are held to the same rights as SQLite prepares them (the
guard's ``Access``); chronos' statements in sql run their operation, checked here as that call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from ..errors import REFUSED, ChronosError
from ..storage import guard, worlds
from ..storage.branchref import BranchRef
from ..storage.db import Database
from ..storage.governance import agents
from ..storage.worlds import World
from .args import Args


class Caller(Protocol):
    name: str
    rights: frozenset[str]
    policy: str | None
    production: bool


def effective(rights: Iterable[str]) -> frozenset[str]:
    """An agent's rights as they act: admin is every right."""
    given = frozenset(rights)
    return frozenset(agents.RIGHTS) if "admin" in given else given


def listed(name: str, caller: Caller) -> bool:
    """The spec's table: the tools an agent sees only with these rights (and never undo_merge
    while it keeps to a merge policy)."""
    rights = caller.rights
    if name == "merge":
        return bool({"merge", "merge_own"} & rights)
    if name in ("restore", "rollback"):
        return "restore" in rights
    if name == "undo_merge":
        return main_closed(caller) is None and ("admin" in rights or {"restore", "merge"} <= rights)
    if name in RULE_SETTERS:
        return "admin" in rights
    return True


def writes_main(caller: Caller) -> bool:
    """Whether the agent's own writes may change main: with write_main, while no merge policy
    holds it and the database is in development (else main changes only by its merges)."""
    return "write_main" in caller.rights and main_closed(caller) is None


def main_closed(caller: Caller) -> str | None:
    """Why main changes only by the agent's merges (its merge policy, or production mode), so
    that its writes, restores, rollbacks and undos never reach main; None: they may."""
    if caller.policy is not None:
        return f"it keeps to merge policy {caller.policy}"
    if caller.production:
        return "the database is in production mode"
    return None


def main_rewrite_refused(caller: Caller, what: str) -> ChronosError:
    """An agent under a merge policy (or in production) can't put main back by itself: a
    restore, rollback or undo there would change main around the merge its rules judge."""
    return ChronosError(
        f"agent {caller.name} can't {what}: {main_closed(caller)}, so main changes only by a "
        f"merge a person or its policy lets through; on its own worlds it may; ask a person "
        f"to {what}",
        REFUSED,
    )


# Operations that write the branch they name (as put: on its own worlds with write_own, main
# with write_main).
WRITES_BRANCH = {"put", "delete", "insert", "rebase", "checkpoint"}
MANAGES_WORLD = {"set_meta", "discard"}
RULE_SETTERS = {"set_merge_check", "drop_merge_check", "set_merge_policy", "drop_merge_policy"}
RULE_SETTERS |= {"mark_reader", "drop_reader"}  # (declared readers: what the critical rule reads)
ADMIN_ONLY = {"agent", "config", "audit", "mode", *RULE_SETTERS}
ADMIN_ONLY |= {"backup", "export", "verify"}  # (they write and read files elsewhere on the disk)
DECIDES_ITSELF = {"review"}  # (the operation checks the caller is the policy's reviewer)


def check(db: Database, name: str, read_only: bool, args: Args, caller: Caller) -> None:
    """Refuse a call the agent's rights don't allow (nothing has run yet)."""
    rights = caller.rights
    if name in ADMIN_ONLY:
        _need(caller, {"admin"}, _doing(name, args))
    elif name in WRITES_BRANCH:
        _need_write(db, args, caller)
    elif name in MANAGES_WORLD:
        _need_manage(db, args, caller, name, bool(args.given("cascade")))
    elif name == "fork":
        _need(caller, {"fork"}, "fork a world")
        _need_read(db, args, caller, "from")
    elif name in ("simulate", "replay"):  # (forks worlds, its own, and writes them)
        _need(caller, {"fork", "write_own"}, f"{name} (it forks worlds and writes them)")
        if name == "simulate":
            _need_read(db, args, caller, "from")
        elif "read" not in rights and db.world(args["world"]).owner != caller.name:
            raise _refused(caller, f"replay {args['world']}", "read", _OWN_HINT)
    elif name == "merge":
        _need_merge(db, args, caller)
    elif name in ("restore", "rollback"):
        _need(caller, {"restore"}, f"{name} {_where(args.given_ref())}")
        if args.ref().is_main and main_closed(caller) is not None:
            raise main_rewrite_refused(caller, f"{name} main")
    elif name == "undo_merge":
        if not ("admin" in rights or {"restore", "merge"} <= rights):
            raise _refused(caller, "undo a merge", "admin, or restore and merge")
        if main_closed(caller) is not None:
            raise ChronosError(
                f"agent {caller.name} can't undo a merge: {main_closed(caller)}, and undo_merge "
                f"is never an agent's then: a person undoes a merge",
                REFUSED,
            )
    elif name in DECIDES_ITSELF:
        pass
    elif name == "undo_agent":
        _need(caller, {"restore"}, f"undo what {args.given('agent')} did (UNDO AGENT)")
    elif name == "sql":
        _need_read(db, args, caller)  # (its statements: the guard, and the calls they run)
    elif read_only:
        _need_read(db, args, caller)
        for other in ("to", "into"):  # (diff's other branch, merge_preview's target)
            if args.given(other):
                _need_read(db, args, caller, other)
    else:  # (an operation this table doesn't know yet: only an admin)
        _need(caller, {"admin"}, _doing(name, args))


def sql_access(db: Database, caller: Caller) -> Callable[[World | None], guard.Access]:
    """What the agent's SQL may write, per the world a statement runs on (None: main)."""
    rights = caller.rights

    def access(world: World | None) -> guard.Access:
        if world is None:
            write = writes_main(caller)
        elif world.owner == caller.name:
            write = "write_own" in rights
        else:
            write = "admin" in rights
        refusal = _sql_refusal(caller, world)
        return guard.Access(write, "admin" in rights, refusal, branches="read" in rights)

    return access


def _sql_refusal(caller: Caller, world: World | None) -> Callable[[guard.Denial], ChronosError]:
    def refusal(denial: guard.Denial) -> ChronosError:
        if denial.kind == "settings":
            return _refused(caller, f"change settings in SQL ({denial.name})", "admin")
        if denial.kind == "admin":
            return _refused(caller, f"read the agents or the audit trail ({denial.name})", "admin")
        if denial.kind == "read":
            return _refused(
                caller, f"read other branches in SQL ({denial.name})", "read", _OWN_HINT
            )
        if world is None:
            return _main_refused(caller)
        if world.owner == caller.name:
            return _refused(caller, f"write its world {world.name}", "write_own")
        return _not_its(caller, world, "write")

    return refusal


_OWN_HINT = "it reads without it only the worlds it forked"
_MAIN_HINT = 'fork a world (the fork tool) and write there, with branch="<your branch>"'


def _owns(db: Database, args: Args, caller: Caller, key: str) -> bool:
    """Whether the branch ``key`` names is a world the agent forked (main isn't; a branch as
    it was is its world's)."""
    world = args.world(db, key)  # (a clear error for no such branch)
    return world is not None and world.owner == caller.name


def _need_read(db: Database, args: Args, caller: Caller, key: str = "branch") -> None:
    if "read" in caller.rights or _owns(db, args, caller, key):
        return
    raise _refused(caller, f"read {_where(args.given_ref(key))}", "read", _OWN_HINT)


def _need_write(db: Database, args: Args, caller: Caller) -> None:
    ref = args.ref()
    if ref.past:
        raise ref.read_only()
    world = args.world(db)
    if world is None:
        if not writes_main(caller):
            raise _main_refused(caller)
        return
    if world.owner == caller.name:
        _need(caller, {"write_own"}, f"write its world {world.name}")
    elif "admin" not in caller.rights:
        raise _not_its(caller, world, "write")


def _need_manage(db: Database, args: Args, caller: Caller, name: str, cascade: bool) -> None:
    what = "discard" if name == "discard" else "change the meta of"
    world = args.world(db)
    if world is None:
        return  # (the operation's own error: main is no world to discard or annotate)
    if "admin" in caller.rights:
        return
    if world.owner != caller.name:
        raise _not_its(caller, world, what)
    if cascade:
        strangers = [w for w in worlds.children(db.main.conn, world) if w.owner != caller.name]
        if strangers:
            names = ", ".join(f"{w.name} ({w.owner}'s)" for w in strangers)
            raise ChronosError(
                f"agent {caller.name} can't discard {world.name} with cascade: that would "
                f"throw away {names}, which it didn't fork; discard only its own worlds",
                REFUSED,
            )


def _need_merge(db: Database, args: Args, caller: Caller) -> None:
    rights = caller.rights
    if "merge" in rights:
        return
    world = args.world_named(db)
    if "merge_own" not in rights:
        raise _refused(
            caller,
            f"merge {world.name}",
            "merge_own (its own worlds) or merge",
            "report the branch: a person merges it",
        )
    if world.owner != caller.name:
        raise _not_its(caller, world, "merge")
    target = args.world(db, "into") if args.given_ref("into") else _parent(db, world)
    if target is None:
        _need(
            caller,
            {"write_main"},
            f"merge {world.name} into main",
            "report the branch: a person merges it",
        )
    elif target.owner != caller.name:
        raise _not_its(caller, target, "merge into")


def _parent(db: Database, world: World) -> World | None:
    return db.world(world.parent) if world.parent_id is not None else None


def _main_refused(caller: Caller) -> ChronosError:
    if "write_main" not in caller.rights:
        return _refused(caller, "write main", "write_main", _MAIN_HINT)
    return ChronosError(
        f"agent {caller.name} can't write main directly: {main_closed(caller)}, so main "
        f"changes only by a merge; {_MAIN_HINT}, then merge it",
        REFUSED,
    )


def _need(caller: Caller, needs: set[str], what: str, then: str = "") -> None:
    if not needs & caller.rights:
        raise _refused(caller, what, " or ".join(sorted(needs)), then)


def _refused(caller: Caller, what: str, needs: str, then: str = "") -> ChronosError:
    has = ", ".join(r for r in agents.RIGHTS if r in caller.rights) or "none"
    text = (
        f"agent {caller.name} can't {what}: that needs {needs}, and its rights are {has} "
        f"(a person gives rights: chronos <folder> agent alter {caller.name} --rights ...)"
    )
    return ChronosError(text + (f"; {then}" if then else ""), REFUSED)


def _not_its(caller: Caller, world: World, what: str) -> ChronosError:
    return ChronosError(
        f"agent {caller.name} can't {what} {world.name}: it is {world.owner}'s world, and an "
        f"agent changes only the worlds it forked (fork one of your own, or ask its owner)",
        REFUSED,
    )


def _where(ref: BranchRef | None) -> str:
    return "main" if ref is None or ref.is_main else f"branch {ref}"


def _doing(name: str, args: Args) -> str:
    action = args.given("action")
    return f"{action} an agent" if name == "agent" and action else f"run {name}"
