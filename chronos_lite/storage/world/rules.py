"""SQLite's rules on a row a world writes, as steps of its INSTEAD OF triggers.

* NOT NULL, CHECK, PRIMARY KEY and UNIQUE (constraints and unique indexes, partial and on
  expressions), each with the conflict mode in force: the statement's (``INSERT OR ...``),
  else the one the constraint declared, else ABORT; with SQLite's own messages.
* FOREIGN KEY as SQLite does it (fkey.c): a counter per statement (deferred ones: per
  transaction) that rows without a parent move up and rows that mend one move down, checked
  when the statement (or transaction) ends; and the actions (CASCADE, SET NULL, SET DEFAULT,
  RESTRICT) as statements on the child's rows in the world, which fire the child's own
  triggers as they do on main.

A step reads the statement's context from ``CTX`` (``world.context``). ``go`` is the condition
a step runs under: ``1``, or, in a trigger that must run to its end (a table with triggers of its
own), that the row isn't being skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...sqltext import quote_ident, quote_literal, tokens
from ..schema.catalog import TableInfo, check_constraints
from ..schema.constraints import ForeignKey, UniqueRule
from .context import CTX, DEPTH_DOWN, DEPTH_UP, SKIPPING

ROLLBACK, ABORT, FAIL, IGNORE, REPLACE = 1, 2, 3, 4, 5
CODES = {"ROLLBACK": ROLLBACK, "ABORT": ABORT, "FAIL": FAIL, "IGNORE": IGNORE, "REPLACE": REPLACE}
FK_FAILED = "FOREIGN KEY constraint failed"


def mode(declared: str | None) -> str:
    """The conflict mode in force for a constraint that declared ``declared``."""
    return f"coalesce(nullif((SELECT mode FROM {CTX}), 0), {CODES.get(declared or '', ABORT)})"


def _raise(mode_expr: str, message: str) -> str:
    msg = quote_literal(message)
    return (
        f"CASE {mode_expr} WHEN {ROLLBACK} THEN RAISE(ROLLBACK, {msg}) WHEN {FAIL} THEN "
        f"RAISE(FAIL, {msg}) WHEN {IGNORE} THEN RAISE(IGNORE) ELSE RAISE(ABORT, {msg}) END"
    )


@dataclass(frozen=True)
class Steps:
    """How a trigger's steps skip a row: by RAISE(IGNORE) (``skipping`` False: the trigger
    holds nothing to undo), or by a flag the rest of its steps check."""

    skipping: bool = False

    @property
    def go(self) -> str:
        return f"NOT {SKIPPING}" if self.skipping else "1"

    def refuse(self, violated: str, mode_expr: str, message: str, *, lets: tuple = ()) -> list[str]:
        """Fail (or skip the row) where ``violated``, by the mode in force; modes in ``lets``
        (REPLACE, say) are handled by another step."""
        spared = f" AND {mode_expr} NOT IN ({', '.join(map(str, lets))})" if lets else ""
        if not self.skipping:
            return [f"SELECT {_raise(mode_expr, message)} WHERE {violated}{spared}"]
        return [
            f"UPDATE {CTX} SET skip = 1 WHERE {self.go} AND {mode_expr} = {IGNORE} AND {violated}",
            f"SELECT {_raise(mode_expr, message)} WHERE {self.go} AND {violated}{spared}",
        ]


# --- NOT NULL and CHECK ----------------------------------------------------------------------


def not_null(
    t: TableInfo,
    values: dict[str, str],
    steps: Steps,
    skip: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """NOT NULL for each column of the row (a NULL in a NOT NULL column with a default and
    REPLACE in force was given the default by ``values``)."""
    out = []
    for c in t.writable:
        if c.name in skip:
            continue
        null_key = c.name in t.pk and t.key_kind in ("single", "composite")
        if not (c.notnull or null_key):
            continue
        message = f"NOT NULL constraint failed: {t.name}.{c.name}"
        if null_key and not c.notnull:  # SQLite's legacy NULL keys stay in main
            message += " (a world can't hold a row whose primary key is NULL; change it on main)"
        m = mode(t.rules.not_null_mode(c.name))
        out += steps.refuse(f"{values[c.name]} IS NULL", m, message)
    return out


def replace_null(t: TableInfo, column: str, value: str) -> str:
    """A NOT NULL column's value under REPLACE: its default stands in for a NULL."""
    c = next(c for c in t.columns if c.name == column)
    if not c.notnull or c.default is None:
        return value
    return (
        f"CASE WHEN {value} IS NULL AND {mode(t.rules.not_null_mode(column))} = {REPLACE} "
        f"THEN {c.default} ELSE {value} END"
    )


def row_table(n: int) -> str:
    """A one-row TEMP table with the table's columns: a row put there reads with the columns'
    affinity applied, as SQLite applies it before it checks a row ('5' is 5 in an INTEGER
    column). Nothing nests between putting a row there and reading it back."""
    return f"_chronos_e{n}_r"


def row_table_ddl(t: TableInfo, n: int) -> list[str]:
    cols = ", ".join(f"{quote_ident(c.name)} {c.decltype}".rstrip() for c in t.columns)
    return [
        f"CREATE TEMP TABLE {row_table(n)}(slot INTEGER PRIMARY KEY, {cols})",
        f"INSERT INTO {row_table(n)}(slot) VALUES (1)",
    ]


def checks(t: TableInfo, n: int, values: dict[str, str], steps: Steps) -> list[str]:
    """The table's CHECK constraints on the row, with SQLite's message: a check fails when its
    expression is false (NULL passes); REPLACE can't mend one (it fails as ABORT). They read
    the row from ``row_table``, as stored."""
    found = check_constraints(t.sql)
    if not found:
        return []
    sets = ", ".join(f"{quote_ident(c)} = {v}" for c, v in values.items())
    out = [f"UPDATE temp.{row_table(n)} SET {sets} WHERE {steps.go}"]
    stored = {c: f"_r.{quote_ident(c)}" for c in values}
    for name, expr in found:
        test = on_row(expr, stored)
        message = f"CHECK constraint failed: {name or dequoted(expr.strip())}"
        m = f"(CASE {mode(None)} WHEN {REPLACE} THEN {ABORT} ELSE {mode(None)} END)"
        failed = f"EXISTS (SELECT 1 FROM temp.{row_table(n)} AS _r WHERE NOT coalesce(({test}), 1))"
        out += steps.refuse(failed, m, message)
    return out


def dequoted(text: str) -> str:
    """A check's name as SQLite makes it from its text: dequoted as a name would be (text
    starting with a quote ends at its closing quote: ``"a b" <> 7`` is named ``a b``)."""
    if not text or text[0] not in "'\"`[":
        return text
    close, out, i = ("]" if text[0] == "[" else text[0]), [], 1
    while i < len(text):
        if text[i] == close:
            if close == "]" or text[i + 1 : i + 2] != close:
                break
            i += 1  # (a doubled quote is one)
        out.append(text[i])
        i += 1
    return "".join(out)


def on_row(expr: str, values: dict[str, str]) -> str:
    """An expression over the table's columns with each column read from ``values``."""
    by_name = {name.lower(): value for name, value in values.items()}
    found = tokens(expr)
    for i in range(len(found) - 1, -1, -1):
        text, kind, start, end = found[i]
        if kind not in ("word", "name") or text.lower() not in by_name:
            continue
        after = found[i + 1][0] if i + 1 < len(found) else ""
        before = found[i - 1][0] if i else ""
        if after in ("(", ".") or before == ".":  # a function of that name, a qualified name
            continue
        expr = expr[:start] + f"({by_name[text.lower()]})" + expr[end:]
    return expr


# --- UNIQUE and PRIMARY KEY ------------------------------------------------------------------


def unique_match(rule: UniqueRule, values: dict[str, str]) -> str:
    """Rows of the branch's view that hold the row's values in a unique rule's terms."""
    terms = []
    for term, coll in zip(rule.terms, rule.collations):
        collate = f" COLLATE {coll}" if coll else ""
        terms.append(f"{term}{collate} = {on_row(term, values)}")
    where = f" AND ({rule.where})" if rule.where else ""
    return " AND ".join(terms) + where


def unique_applies(rule: UniqueRule, values: dict[str, str]) -> str:
    """Whether the row itself is in a partial index (always, for a full one)."""
    return f"coalesce(({on_row(rule.where, values)}), 0)" if rule.where else "1"


# --- FOREIGN KEY -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """A foreign key of the branch, resolved: the child's columns and the parent's key
    columns, and the branch's views of both tables."""

    fk: ForeignKey
    child_view: str
    parent_view: str
    parent_key: tuple[str, ...]
    mismatch: str | None = None  # SQLite's "foreign key mismatch" error, when the key isn't one
    defaults: tuple[tuple[str, str], ...] = ()  # the child's column defaults (SET DEFAULT)

    def _move(self, by: str, where: str) -> str:
        """Move the counter this key counts on: deferred keys (and every key, under
        defer_foreign_keys) count for the transaction, the others for the statement."""
        if self.fk.deferred:
            return f"UPDATE {CTX} SET dfk = dfk + {by} WHERE {where}"
        return (
            f"UPDATE {CTX} SET fk = fk + CASE WHEN defer THEN 0 ELSE {by} END, "
            f"dfk = dfk + CASE WHEN defer THEN {by} ELSE 0 END WHERE {where}"
        )

    def _nonzero(self) -> str:
        return "dfk != 0" if self.fk.deferred else "(CASE WHEN defer THEN dfk ELSE fk END) != 0"

    def _parent_has(self, child_values: list[str]) -> str:
        cond = " AND ".join(
            f"{quote_ident(p)} = {v}" for p, v in zip(self.parent_key, child_values)
        )
        return f"EXISTS (SELECT 1 FROM {self.parent_view} WHERE {cond})"

    def _children_of(self, parent_values: list[str]) -> str:
        cond = " AND ".join(
            f"{v} = {quote_ident(c)}" for c, v in zip(self.fk.columns, parent_values)
        )
        return f"(SELECT count(*) FROM {self.child_view} WHERE {cond})"

    # the child's side (I.1 and D.1 in fkey.c)
    def child_added(self, values: list[str], go: str) -> list[str]:
        present = " AND ".join(f"{v} IS NOT NULL" for v in values)
        return [
            self._checked(),
            self._move("1", f"{go} AND {present} AND NOT {self._parent_has(values)}"),
        ]

    def child_removed(self, values: list[str], go: str) -> list[str]:
        present = " AND ".join(f"{v} IS NOT NULL" for v in values)
        where = f"{go} AND {self._nonzero()} AND {present} AND NOT {self._parent_has(values)}"
        return [self._checked(), self._move("-1", where)]

    # the parent's side (I.2 and D.2)
    def parent_added(self, values: list[str], go: str) -> list[str]:
        where = f"{go} AND {self._nonzero()}"
        return [self._checked(), self._move(f"-{self._children_of(values)}", where)]

    def parent_removed(self, values: list[str], go: str) -> list[str]:
        return [self._checked(), self._move(self._children_of(values), go)]

    def _checked(self) -> str:
        """SQLite refuses a write that involves a foreign key whose parent key is no key."""
        if self.mismatch is None:
            return "SELECT 1 WHERE 0"
        return f"SELECT RAISE(ABORT, {quote_literal(self.mismatch)})"

    # the actions, after the parent row changed (fkActionTrigger)
    def on_delete(self, old: list[str], go: str) -> list[str]:
        return self._action(self.fk.on_delete, old, None, go)

    def on_update(self, old: list[str], new: list[str], go: str) -> list[str]:
        return self._action(self.fk.on_update, old, new, go)

    def _action(self, action: str, old: list[str], new: list[str] | None, go: str) -> list[str]:
        go = f"{go} AND NOT (SELECT replica FROM {CTX})"  # (a merge writes rows only)
        match = " AND ".join(f"{o} = {quote_ident(c)}" for c, o in zip(self.fk.columns, old))
        if new is not None:  # ON UPDATE: only when the key changed
            same = " AND ".join(f"{o} IS {n}" for o, n in zip(old, new))
            match += f" AND NOT ({same})"
        if action == "RESTRICT":
            return [
                f"SELECT RAISE(ABORT, {quote_literal(FK_FAILED)}) FROM {self.child_view} "
                f"WHERE {go} AND NOT (SELECT defer FROM {CTX}) AND {match}"
            ]
        if action == "CASCADE" and new is None:
            statement = f"DELETE FROM {self.child_view} WHERE {go} AND {match}"
        elif action in ("CASCADE", "SET NULL", "SET DEFAULT"):
            targets = new if new is not None else [None] * len(self.fk.columns)
            sets = ", ".join(
                f"{quote_ident(c)} = {self._set_to(action, c, v)}"
                for c, v in zip(self.fk.columns, targets)
            )
            statement = f"UPDATE {self.child_view} SET {sets} WHERE {go} AND {match}"
        else:
            return []
        return [DEPTH_UP, statement, DEPTH_DOWN]

    def _set_to(self, action: str, column: str, new: str | None) -> str:
        if action == "CASCADE":
            return new or "NULL"
        if action == "SET DEFAULT":
            return dict(self.defaults).get(column, "NULL")
        return "NULL"


def link(fk: ForeignKey, tables: dict[str, tuple[int, TableInfo]], schema: str = "temp") -> Link:
    """A foreign key resolved against the branch's tables (``schema``: where their views are:
    temp on a world, main on main)."""
    by_lower = {name.lower(): t for name, (_n, t) in tables.items()}
    child = by_lower.get(fk.child.lower())
    parent = by_lower.get(fk.parent.lower())
    child_view = f"{schema}.{quote_ident(child.stored if child else fk.child)}"
    parent_view = f"{schema}.{quote_ident(parent.stored if parent else fk.parent)}"
    if schema == "temp":  # (a world's view of a table, or main's own: named like it)
        child_view = quote_ident(child.name if child else fk.child)
        parent_view = quote_ident(parent.name if parent else fk.parent)
    mismatch = None
    if child is not None:
        fk = replace(fk, columns=_real(child, fk.columns))
    key: tuple[str, ...] = _real(parent, fk.parent_columns or ()) if parent else ()
    if parent is not None:
        if fk.parent_columns is None:
            key = parent.pk if parent.key_kind != "rowid" else ()
        if not _is_key(parent, key) or len(key) != len(fk.columns):
            mismatch = f'foreign key mismatch - "{fk.child}" referencing "{fk.parent}"'
            key = key or fk.columns
    defaults = tuple(
        (c.name, c.default) for c in (child.columns if child else ()) if c.default is not None
    )
    return Link(fk, child_view, parent_view, key, mismatch, defaults)


def _real(t: TableInfo, names: tuple[str, ...]) -> tuple[str, ...]:
    """Column names as the table spells them (a key may name them in another case)."""
    by_lower = {c.lower(): c for c in t.column_names}
    return tuple(by_lower.get(x.lower(), x) for x in names)


def _is_key(parent: TableInfo, key: tuple[str, ...]) -> bool:
    """Whether ``key`` is the parent's primary key or has a plain unique index of its own."""
    wanted = {k.lower() for k in key}
    if key and {p.lower() for p in parent.pk} == wanted:
        return True
    return any(
        rule.plain_columns and {t.strip('"').lower() for t in rule.terms} == wanted
        for rule in parent.rules.uniques
    )
