"""The operations layer: the one registry every front end calls (``registry``: validation,
rights, bounds, faults, the reply), who may do what (``rights``), and the operations' handlers
with their text renderings, one module per concern. Importing the package registers them all."""

from . import (  # noqa: F401
    agents,
    branches,
    checks,
    data,
    history,
    insert,
    merging,
    policies,
    reviewing,
    sql,
)
from .registry import REGISTRY

REGISTRY.arrange(
    [
        *("describe", "sql", "get", "put", "insert", "delete"),
        *("fork", "set_meta", "branches", "discard"),
        *("diff", "merge", "merge_preview", "rebase"),
        *("merge_policies", "check_merge_policy", "set_merge_policy", "drop_merge_policy"),
        *("reviews", "review"),
        *("merge_checks", "set_merge_check", "drop_merge_check"),
        *("restore", "checkpoint", "rollback", "history", "undo_merge", "config", "undo_agent"),
        *("agent", "audit", "mode"),
    ]
)
