"""What an app's schema asks of every write, read from SQLite: foreign keys (with their actions
and whether they are deferred), unique rules (constraints and unique indexes, partial and on
expressions, with their declared conflict clauses), NOT NULL's conflict clauses, and triggers.

SQLite enforces all of these on main by itself. A world emulates them in its INSTEAD OF
triggers (``world.rules``, ``world.triggers``), so they are read here from whatever connection
holds the branch's schema: main, or a world's scratch copy of it (``world.schema.scratch``).
What the pragmas don't say (deferral, conflict clauses, an index's expressions and WHERE, a
trigger's parts) is read from the statement text SQLite stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from ...sqltext import comma_parts, matching_paren, quote_ident, tokens
from ..fetch import all_rows

MODES = ("ROLLBACK", "ABORT", "FAIL", "IGNORE", "REPLACE")


@dataclass(frozen=True)
class ForeignKey:
    """One foreign key: ``child``'s ``columns`` reference ``parent``'s ``parent_columns`` (None:
    the parent's primary key)."""

    child: str
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...] | None
    on_update: str  # NO ACTION, RESTRICT, SET NULL, SET DEFAULT, CASCADE
    on_delete: str
    deferred: bool


@dataclass(frozen=True)
class UniqueRule:
    """A set of values no two rows may share: a UNIQUE constraint or a unique index.

    ``terms`` are SQL expressions over the table's columns (a quoted column, or an index's
    expression), each with its collation (None: the column's own); ``where``: a partial
    index's condition; ``on_conflict``: the clause the constraint declared (None: ABORT)."""

    name: str
    terms: tuple[str, ...]
    collations: tuple[str | None, ...]
    where: str | None
    on_conflict: str | None
    message: str  # SQLite's text when it is broken
    primary: bool = False  # the primary key of a table whose key isn't its rowid

    @property
    def plain_columns(self) -> bool:
        return self.where is None and all(t.startswith('"') for t in self.terms)


@dataclass(frozen=True)
class Rules:
    """A table's rules beyond its columns and key (see TableInfo)."""

    uniques: tuple[UniqueRule, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    pk_conflict: str | None = None
    not_null_conflict: tuple[tuple[str, str], ...] = ()  # (column, clause) where declared

    def not_null_mode(self, column: str) -> str | None:
        return dict(self.not_null_conflict).get(column)


@dataclass(frozen=True)
class UserTrigger:
    """One of the app's triggers, in its parts: ``timing`` BEFORE | AFTER | INSTEAD OF,
    ``event`` INSERT | UPDATE | DELETE, ``columns`` an UPDATE OF list, ``when`` the WHEN
    condition's text, ``body`` the statements between BEGIN and END."""

    name: str
    table: str
    timing: str
    event: str
    columns: tuple[str, ...]
    when: str | None
    body: str
    sql: str


# --- reading a table's rules ------------------------------------------------------------------


def read_rules(conn: apsw.Connection, schema: str, table: str, create_sql: str) -> Rules:
    """The rules of ``schema.table`` (its CREATE TABLE text: ``create_sql``)."""
    clauses = _declared(create_sql)
    return Rules(
        uniques=_uniques(conn, schema, table, clauses),
        foreign_keys=_foreign_keys(conn, schema, table, create_sql),
        pk_conflict=clauses.get(("pk",)),
        not_null_conflict=tuple(
            (key[1], mode) for key, mode in clauses.items() if key[0] == "notnull"
        ),
    )


def _declared(create_sql: str) -> dict[tuple, str]:
    """The conflict clauses a CREATE TABLE declares: ("pk",), ("notnull", col), ("unique",
    cols...) -> the clause."""
    open_at = create_sql.find("(")
    body = create_sql[open_at + 1 : create_sql.rfind(")")]
    out: dict[tuple, str] = {}
    for start, end in comma_parts(body):
        found = tokens(body[start:end])
        words = [t.upper() if k == "word" else "" for t, k, _s, _e in found]
        table_level = words[:1] in (["CONSTRAINT"], ["PRIMARY"], ["UNIQUE"], ["CHECK"], ["FOREIGN"])
        column = None if table_level else found[0][0] if found else None
        for i, w in enumerate(words):
            if w not in ("PRIMARY", "UNIQUE", "NULL"):
                continue
            if w == "NULL" and (i == 0 or words[i - 1] != "NOT"):
                continue
            mode = _clause_after(found, words, i)
            if mode is None:
                continue
            if w == "PRIMARY":
                out[("pk",)] = mode
            elif w == "NULL" and column is not None:
                out[("notnull", column)] = mode
            elif w == "UNIQUE":
                cols = (column,) if column is not None else _paren_names(found, i + 1)
                out[("unique", *(c.lower() for c in cols))] = mode
    return out


_CONSTRAINT_WORDS = {
    "CONSTRAINT",
    "PRIMARY",
    "UNIQUE",
    "NOT",
    "NULL",
    "CHECK",
    "DEFAULT",
    "REFERENCES",
    "COLLATE",
    "GENERATED",
    "AS",
}


def _clause_after(found: list, words: list[str], at: int) -> str | None:
    """The ON CONFLICT mode that follows the constraint word at ``at``, before the next
    constraint of the column (or table constraint) starts."""
    depth = 0
    for j in range(at + 1, len(found)):
        text, kind = found[j][0], found[j][1]
        if kind == "punct":
            depth += (text == "(") - (text == ")")
            continue
        if depth:
            continue
        if words[j] == "ON" and words[j + 1 : j + 2] == ["CONFLICT"]:
            mode = words[j + 2] if j + 2 < len(words) else ""
            return mode if mode in MODES else None
        if words[j] in _CONSTRAINT_WORDS:
            return None
    return None


def _paren_names(found: list, at: int) -> list[str]:
    """The names in the parenthesized list starting at token ``at``: (a, b COLLATE x, ...)."""
    names: list[str] = []
    depth, expect = 0, True
    for text, kind, _s, _e in found[at:]:
        if kind == "punct":
            if text == "(":
                depth += 1
                expect = depth == 1
            elif text == ")":
                depth -= 1
                if depth == 0:
                    break
            elif text == "," and depth == 1:
                expect = True
            continue
        if depth == 1 and expect:
            names.append(text)
            expect = False
    return names


def _uniques(
    conn: apsw.Connection, schema: str, table: str, clauses: dict[tuple, str]
) -> tuple[UniqueRule, ...]:
    q = quote_ident(table)
    out = []
    for _seq, iname, unique, origin, partial in all_rows(
        conn.execute(f"pragma {schema}.index_list({q})")
    ):
        if not unique:
            continue
        info = all_rows(conn.execute(f"pragma {schema}.index_xinfo({quote_ident(iname)})"))
        keyed = [r for r in info if r[5]]  # (the key columns; the rest is the row's key)
        expressions, where = _index_parts(conn, schema, iname) if origin == "c" else ([], None)
        terms, collations, named = [], [], True
        for _seqno, cid, cname, _desc, coll, _key in keyed:
            if cid == -2:  # an expression
                terms.append(expressions.pop(0) if expressions else "NULL")
                named = False
            else:
                terms.append(quote_ident(cname))
            collations.append(None if coll.upper() == "BINARY" else coll)
        cols = [r[2] for r in keyed]
        message = (
            "UNIQUE constraint failed: " + ", ".join(f"{table}.{c}" for c in cols)
            if named
            else f"UNIQUE constraint failed: index '{iname}'"
        )
        declared = (
            clauses.get(("pk",))
            if origin == "pk"
            else clauses.get(("unique", *(str(c).lower() for c in cols)))
            if origin == "u"
            else None
        )
        out.append(
            UniqueRule(
                iname,
                tuple(terms),
                tuple(collations),
                where if partial else None,
                declared,
                message,
                origin == "pk",
            )
        )
    return tuple(out)  # (SQLite checks them in this order: index_list's)


def _index_parts(conn: apsw.Connection, schema: str, name: str) -> tuple[list[str], str | None]:
    """A CREATE INDEX's expression terms (in order) and its WHERE condition."""
    row = conn.execute(
        f"select sql from {schema}.sqlite_schema where type = 'index' and name = ?", (name,)
    ).fetchone()
    sql = row[0] if row else ""
    open_at = sql.find("(")
    close = matching_paren(sql, open_at) if open_at >= 0 else None
    if close is None:
        return [], None
    inside = sql[open_at + 1 : close]
    exprs = []
    for start, end in comma_parts(inside):
        part = inside[start:end].strip()
        found = tokens(part)
        if len(found) >= 1 and found[0][1] in ("word", "name") and _just_a_name(found):
            continue  # a column
        exprs.append(_without_order(part))
    rest = sql[close + 1 :]
    words = [(t.upper(), s) for t, k, s, _e in tokens(rest) if k == "word"]
    where = next((rest[s + 5 :].strip() for w, s in words if w == "WHERE"), None)
    return exprs, where


def _just_a_name(found: list) -> bool:
    """A term that is a column name, maybe with COLLATE x and ASC/DESC."""
    words = [t.upper() for t, k, _s, _e in found[1:] if k == "word"]
    rest = [t for t in words if t not in ("ASC", "DESC", "COLLATE")]
    puncts = [t for t, k, _s, _e in found[1:] if k == "punct"]
    return not puncts and len(rest) <= (1 if "COLLATE" in words else 0)


def _without_order(term: str) -> str:
    """An index term without its trailing ASC/DESC."""
    found = tokens(term)
    if found and found[-1][1] == "word" and found[-1][0].upper() in ("ASC", "DESC"):
        return term[: found[-1][2]].rstrip()
    return term


def _foreign_keys(
    conn: apsw.Connection, schema: str, table: str, create_sql: str
) -> tuple[ForeignKey, ...]:
    rows = all_rows(conn.execute(f"pragma {schema}.foreign_key_list({quote_ident(table)})"))
    by_id: dict[int, list] = {}
    for fid, _seq, parent, frm, to, on_update, on_delete, _match in rows:
        by_id.setdefault(fid, []).append((parent, frm, to, on_update, on_delete))
    deferral = _deferrals(create_sql)
    out = []
    for fid in sorted(by_id, reverse=True):  # (the pragma numbers them last declared first)
        cols = by_id[fid]
        parent, _f, _t, on_update, on_delete = cols[0]
        columns = tuple(c[1] for c in cols)
        to = tuple(c[2] for c in cols)
        key = tuple(c.lower() for c in columns)
        deferred = deferral[key].pop(0) if deferral.get(key) else False
        out.append(
            ForeignKey(
                table,
                columns,
                parent,
                None if all(t is None for t in to) else to,
                on_update,
                on_delete,
                deferred,
            )
        )
    return tuple(out)


def _deferrals(create_sql: str) -> dict[tuple, list[bool]]:
    """For each foreign key in the text (by its child columns, lower case, in order): whether it
    is DEFERRABLE INITIALLY DEFERRED."""
    open_at = create_sql.find("(")
    body = create_sql[open_at + 1 : create_sql.rfind(")")]
    out: dict[tuple, list[bool]] = {}
    for start, end in comma_parts(body):
        found = tokens(body[start:end])
        words = [t.upper() if k == "word" else "" for t, k, _s, _e in found]
        column = found[0][0] if found and words[0] not in ("CONSTRAINT", "FOREIGN") else None
        for i, w in enumerate(words):
            if w != "REFERENCES":
                continue
            if column is not None and "FOREIGN" not in words[:i]:
                cols: list[str] = [column]
            else:
                at = words.index("FOREIGN")
                cols = _paren_names(found, at + 2)
            following = words[i + 1 :]
            stop = next(
                (j for j, x in enumerate(following) if x in ("REFERENCES", "CONSTRAINT")),
                len(following),
            )
            clause = following[:stop]
            deferred = any(
                clause[j : j + 3] == ["DEFERRABLE", "INITIALLY", "DEFERRED"]
                and (j == 0 or clause[j - 1] != "NOT")
                for j in range(len(clause))
            )
            out.setdefault(tuple(c.lower() for c in cols), []).append(deferred)
    return out


# --- triggers --------------------------------------------------------------------------------


def read_triggers(conn: apsw.Connection, schema: str = "main") -> list[UserTrigger]:
    """The app's triggers in ``schema`` (chronos' own left out), oldest first."""
    rows = all_rows(
        conn.execute(
            f"select name, tbl_name, sql from {schema}.sqlite_schema where type = 'trigger' "
            "and name not like '\\_chronos\\_%' escape '\\' order by rowid"
        )
    )
    return [parse_trigger(name, table, sql) for name, table, sql in rows]


def parse_trigger(name: str, table: str, sql: str) -> UserTrigger:
    """A CREATE TRIGGER statement in its parts (SQLite has checked it: it is well formed)."""
    found = tokens(sql)
    words = [t.upper() if k == "word" else "" for t, k, _s, _e in found]
    on = words.index("ON")
    head = words[:on]
    if "INSTEAD" in head:
        timing = "INSTEAD OF"
    elif "AFTER" in head:
        timing = "AFTER"
    else:
        timing = "BEFORE"
    event = next(w for w in head if w in ("INSERT", "UPDATE", "DELETE"))
    columns: tuple[str, ...] = ()
    if event == "UPDATE" and "OF" in head[head.index("UPDATE") :]:
        at = head.index("UPDATE") + 2
        columns = tuple(found[j][0] for j in range(at, on) if found[j][1] in ("word", "name"))
    depth, begin = 0, None
    for j in range(on + 1, len(found)):
        text, kind = found[j][0], found[j][1]
        if kind == "punct":
            depth += (text == "(") - (text == ")")
        elif depth == 0 and words[j] == "BEGIN":
            begin = j
            break
    assert begin is not None  # (SQLite stored it: it has a body)
    when_at = next((j for j in range(on + 1, begin) if words[j] == "WHEN"), None)
    when = sql[found[when_at][3] : found[begin][2]].strip() if when_at is not None else None
    end = max(j for j, w in enumerate(words) if w == "END")
    body = sql[found[begin][3] : found[end][2]].strip()
    return UserTrigger(name, table, timing, event, columns, when, body, sql)
