"""The writes of a world: the INSTEAD OF triggers on its views (``worldviews``), and the objects
that put a connection on a world (``world_objects``: views and triggers).

Writes go through INSTEAD OF triggers into the overlay; they keep SQLite's own rules (NOT NULL,
primary key and UNIQUE, defaults, OR IGNORE / OR REPLACE) and draw integer keys from the shared
counter. A statement's context (its conflict mode, the rows it wrote, its stamp of the world
clock) is the connection's TEMP table ``_chronos_ctx``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from ..sqltext import quote_ident, quote_literal, tokens
from . import events
from .catalog import ROWID_COL, TableInfo, check_constraints
from .shadow import (
    DEAD,
    NOW,
    OP,
    SEQ,
    TIME,
    WORLD,
    history_table,
    overlay_table,
    world_history_table,
)
from .worldviews import key_view, view_select

CTX = "temp._chronos_ctx"
CTX_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_ctx(id INTEGER PRIMARY KEY CHECK (id = 1), "
    "mode INTEGER NOT NULL DEFAULT 0, n INTEGER NOT NULL DEFAULT 0, k, k2, "
    "log INTEGER NOT NULL DEFAULT 0, seq INTEGER);"
    "INSERT OR IGNORE INTO temp._chronos_ctx(id) VALUES (1);"
    # Keys an INSERT wrote, in order, for its RETURNING clause (see sqlrun).
    "CREATE TEMP TABLE IF NOT EXISTS _chronos_inserted(ord INTEGER PRIMARY KEY, k)"
)
MODES = {"abort": 0, "ignore": 1, "replace": 2}
MODE = f"(SELECT mode FROM {CTX})"
CTX_KEY = f"(SELECT k FROM {CTX})"
# World writes are stamped with the world clock (``_chronos_clock``), moved on once per
# statement by the caller and kept in the context row: no clock update per row. A write made
# on the connection outside a call is stamped one past the clock.
CLOCK = f"coalesce((SELECT seq FROM {CTX}), (SELECT seq + 1 FROM main._chronos_clock))"
COUNT = f"UPDATE {CTX} SET n = n + 1"


class _Keys:
    """Key expressions for one table inside a world's triggers.

    A table without a primary key has two views: the one named like the table (its rows found
    by value) and the key view, which shows the hidden rowid (what get, put and delete use).
    ``new_key`` is the expression of a new integer key (allocated or checked).
    """

    def __init__(self, t: TableInfo, key_view: bool = False, new_key: str = CTX_KEY):
        self.t = t
        self.key_view = key_view
        self.new_key = new_key
        self.cols = [quote_ident(c) for c in t.key_cols]

    def old(self) -> list[str]:
        if self.t.key_kind == "rowid":
            return [f"OLD.{self.cols[0]}" if self.key_view else CTX_KEY]
        return [f"OLD.{c}" for c in self.cols]

    def new(self) -> list[str]:
        if self.t.key_kind in ("rowid", "int"):
            return [self.new_key]
        return [f"NEW.{c}" for c in self.cols]

    @staticmethod
    def row(vals: list[str]) -> str:
        return vals[0] if len(vals) == 1 else "(" + ", ".join(vals) + ")"

    def view_match(self, vals: list[str], op: str = "=") -> str:
        """Condition on the view (or key view) matching a key (``op`` 'IS NOT': any other row)."""
        view_key = self.t.shadow_key() if self.t.key_kind == "rowid" else self.t.main_key()
        return f"{view_key} {op} {self.row(vals)}"

    def overlay_match(self, vals: list[str]) -> str:
        return f"{self.t.shadow_key()} = {self.row(vals)}"


def _checked_int(expr: str) -> str:
    """An INTEGER PRIMARY KEY value as SQLite would take it, or 'datatype mismatch'."""
    return (
        f"CASE WHEN {expr} IS NULL OR typeof({expr}) = 'integer' THEN {expr} "
        f"WHEN typeof({expr}) = 'real' AND {expr} = CAST({expr} AS INTEGER) "
        f"THEN CAST({expr} AS INTEGER) "
        f"WHEN typeof({expr}) = 'text' AND CAST(CAST({expr} AS INTEGER) AS TEXT) = trim({expr}) "
        f"THEN CAST({expr} AS INTEGER) ELSE RAISE(ABORT, 'datatype mismatch') END"
    )


def _counter(t: TableInfo, n: int) -> tuple[str, str, str]:
    """The shared counter of integer keys: (table, column, row condition).

    With AUTOINCREMENT it is ``sqlite_sequence``, which main's own inserts honour; it is never
    below main's largest key (inserts keep it so, and main's history trigger moves it when an
    UPDATE moves a key up). Otherwise (a table without a primary key) chronos' own counter.
    """
    if t.autoincrement:
        return "main.sqlite_sequence", "seq", f"name = {quote_literal(t.stored)}"
    return "main._chronos_counters", "hi", f"table_id = {n}"


def _allocate(t: TableInfo, n: int, given: str | None) -> tuple[str, str]:
    """The statement that moves the shared counter for a new row, and the row's key."""
    table, col, row = _counter(t, n)
    chk = _checked_int(given) if given else "NULL"
    if t.autoincrement:
        step = (
            f"UPDATE {table} SET {col} = CASE WHEN {chk} IS NULL THEN {col} + 1 "
            f"ELSE max({col}, {chk}) END WHERE {row}"
        )
    else:
        # Past main's largest rowid, and past every rowid in history: a world still sees rows
        # main deleted after its fork.
        top = (
            f"max(coalesce((SELECT max(rowid) FROM main.{quote_ident(t.stored)}), 0), "
            f"coalesce((SELECT max({quote_ident(t.key_cols[0])}) FROM main.{history_table(n)}), 0))"
        )
        step = (
            f"UPDATE {table} SET {col} = CASE WHEN {chk} IS NULL THEN max({col}, {top}) + 1 "
            f"ELSE max({col}, {chk}) END WHERE {row}"
        )
    key = (
        f"coalesce({chk}, (SELECT {col} FROM {table} WHERE {row}))"
        if given
        else (f"(SELECT {col} FROM {table} WHERE {row})")
    )
    return step, key


def _find_rowid(t: TableInfo, n: int) -> str:
    """For a table without a primary key: the hidden rowid of a row equal to OLD."""
    match = " AND ".join(f"{quote_ident(c)} IS OLD.{quote_ident(c)}" for c in t.column_names)
    return (
        f"UPDATE {CTX} SET k = (SELECT {quote_ident(ROWID_COL)} FROM temp.{key_view(n)} "
        f"WHERE {match} LIMIT 1)"
    )


def _refuse(mode_cond: str, exists: str, message: str) -> list[str]:
    """OR IGNORE skips the row, OR REPLACE goes on, anything else fails with SQLite's message."""
    return [
        f"SELECT CASE {MODE} WHEN 1 THEN RAISE(IGNORE) "
        f"ELSE RAISE(ABORT, {quote_literal(message)}) END "
        f"WHERE {MODE} != 2 AND {mode_cond}EXISTS ({exists})"
    ]


def _lookup_view(t: TableInfo, n: int) -> str:
    return f"temp.{key_view(n)}" if t.key_kind == "rowid" else f"temp.{quote_ident(t.name)}"


def _upsert_clause(t: TableInfo, dead: bool) -> str:
    """Overwrite the key's overlay entry (a tombstone, or the world's older row) in place.

    An upsert, not INSERT OR REPLACE: an outer INSERT OR IGNORE would turn REPLACE into a skip.
    """
    keys = ", ".join(quote_ident(c) for c in t.key_cols)
    sets = [f"{SEQ} = excluded.{SEQ}", f"{DEAD} = {int(dead)}"]
    for c in t.columns:
        if c.name not in t.key_cols:
            sets.append(
                f"{quote_ident(c.name)} = "
                + ("NULL" if dead else f"excluded.{quote_ident(c.name)}")
            )
    return f" ON CONFLICT ({WORLD}, {keys}) DO UPDATE SET {', '.join(sets)}"


def _write_row(t: TableInfo, n: int, world: int, keys: _Keys, values: dict[str, str]) -> list[str]:
    o = f"main.{overlay_table(n)}"
    cols = [quote_ident(c.name) for c in t.writable]
    vals = [values[c.name] for c in t.writable]
    if t.key_kind == "rowid":
        cols.append(quote_ident(ROWID_COL))
        vals.append(keys.new()[0])
    key_values = [values[c] for c in t.key_cols] if t.key_kind != "rowid" else keys.new()
    return [
        _remember(t, n, world, key_values, ""),
        f"INSERT INTO {o}({WORLD}, {SEQ}, {DEAD}, {', '.join(cols)}) "
        f"VALUES ({world}, {CLOCK}, 0, {', '.join(vals)}){_upsert_clause(t, False)}",
    ]


def _tombstone(t: TableInfo, n: int, world: int, keys: list[str], tail: str) -> list[str]:
    """Tombstones for the keys ``keys`` (expressions) of the rows ``tail`` (a FROM ... WHERE,
    or a WHERE, clause) selects."""
    o = f"main.{overlay_table(n)}"
    kcols = ", ".join(quote_ident(c) for c in t.key_cols)
    return [
        _remember(t, n, world, keys, tail),
        f"INSERT INTO {o}({WORLD}, {SEQ}, {DEAD}, {kcols}) "
        f"SELECT {world}, {CLOCK}, 1, {', '.join(keys)} {tail}{_upsert_clause(t, True)}",
    ]


def remember_entry(conn, t: TableInfo, n: int, world: int, key: tuple, seq: int) -> None:
    """The world's history, from Python: a key's entry as it is before chronos rewrites it
    (a partial merge settling the world's row)."""
    conn.execute(_remember(t, n, world, ["?"] * len(key), "").replace(CLOCK, str(int(seq)), 1), key)


def _remember(t: TableInfo, n: int, world: int, keys: list[str], tail: str) -> str:
    """The world's history: the keys' overlay entries (or that there were none) as they are
    before the write that follows."""
    o, wh = f"main.{overlay_table(n)}", f"main.{world_history_table(n)}"
    aliases = [f"_k{i}" for i in range(len(keys))]
    picked = ", ".join(f"{k} AS {a}" for k, a in zip(keys, aliases))
    on = " AND ".join(f"_o.{quote_ident(c)} = _s.{a}" for c, a in zip(t.key_cols, aliases))
    rest = [c for c in t.column_names if c not in t.key_cols]
    cols = ", ".join(quote_ident(c) for c in (*t.key_cols, *rest))
    values = ", ".join([*(f"_s.{a}" for a in aliases), *(f"_o.{quote_ident(c)}" for c in rest)])
    return (
        f"INSERT INTO {wh}({WORLD}, {SEQ}, {TIME}, {OP}, {DEAD}, {cols}) "
        f"SELECT {world}, {CLOCK}, {NOW}, _o.{WORLD} IS NOT NULL, _o.{DEAD}, {values} "
        f"FROM (SELECT {picked} {tail}) AS _s LEFT JOIN {o} AS _o "
        f"ON _o.{WORLD} = {world} AND {on}"
    )


def _not_null(t: TableInfo, values: dict[str, str], skip: set[str]) -> list[str]:
    out = []
    for c in t.writable:
        if (
            c.notnull or (c.name in t.pk and t.key_kind in ("single", "composite"))
        ) and c.name not in skip:
            msg = f"NOT NULL constraint failed: {t.name}.{c.name}"
            if c.name in t.pk and not c.notnull:  # SQLite's legacy NULL keys stay in main
                msg += " (a world can't hold a row whose primary key is NULL; change it on main)"
            out.append(f"SELECT RAISE(ABORT, {quote_literal(msg)}) WHERE {values[c.name]} IS NULL")
    return out


def _checks(t: TableInfo, values: dict[str, str]) -> list[str]:
    """The table's CHECK constraints on the row a trigger writes, with SQLite's own message: a
    check fails when its expression is false (NULL passes)."""
    out = []
    for name, expr in check_constraints(t.sql):
        test = _on_row(expr, values)
        msg = f"CHECK constraint failed: {name or _dequoted(expr.strip())}"
        out.append(  # (OR IGNORE skips the row; OR REPLACE can't mend a check: it fails)
            f"SELECT CASE {MODE} WHEN 1 THEN RAISE(IGNORE) ELSE RAISE(ABORT, "
            f"{quote_literal(msg)}) END WHERE NOT coalesce(({test}), 1)"
        )
    return out


def _dequoted(text: str) -> str:
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


def _on_row(expr: str, values: dict[str, str]) -> str:
    """A CHECK expression with its column names read from the written row (``values``)."""
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


def _unique_msg(t: TableInfo, cols: tuple[str, ...]) -> str:
    return "UNIQUE constraint failed: " + ", ".join(f"{t.name}.{c}" for c in cols)


@dataclass(frozen=True)
class Upsert:
    """An INSERT's ON CONFLICT clause, for a world (SQLite can't upsert a view by itself).

    ``assignments`` and ``condition`` are the DO UPDATE clause's text with ``excluded.`` already
    written ``NEW.`` and the table's alias its name; None assignments means DO NOTHING.
    """

    target: tuple[str, ...]
    assignments: str | None
    condition: str | None


def _log_keys(t: TableInfo, source: str, where: str) -> str:
    """Record the keys an INSERT wrote, for its RETURNING clause."""
    kcols = ", ".join(quote_ident(c) for c in t.key_cols)
    return (
        f"INSERT INTO temp._chronos_inserted(k) SELECT json_array({kcols}) "
        f"FROM {source} WHERE {where}"
    )


def _upsert_steps(t: TableInfo, upsert: Upsert, values: dict[str, str], log: bool) -> list[str]:
    """On a row the target constraint already has: update it (or do nothing) and stop."""
    view = f"temp.{quote_ident(t.name)}"
    match = " AND ".join(f"{quote_ident(c)} = {values[c]}" for c in upsert.target)
    hit = f"(SELECT k2 FROM {CTX}) = 1"
    steps = [f"UPDATE {CTX} SET k2 = EXISTS (SELECT 1 FROM {view} WHERE {match})"]
    if upsert.assignments is not None:
        where = f" AND ({upsert.condition})" if upsert.condition else ""
        steps.append(f"UPDATE {view} SET {upsert.assignments} WHERE {hit} AND {match}{where}")
        if log:
            steps.append(_log_keys(t, view, f"{hit} AND {match}"))
    steps.append(f"SELECT RAISE(IGNORE) WHERE {hit}")
    return steps


def insert_trigger(
    t: TableInfo,
    n: int,
    world: int,
    kv: bool = False,
    upsert: Upsert | None = None,
    log: bool = False,
) -> str:
    """INSTEAD OF INSERT. ``upsert``: the statement's ON CONFLICT clause; ``log``: record the
    written keys for a RETURNING clause. (Both only in a trigger put in place for one
    statement, so ordinary inserts pay for neither.)"""
    values = {}
    for c in t.writable:
        v = f"NEW.{quote_ident(c.name)}"
        values[c.name] = f"coalesce({v}, {c.default})" if c.default is not None else v
    steps: list[str] = []
    new_key = CTX_KEY
    if t.key_kind == "int":
        pk = t.pk[0]
        step, new_key = _allocate(t, n, values[pk])
        steps.append(step)
        values[pk] = new_key
    elif t.key_kind == "rowid":
        step, new_key = _allocate(t, n, f"NEW.{quote_ident(ROWID_COL)}" if kv else None)
        steps.append(step)
    keys = _Keys(t, kv, new_key)
    steps += _not_null(t, values, set(t.pk) if t.key_kind == "int" else set())
    steps += _checks(t, values)
    if upsert is not None:
        steps += _upsert_steps(t, upsert, values, log)
    view = _lookup_view(t, n)
    new = keys.new()
    if t.key_kind != "rowid" or kv:
        given = (
            "NEW." + quote_ident(t.key_cols[0]) + " IS NOT NULL AND "
            if t.key_kind in ("int", "rowid")
            else ""
        )
        steps += _refuse(
            given,
            f"SELECT 1 FROM {view} WHERE {keys.view_match(new)}",
            _unique_msg(t, t.pk or ("rowid",)),
        )
    for cols in t.uniques:
        match = " AND ".join(f"{quote_ident(c)} = {values[c]}" for c in cols)
        steps += _refuse("", f"SELECT 1 FROM {view} WHERE {match}", _unique_msg(t, cols))
    kcols = [quote_ident(c) for c in t.key_cols]
    for cols in t.uniques:  # OR REPLACE: rows the new one collides with are deleted
        match = " AND ".join(f"{quote_ident(c)} = {values[c]}" for c in cols)
        steps += _tombstone(t, n, world, kcols, f"FROM {view} WHERE {MODE} = 2 AND {match}")
    steps += _write_row(t, n, world, keys, values)
    steps.append(COUNT)
    if log:
        o = f"main.{overlay_table(n)}"
        steps.append(_log_keys(t, o, f"{WORLD} = {world} AND {keys.overlay_match(new)}"))
    return _trigger(t, n, "ii", "INSERT", steps, kv)


def update_trigger(t: TableInfo, n: int, world: int, kv: bool = False) -> str:
    values = {c.name: f"NEW.{quote_ident(c.name)}" for c in t.writable}
    steps: list[str] = []
    new_key = CTX_KEY
    if t.key_kind == "int":
        pk = t.pk[0]
        null_msg = quote_literal("datatype mismatch")
        steps.append(f"SELECT RAISE(ABORT, {null_msg}) WHERE NEW.{quote_ident(pk)} IS NULL")
        new_key = _checked_int(values[pk])
        table, col, row = _counter(t, n)  # a key moved up moves the shared counter too
        steps.append(f"UPDATE {table} SET {col} = {new_key} WHERE {row} AND {col} < {new_key}")
        values[pk] = new_key
    elif t.key_kind == "rowid":
        steps.append(
            f"UPDATE {CTX} SET k = OLD.{quote_ident(ROWID_COL)}" if kv else _find_rowid(t, n)
        )
    keys = _Keys(t, kv, new_key)
    steps += _not_null(t, values, set(t.pk) if t.key_kind == "int" else set())
    steps += _checks(t, values)
    view = _lookup_view(t, n)
    old, new = keys.old(), keys.new()
    moved = f"{keys.row(old)} IS NOT {keys.row(new)}"
    not_self = keys.view_match(old, "IS NOT")
    if t.key_kind != "rowid":
        steps += _refuse(
            f"{moved} AND ",
            f"SELECT 1 FROM {view} WHERE {keys.view_match(new)}",
            _unique_msg(t, t.pk),
        )
    for cols in t.uniques:
        changed = " OR ".join(f"NEW.{quote_ident(c)} IS NOT OLD.{quote_ident(c)}" for c in cols)
        match = " AND ".join(f"{quote_ident(c)} = {values[c]}" for c in cols)
        steps += _refuse(
            f"({changed}) AND ",
            f"SELECT 1 FROM {view} WHERE {match} AND {not_self}",
            _unique_msg(t, cols),
        )
    # OR REPLACE: rows the changed one now collides with are deleted (one indexed probe each)
    kcols = [quote_ident(c) for c in t.key_cols]
    collide = [f"{keys.view_match(new)} AND {moved}"] if t.key_kind != "rowid" else []
    for cols in t.uniques:
        match = " AND ".join(f"{quote_ident(c)} = {values[c]}" for c in cols)
        collide.append(f"{match} AND {not_self}")
    for cond in collide:
        steps += _tombstone(t, n, world, kcols, f"FROM {view} WHERE {MODE} = 2 AND {cond}")
    if t.key_kind != "rowid":  # the key moved: its old key is deleted
        steps += _tombstone(t, n, world, old, f"WHERE {moved}")
    steps += _write_row(t, n, world, keys, values)
    steps.append(COUNT)
    return _trigger(t, n, "iu", "UPDATE", steps, kv)


def delete_trigger(t: TableInfo, n: int, world: int, kv: bool = False) -> str:
    keys = _Keys(t, kv)
    steps: list[str] = []
    if t.key_kind == "rowid" and not kv:
        steps.append(_find_rowid(t, n))
    steps += _tombstone(t, n, world, keys.old(), "WHERE 1")
    steps.append(COUNT)
    return _trigger(t, n, "id", "DELETE", steps, kv)


def trigger_name(n: int, suffix: str, kv: bool = False) -> str:
    return f"_chronos_w_{suffix}_k{n}" if kv else f"_chronos_w_{suffix}_{n}"


def world_trigger_names(n: int) -> list[str]:
    """Every name a world's INSTEAD OF trigger on table ``n`` can have (trigger_name's)."""
    return [trigger_name(n, s, kv) for s in ("ii", "iu", "id") for kv in (False, True)]


def _trigger(t: TableInfo, n: int, suffix: str, event: str, steps: list[str], kv: bool) -> str:
    target = key_view(n) if kv else quote_ident(t.name)
    name = trigger_name(n, suffix, kv)
    body = "; ".join(steps)
    return f"CREATE TEMP TRIGGER {name} INSTEAD OF {event} ON {target} BEGIN {body}; END"


def world_objects(
    tables: dict[str, tuple[int, TableInfo]],
    world: int,
    base: dict[int, int],
    writable: bool = True,
    at: float | None = None,
) -> list[str]:
    """Every TEMP statement that puts a connection on the world (``base``: what it sees of
    main, per table the last history seq at its fork; a table created since counts from 0).
    Not ``writable``: the views alone (main as it was at a moment: world 0, no overlay)."""
    out: list[str] = []
    for _name, (n, t) in sorted(tables.items()):
        seq = base.get(n, 0)
        view = view_select(t, n, world, seq, at=at)
        out.append(f"CREATE TEMP VIEW {quote_ident(t.name)} AS {view}")
        if t.key_kind == "rowid":
            keyed = view_select(t, n, world, seq, True, at=at)
            out.append(f"CREATE TEMP VIEW {key_view(n)} AS {keyed}")
            if writable:
                out += [
                    insert_trigger(t, n, world, True),
                    update_trigger(t, n, world, True),
                    delete_trigger(t, n, world, True),
                ]
        if writable:
            out += [
                insert_trigger(t, n, world),
                update_trigger(t, n, world),
                delete_trigger(t, n, world),
            ]
    return out


def begin_world_write(conn: apsw.Connection, mode: str, tick: bool = True) -> None:
    """Before a write statement on a world: its conflict mode, the row count reset, and (for a
    statement that writes) a new stamp of the world clock for the rows it writes."""
    conn.execute(
        f"update {CTX} set mode = ?, n = 0, seq = ?",
        (MODES[mode], events.tick(conn) if tick else None),
    )


def rows_written(session: Any) -> int:
    """Rows the last statement wrote: on a world its INSTEAD OF triggers count them (SQLite's
    changes() is 0 for a view)."""
    if session.world is not None:
        return session.conn.execute(f"select n from {CTX}").fetchall()[0][0]
    return session.conn.changes()
