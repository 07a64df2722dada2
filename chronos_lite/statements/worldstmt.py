"""INSERT statements that SQLite can't run on a view as written, made to work on a world.

* ``INSERT ... RETURNING``: SQLite evaluates RETURNING on the values handed to the view's INSTEAD
  OF trigger, before the trigger fills in allocated keys and defaults. The insert runs without
  the clause while the trigger logs the keys it wrote; the clause is then evaluated on those rows.
* ``INSERT ... ON CONFLICT ... DO NOTHING | DO UPDATE`` (upsert): SQLite refuses to upsert a
  view. For the statement, the table's INSERT trigger is swapped for one that updates (or skips)
  a row the conflict target already has, then put back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import sqltext
from ..errors import ChronosError
from ..sqltext import _skip_quoted, comma_parts, literal, matching_paren, name_tokens, quote_ident
from ..storage.db import Database, Session
from ..storage.schema.catalog import TableInfo
from ..storage.world import placement
from ..storage.world import schema as worldschema
from ..storage.world import sql as worldsql
from ..storage.world.sql import CTX, MODES, Upsert, set_insert_triggers, world_table
from ..storage.world.views import key_view


@dataclass
class Inserted:
    columns: list[str]
    rows: list[tuple]
    changed: int


def adapt_insert(
    db: Database, session: Session, stmt: str, binds: dict, execute
) -> Inserted | None:
    """Run an INSERT with RETURNING or ON CONFLICT on a world; None if it has neither."""
    assert session.world is not None  # (sqlrun calls this for a world's session only)
    split = sqltext.split_returning(stmt)
    body, returning = split if split else (stmt, None)
    if returning is None and "CONFLICT" not in sqltext.all_words(body):
        return None  # (neither clause: the common INSERT, no table looked up)
    if _native(db, session, body):
        return None  # (a table: SQLite runs both clauses as written)
    clause_at = _on_conflict_at(body)
    if clause_at is None and returning is None:
        return None
    head = body[:clause_at].rstrip() if clause_at is not None else body
    name, alias = insert_target(head)
    n, t = db.table(name, session.world)
    conn = session.conn
    upsert = _parse_upsert(t, body[clause_at:], alias, binds) if clause_at is not None else None
    if upsert is not None and not upsert.target and upsert.assignments is None:
        conn.execute(f"UPDATE {CTX} SET mode = ?", (MODES["ignore"],))  # plain DO NOTHING
        upsert = None
    assert session.schema is not None  # (a world's session is placed on its schema)
    if n not in session.materialized:  # (its INSERT trigger is swapped: the world's own)
        placement.materialize(session, n)
    wt = world_table(session.schema, session.world.id, n)
    conn.execute("DELETE FROM temp._chronos_inserted")
    set_insert_triggers(conn, wt, upsert, returning is not None)
    try:
        execute(conn, head, binds)
    finally:
        set_insert_triggers(conn, wt, None, False)
    changed = worldsql.rows_written(session)
    if returning is None:
        return Inserted([], [], changed)
    rows, desc = execute(conn, _returning_query(t, n, returning, alias), binds)
    return Inserted([d[0] for d in desc], rows, changed)


ROWID_NAMES = {"rowid", "oid", "_rowid_"}


def _native(db: Database, session: Session, body: str) -> bool:
    """Whether the INSERT writes a table the world copies natively (``world.native``): SQLite
    runs it as written (made the world's own first)."""
    assert session.world is not None and session.schema is not None  # (a placed world)
    found = worldschema.find_table(session.schema.tables, _target(body)[0])
    if found is None:
        return False
    n = found[1]
    if n not in session.materialized:
        placement.materialize(session, n)
    return n in session.native


def gives_rowid(db: Database, session: Session, stmt: str) -> bool:
    """Whether an INSERT on a world gives the rowid in its column list: a view's INSTEAD OF
    trigger never sees it, so such a statement runs with ``world.rowid``'s virtual tables (its
    table made the world's own first). An ON CONFLICT or RETURNING clause with it is refused."""
    assert session.world is not None and session.schema is not None
    lowered = stmt.lower()  # (rowid, oid, _rowid_: named nowhere, as in the most)
    if "rowid" not in lowered and "oid" not in lowered:
        return False
    split = sqltext.split_returning(stmt)
    body = split[0] if split else stmt
    name, _alias, end = _target(body)
    rest = body[end:].lstrip()
    close = matching_paren(rest, 0) if rest.startswith("(") else None
    if close is None:
        return False
    found = worldschema.find_table(session.schema.tables, name)
    if found is None:  # (a view of the app's: its own INSTEAD OF triggers see what they see)
        return False
    _name, n, t = found
    real = {c.lower() for c in t.column_names}
    named = {w.lower() for w, _s, _e in name_tokens(rest[1:close])}
    if not (named & ROWID_NAMES) - real or t.without_rowid or _native(db, session, body):
        return False
    if split or _on_conflict_at(body) is not None:
        raise ChronosError(
            f"on a world, an INSERT that gives the rowid takes no ON CONFLICT or RETURNING "
            f"clause; give the key as its column ({', '.join(t.pk) or 'rowid'}) instead, or "
            f"split the statement",
        )
    if n not in session.materialized:
        placement.materialize(session, n)
    return True


def _returning_query(t: TableInfo, n: int, exprs: str, alias: str | None) -> str:
    source = f"temp.{key_view(n)}" if t.key_kind == "rowid" else f"temp.{quote_ident(t.name)}"
    cols = ", ".join(f"_s.{quote_ident(c)}" for c in t.column_names)
    keys = ", ".join(f"_s.{quote_ident(c)}" for c in t.key_cols)
    return (
        f"SELECT {exprs} FROM (SELECT {cols} FROM {source} AS _s "
        f"JOIN temp._chronos_inserted AS _l ON json_array({keys}) = _l.k ORDER BY _l.ord) "
        f"AS {quote_ident(alias or t.name)}"
    )


def insert_target(head: str) -> tuple[str, str | None]:
    """The table an INSERT writes, and its alias (INSERT INTO t AS x ...)."""
    name, alias, _end = _target(head)
    return name, alias


def _target(head: str) -> tuple[str, str | None, int]:
    """The table an INSERT writes, its alias, and where they end in ``head``."""
    tokens = name_tokens(head)
    upper = [w.upper() for w, _, _ in tokens]
    at = upper.index("INTO") + 1
    if upper[at] in ("MAIN", "TEMP") and head[tokens[at][2] : tokens[at][2] + 1] == ".":
        at += 1
    if len(upper) > at + 2 and upper[at + 1] == "AS":
        return tokens[at][0], tokens[at + 2][0], tokens[at + 2][2]
    return tokens[at][0], None, tokens[at][2]


def _on_conflict_at(body: str) -> int | None:
    words = sqltext.top_level_words(body)
    starts = [
        words[i][1]
        for i in range(len(words) - 1)
        if words[i][0] == "ON" and words[i + 1][0] == "CONFLICT"
    ]
    if len(starts) > 1:
        raise ChronosError(
            "on a world an INSERT takes one ON CONFLICT clause; split it into several statements"
        )
    return starts[0] if starts else None


def _parse_upsert(t: TableInfo, clause: str, alias: str | None, binds: dict) -> Upsert:
    expected = (
        "expected ON CONFLICT [(columns)] DO NOTHING | DO UPDATE SET col = expr, ... "
        "[WHERE condition]"
    )
    conflict_end = sqltext.top_level_words(clause)[1][2]  # the clause starts ON CONFLICT
    rest = clause[conflict_end:].strip()
    target: tuple[str, ...] = ()
    if rest.startswith("("):
        end = matching_paren(rest, 0)
        if end is None:
            raise ChronosError("ON CONFLICT: unbalanced parentheses in the conflict target")
        inside = rest[1:end]
        parts = [inside[a:b] for a, b in comma_parts(inside)]
        target = tuple(name_tokens(p)[0][0] for p in parts if name_tokens(p))
        rest = rest[end + 1 :].strip()
    words = sqltext.top_level_words(rest)
    upper = [w for w, _, _ in words]
    if "DO" not in upper:
        raise ChronosError(expected)
    do = upper.index("DO")
    action = upper[do + 1 : do + 3]
    if target:
        target = _check_target(t, target)
    if action[:1] == ["NOTHING"]:
        return Upsert(target, None, None)
    if action != ["UPDATE", "SET"]:
        raise ChronosError(expected)
    if not target:
        if t.key_kind == "rowid":
            raise ChronosError("DO UPDATE needs a conflict target: ON CONFLICT (column, ...)")
        target = t.pk
    set_start = words[do + 2][2]
    wheres = [s for w, s, _ in words[do + 3 :] if w == "WHERE"]
    assignments = rest[set_start : wheres[0] if wheres else len(rest)].strip()
    condition = rest[wheres[0] + len("WHERE") :].strip() if wheres else None
    renames = {"excluded": "NEW", (alias or t.name).lower(): quote_ident(t.name)}
    return Upsert(
        target,
        _adapt(assignments, binds, renames),
        _adapt(condition, binds, renames) if condition else None,
    )


def _check_target(t: TableInfo, target: tuple[str, ...]) -> tuple[str, ...]:
    by_lower = {c.lower(): c for c in t.column_names}
    cols = tuple(by_lower.get(c.lower(), c) for c in target)
    keys = [t.pk] if t.key_kind != "rowid" else []
    if not any(set(cols) == set(k) for k in keys + list(t.uniques)):
        raise ChronosError("ON CONFLICT clause does not match any PRIMARY KEY or UNIQUE constraint")
    return cols


_PARAM = re.compile(r"\$(\d+)")


def _adapt(text: str, binds: dict, renames: dict[str, str]) -> str:
    """Clause text for a trigger body: ``excluded.`` becomes ``NEW.``, the table's alias its
    name, and $n parameters literals (a trigger body can't hold parameters)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"`[" or text.startswith("--", i) or text.startswith("/*", i):
            j = _skip_quoted(text, i)
            comment = ch in "-/"  # (a comment goes: in a trigger's body it could hide the rest)
            out.append(" " if comment else text[i:j])
            i = j
            continue
        param = _PARAM.match(text, i)
        if param:
            if param.group(1) not in binds:
                raise KeyError(param.group(1))
            out.append(literal(binds[param.group(1)]))
            i = param.end()
            continue
        word = re.match(r"[A-Za-z_][A-Za-z0-9_$]*", text[i:])
        if word:
            end = i + word.end()
            qualifier = renames.get(word.group(0).lower())
            out.append(qualifier if qualifier and text[end : end + 1] == "." else word.group(0))
            i = end
            continue
        out.append(ch)
        i += 1
    return "".join(out)
