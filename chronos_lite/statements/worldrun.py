"""What a statement on a world needs around it: its context for the world's triggers (the
conflict clause it names, the columns an INSERT names, whether it writes an app's view, the
defer_foreign_keys setting), and its foreign keys checked when it ends (the immediate ones) or
when its transaction commits (the deferred ones), as SQLite checks them on main."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import apsw

from .. import errors, sqltext
from ..errors import ChronosError
from ..storage.fetch import one_row
from ..storage.world import schema as worldschema
from ..storage.world import sql as worldsql
from ..storage.world import state as worldstate
from ..storage.world.placement import Session

T = TypeVar("T")

# ``SELECT count(*) FROM <table>`` and nothing else (one name, unqualified, no clause after it)
_COUNT_ALL = re.compile(
    r'^\s*select\s+(count\s*\(\s*\*\s*\))\s+from\s+("(?:[^"]|"")+"|[A-Za-z_][\w$]*)\s*;?\s*$',
    re.IGNORECASE,
)


def counted(session: Session, stmt: str) -> str:
    """A whole table's ``count(*)`` on a world, as SQLite counts main's: a view over main's rows
    and the world's can't use the b-tree count, so a materialized table's is computed apart
    (``world.state.count_select``). Any other statement comes back as it is."""
    found = _COUNT_ALL.match(stmt)
    if found is None or session.schema is None or session.past:
        return stmt
    name = found.group(2)
    if name.startswith('"'):
        name = name[1:-1].replace('""', '"')
    table = worldschema.find_table(session.schema.tables, name)
    if table is None or table[1] not in session.materialized or table[2].fts_content:
        return stmt
    if table[1] in session.native:  # (a table: SQLite counts it by its b-tree as written)
        return stmt
    n = table[1]
    return worldstate.count_select(session.conn, table[2], n, found.group(1), n in session.whole)


def unindexed(session: Session, stmt: str) -> str:
    """A read that names a whole copy with ``NOT INDEXED`` or ``INDEXED BY <index>`` (``t NOT
    INDEXED``, ``t AS a INDEXED BY i``): SQLite takes neither on a view, so the name is swapped
    for the copy's view that reads it so (in key order; by its mirror of that index). An index
    the table doesn't have is left to SQLite's own error."""
    schema = session.schema
    if "INDEXED" not in sqltext.all_words(stmt) or schema is None or not session.whole:
        return stmt
    found = sqltext.tokens(stmt)
    out, at = [], 0
    for i in range(2, len(found) - 1):
        clause = _clause(found, i)
        if clause is None:
            continue
        named = _named_before(found, i)
        if named is None:
            continue
        (name, _kind, start, _end), alias = named
        table = worldschema.find_table(schema.tables, name)
        if table is None or table[1] not in session.whole or table[1] in session.native:
            continue
        n, t = table[1], table[2]
        if clause[0] is None:
            view = worldstate.unindexed_view(n)
        else:
            number = worldstate.index_number(schema.indexes_on(t.name), clause[0])
            if number is None:
                continue
            view = worldstate.indexed_view(n, number)
        out += [stmt[at:start], f"temp.{view} AS {alias or sqltext.quote_ident(name)}"]
        at = clause[1]
    return "".join(out) + stmt[at:]


def _clause(found: list, i: int) -> tuple[str | None, int] | None:
    """``NOT INDEXED`` (None) or ``INDEXED BY <index>`` (its name) starting at token ``i``, and
    where the clause ends; None if no such clause starts there."""
    word = found[i][0].upper()
    if word == "NOT" and found[i + 1][0].upper() == "INDEXED":
        return None, found[i + 1][3]
    if word == "INDEXED" and found[i - 1][0].upper() != "NOT" and i + 2 < len(found):
        if found[i + 1][0].upper() == "BY" and found[i + 2][1] in ("word", "name"):
            return found[i + 2][0], found[i + 2][3]
    return None


def _named_before(found: list, i: int) -> tuple[tuple, str | None] | None:
    """The table (its token) and the alias (as written) before the clause at token ``i``: None
    for a qualified name (``main.t`` is main's)."""
    last, before = found[i - 1], found[i - 2]
    if last[1] not in ("word", "name"):
        return None
    if before[0].upper() == "AS" and i >= 3:
        table, alias = found[i - 3], last
    elif before[1] in ("word", "name") and before[0].upper() not in _CLAUSES:
        table, alias = before, last
    else:
        table, alias = last, None
    at = found.index(table)
    if at > 0 and found[at - 1][0] == ".":
        return None
    return table, (None if alias is None else sqltext.quote_ident(alias[0]))


_CLAUSES = {"FROM", "JOIN", "UPDATE", "INTO"}


def ended(conn: apsw.Connection, commit: Callable[[apsw.Connection], Any]) -> None:
    """The call's own transaction committed; a deferred foreign key it broke (SQLite checks
    them at COMMIT) rolls it all back, with the reason."""
    try:
        commit(conn)
    except (apsw.ConstraintError, ChronosError) as exc:
        conn.execute("ROLLBACK")
        failed = exc if isinstance(exc, ChronosError) else errors.from_sqlite(exc)
        raise ChronosError(
            f"{failed.message} (a deferred foreign key, checked as the call's transaction "
            "ended): nothing was changed",
            failed.code,
        ) from None


def deferred_keys_kept(conn: apsw.Connection) -> None:
    """A world's transaction commits only with every deferred foreign key kept."""
    if worldsql.broken_keys(conn, transaction=True):
        raise ChronosError(worldsql.FK_FAILED, errors.FOREIGN_KEY_VIOLATION)


def on_view(session: Session, stmt: str) -> bool:
    """Whether a statement writes one of the app's views (through its INSTEAD OF triggers)."""
    target = sqltext.write_target(stmt)
    views = session.schema.views if session.schema is not None else ()
    return target is not None and any(name.lower() == target.lower() for name, _sql in views)


def keyed(session: Session) -> bool:
    """Whether the branch has foreign keys (else no write can break one)."""
    schema = session.schema
    return schema is not None and any(t.rules.foreign_keys for _n, t in schema.tables.values())


def deferring(session: Session) -> bool:
    """PRAGMA defer_foreign_keys, where the branch has foreign keys to defer."""
    if not keyed(session):
        return False
    return bool(one_row(session.conn.execute("pragma defer_foreign_keys"))[0])


def name_columns(session: Session, stmt: str) -> None:
    """The columns an INSERT names (the others take their defaults; a NULL given stays)."""
    target = sqltext.insert_columns(stmt)
    if target is None or session.schema is None:
        return
    found = worldschema.find_table(session.schema.tables, target[0])
    if found is None:
        return
    _name, n, t = found
    if n in session.native:  # (SQLite gives a table's defaults itself)
        return
    named = t.column_names if target[1] is None else target[1]
    worldsql.given_columns(session.conn, n, worldsql.named_mask(t.column_names, named))


def keys_kept(session: Session, run: Callable[[], T]) -> T:
    """A world's write statement, then its foreign keys checked (SQLite checks a statement's
    immediate keys when it ends, and, for a statement that is its own transaction, the
    deferred ones too): broken, the statement is undone and fails as on main. A branch
    without foreign keys has none to check."""
    if not keyed(session):
        return run()
    conn = session.conn
    outermost = conn.get_autocommit()
    conn.execute("SAVEPOINT _chronos_statement")
    try:
        try:
            result = run()
        except apsw.ConstraintError:
            # OR FAIL keeps what the statement did before it failed, but SQLite checks its
            # immediate keys then too: broken ones undo it all and say so instead
            if not conn.get_autocommit() and worldsql.broken_keys(conn):
                conn.execute("ROLLBACK TO _chronos_statement")
                raise ChronosError(worldsql.FK_FAILED, errors.FOREIGN_KEY_VIOLATION) from None
            raise
        if worldsql.broken_keys(conn) or (outermost and worldsql.broken_keys(conn, True)):
            conn.execute("ROLLBACK TO _chronos_statement")
            raise ChronosError(worldsql.FK_FAILED, errors.FOREIGN_KEY_VIOLATION)
    finally:
        if not conn.get_autocommit():  # (SQLite undid what it undoes; a RAISE(ROLLBACK) all)
            conn.execute("RELEASE _chronos_statement")
    return result
