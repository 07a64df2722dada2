"""The operations layer: the one registry every front end calls (``registry``: validation,
rights, bounds, faults, the reply), who may do what (``rights``), and the operations' handlers
with their text renderings, one module per concern.

``MODULES`` names each operation's module, in the order the operations are listed (tools/list,
help: the spec's, describe first); the registry imports a module the first time one of its
operations is looked up, so a command that runs one operation starts without the others."""

from .registry import REGISTRY


def _each(module: str, *names: str) -> dict[str, str]:
    return {name: f"{__name__}.{module}" for name in names}


MODULES: dict[str, str] = {
    **_each("data", "describe"),
    **_each("finding", "find"),
    **_each("sql", "sql"),
    **_each("data", "get", "put"),
    **_each("insert", "insert"),
    **_each("data", "delete"),
    **_each("branches", "fork", "set_meta", "branches", "discard"),
    **_each("merging", "diff", "merge", "merge_preview", "rebase"),
    **_each("readchecks", "check_reads"),
    **_each("simulating", "simulate", "replay"),
    **_each("policies", "merge_policies", "check_merge_policy", "set_merge_policy"),
    **_each("policies", "drop_merge_policy"),
    **_each("reviewing", "reviews", "review"),
    **_each("checks", "merge_checks", "set_merge_check", "drop_merge_check"),
    **_each("readers", "readers", "mark_reader", "drop_reader"),
    **_each("history", "restore", "checkpoint", "rollback", "history", "undo_merge"),
    **_each("history", "config", "undo_agent"),
    **_each("agents", "agent", "audit"),
    **_each("policies", "mode"),
    **_each("finding", "index"),
    **_each("backups", "backup", "export", "verify", "hash"),
}

REGISTRY.index(MODULES)
