"""What the shell's branch holds, as psql's ``\\d`` and ``\\dt`` and sqlite3's ``.tables`` and
``.schema`` show it: the user's tables and views (a world's own schema on a world), never
chronos' own ``_chronos_*`` objects (the catalog's tables and the branch's schema leave them
out). ``\\d <table>`` is the registry's describe operation."""

from __future__ import annotations

import re
from typing import Any, Protocol

from ..errors import NOT_FOUND, ChronosError
from ..operations.registry import REGISTRY, Operation
from ..storage.branchref import BranchRef
from ..storage.db import Database
from ..storage.schema import virtual
from ..storage.world.schema import BranchSchema

COLUMNS = ["name", "type"]


class Lister(Protocol):
    """What these commands use of the shell (session.Shell)."""

    db: Database
    branch: str

    def _result(self, columns: list[str], rows: list[list[Any]]) -> None: ...

    def _note(self, text: str) -> None: ...

    def operation(self, op: Operation, rest: str, word: str) -> None: ...


def relations(db: Database, branch: str, pattern: str = "") -> list[list[str]]:
    """The branch's tables, virtual tables and views whose names match ``pattern`` (a LIKE
    pattern, ``*`` and ``?`` as psql's): [name, type], by name."""
    schema = _schema(db, branch)
    found = {
        name: "virtual table" if _virtual(t.sql) else "table"
        for name, (_n, t) in schema.tables.items()
    }
    for name in virtual.virtual_tables(db.main.conn):  # (an rtree, say: no table of the catalog's)
        found.setdefault(name, "virtual table")
    found.update((name, "view") for name, _sql in schema.views)
    return [[n, found[n]] for n in sorted(found, key=str.lower) if _matches(n, pattern)]


def _virtual(sql: str) -> bool:
    return sql.upper().split()[:3] == ["CREATE", "VIRTUAL", "TABLE"]


def schema_text(db: Database, branch: str, pattern: str = "") -> str:
    """The CREATE statements of the branch's tables matching ``pattern`` (each with its indexes
    and triggers) and of its views, as sqlite3's .schema prints them."""
    schema = _schema(db, branch)
    statements = []
    for name, (_n, table) in schema.tables.items():
        if _matches(name, pattern):
            statements.append(table.sql)
            statements.extend(schema.indexes_on(name))
            statements.extend(t.sql for t in schema.triggers if t.table.lower() == name.lower())
    for name, sql in schema.views:
        if _matches(name, pattern):
            statements.append(sql)
            statements.extend(t.sql for t in schema.triggers if t.table.lower() == name.lower())
    if not statements and pattern:
        names = ", ".join(row[0] for row in relations(db, branch)) or "none yet"
        raise ChronosError(
            f"no table or view '{pattern}' on {branch}; there are: {names}", NOT_FOUND
        )
    return "\n".join(f"{sql.rstrip().rstrip(';')};" for sql in statements)


def _schema(db: Database, branch: str) -> BranchSchema:
    """The branch's schema (a world's as the world has it; name@when: its world's now)."""
    return db.schema_for(db.resolve(BranchRef.parse(branch).name))


def _matches(name: str, pattern: str) -> bool:
    """Whether ``name`` matches a LIKE pattern (any case; psql's ``*`` and ``?`` too)."""
    if not pattern:
        return True
    wild = {"%": ".*", "*": ".*", "_": ".", "?": "."}
    regex = "".join(wild.get(c, re.escape(c)) for c in pattern)
    return re.fullmatch(regex, name, re.IGNORECASE | re.DOTALL) is not None


def list_relations(shell: Lister, rest: str) -> None:
    """``\\d``: the tables and views; ``\\d <table>``: describe it (the describe operation)."""
    if rest:
        shell.operation(REGISTRY.get("describe"), rest, "d")
        return
    rows = relations(shell.db, shell.branch)
    if rows:
        shell._result(COLUMNS, [list(r) for r in rows])
    else:
        shell._note(f"no tables or views on {shell.branch} yet: create one (CREATE TABLE)")


def list_tables(shell: Lister, rest: str) -> None:
    """``\\dt [pattern]`` (and sqlite3's ``.tables``): the tables."""
    rows = [r for r in relations(shell.db, shell.branch, rest) if r[1] != "view"]
    if rows:
        shell._result(COLUMNS, [list(r) for r in rows])
    elif rest:
        shell._note(f"no table on {shell.branch} matches {rest}")
    else:
        shell._note(f"no tables on {shell.branch} yet: create one (CREATE TABLE)")
