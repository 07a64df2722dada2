"""Who may do what: the session's mode, checked once, in the registry, for every front end.

* ``owner``: the database's own user (the CLI, the Python API, ``chronos mcp --allow-merge``):
  everything.
* ``safe``: ``chronos mcp`` by default. An agent reads every branch and forks; it writes only on
  the worlds it forked in this session; merge (and later restore, undo_merge) is a person's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apsw

from . import sqltext
from . import statements as statements_sql
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


# PRAGMAs that only read: these take an argument (a table's name) in parentheses...
READ_WITH_ARGUMENT = {
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
}
# ...and these read only bare: with "= v" or "(v)" they set.
READ_BARE = READ_WITH_ARGUMENT | {
    "database_list",
    "collation_list",
    "function_list",
    "module_list",
    "pragma_list",
    "compile_options",
    "schema_version",
    "user_version",
    "application_id",
    "page_count",
    "page_size",
    "freelist_count",
    "encoding",
    "data_version",
    "foreign_keys",
}


def _check_sql(db: Any, args: dict, caller: Caller) -> None:
    statements = sqltext.split_statements(args.get("sql", ""))
    writes = False
    for stmt in statements:
        words = sqltext.keywords(stmt, 2) or [""]
        if statements_sql.is_chronos(stmt):
            _check_statement(stmt, words)
            continue
        if words[0] == "PRAGMA" and _reads(stmt):
            continue
        if words[0] in SETTINGS:
            raise ChronosError(
                f"safe mode: agents can't change settings in SQL ({words[0]}); read with SELECT "
                f"(the describe tool shows the tables), write rows on a branch you forked",
                REFUSED,
            )
        writes = writes or (sqltext.may_write(stmt) and not _misspelt(db, stmt))
    if writes:
        _need_own(db, args.get("branch"), caller)


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


def _reads(stmt: str) -> bool:
    names = sqltext.name_tokens(stmt)
    name = names[1][0].lower() if len(names) > 1 else ""
    if name == "main" and len(names) > 2:  # PRAGMA main.table_info(...)
        name = names[2][0].lower()
    if "=" in stmt:
        return False
    return name in (READ_WITH_ARGUMENT if "(" in stmt else READ_BARE)


def _misspelt(db: Any, stmt: str) -> bool:
    """A statement SQLite can't parse changes nothing: let the call say what's wrong with it
    rather than refuse it as a write."""
    try:
        db.main.conn.execute("EXPLAIN " + stmt).fetchone()
    except apsw.SQLError as exc:
        return "syntax error" in str(exc) or "incomplete input" in str(exc)
    except apsw.Error:
        return False
    return False


def _need_own(db: Any, branch: str | None, caller: Caller) -> None:
    if branch in (None, "", "main") or "@" in (branch or ""):
        pass
    else:
        world = db.world(branch)  # a clear error for a branch that doesn't exist
        if world.wid in caller.own_worlds:
            return
    mine = sorted(caller.own_world_names(db))
    how = (
        f"your branches: {', '.join(mine)}"
        if mine
        else "you haven't forked one yet: call fork first"
    )
    if branch is None:
        raise ChronosError(
            f'safe mode: changes need branch="<a branch you forked>" ({how})', REFUSED
        )
    raise ChronosError(
        f'safe mode: changes need branch="<a branch you forked in this session>" ({how}), '
        f"and '{branch}' isn't one",
        REFUSED,
    )
