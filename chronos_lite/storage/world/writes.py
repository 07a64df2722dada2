"""The INSTEAD OF triggers that write a world: a row a statement inserts, updates or deletes
through a world's view goes, with SQLite's rules kept, into the table's overlay.

Each trigger runs, per row, what SQLite runs for a row of a real table, in its order: the
BEFORE triggers, NOT NULL and CHECK, the key and UNIQUE rules (REPLACE deleting the rows in the
way, as a DELETE through the view), the write (the overlay entry, and the world's history of
it), the foreign-key counters, the foreign-key actions, the AFTER triggers. Integer keys come
from the shared counter (``sqlite_sequence`` or chronos' own), so rows two worlds insert never
collide.

A table without a primary key has two views: the one named like the table, whose triggers find
the hidden rowid of the row they are given and pass it on (``forward_*``), and the key view
that shows it, where the work is done.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from ...sqltext import quote_ident
from ..schema.catalog import ROWID_COL, TableInfo
from ..schema.constraints import UniqueRule
from ..shadow import WORLD, overlay_table
from .context import COUNT, CTX, DEPTH_DOWN, DEPTH_UP
from .overlay import allocate, checked_int, counter, tombstone, write_row
from .rules import (
    IGNORE,
    REPLACE,
    Link,
    Steps,
    checks,
    mode,
    not_null,
    on_row,
    replace_null,
    unique_applies,
    unique_match,
)
from .triggers import Events, fire, start
from .views import key_view


@dataclass(frozen=True)
class Upsert:
    """An INSERT's ON CONFLICT clause, for a world (SQLite can't upsert a view by itself).

    ``assignments`` and ``condition`` are the DO UPDATE clause's text with ``excluded.`` already
    written ``NEW.`` and the table's alias its name; None assignments means DO NOTHING.
    """

    target: tuple[str, ...]
    assignments: str | None
    condition: str | None


@dataclass(frozen=True)
class WorldTable:
    """A table of a world, with what its write triggers must keep: its foreign keys (as the
    child, and as the parent of others), its own triggers."""

    t: TableInfo
    n: int
    world: int
    links: tuple[Link, ...] = ()
    referenced: tuple[Link, ...] = ()
    events: Events | None = None
    quiet_replace: bool = False  # REPLACE's deletes must not fire DELETE triggers somewhere
    whole: bool = False  # its connection copies it whole: the hidden keys aren't kept

    @property
    def steps(self) -> Steps:
        # (a row whose trigger pushed events must reach its end to pop them)
        return Steps(skipping=self.events is not None)

    @property
    def view(self) -> str:
        """The view whose triggers do the work: the key view for a table without a key."""
        if self.t.key_kind == "rowid":
            return f"temp.{key_view(self.n)}"
        return f"temp.{quote_ident(self.t.name)}"

    @property
    def key_cols(self) -> list[str]:
        return [quote_ident(c) for c in self.t.key_cols]


def trigger_name(n: int, suffix: str, kv: bool = False) -> str:
    return f"_chronos_w_{suffix}_k{n}" if kv else f"_chronos_w_{suffix}_{n}"


def world_trigger_names(n: int) -> list[str]:
    """Every name a world's INSTEAD OF trigger on table ``n`` can have (trigger_name's)."""
    suffixes = ("ii", "iia", "iu", "iuk", "id")
    return [trigger_name(n, s, kv) for s in suffixes for kv in (False, True)]


def _trigger(wt: WorldTable, suffix: str, event: str, steps: list[str], when: str = "") -> str:
    kv = wt.t.key_kind == "rowid"
    target = key_view(wt.n) if kv else quote_ident(wt.t.name)
    body = "; ".join(steps)
    condition = f" WHEN {when}" if when else ""
    return (
        f"CREATE TEMP TRIGGER {trigger_name(wt.n, suffix, kv)} INSTEAD OF {event} ON {target}"
        f"{condition} BEGIN {body}; END"
    )


def _row(vals: list[str]) -> str:
    return vals[0] if len(vals) == 1 else "(" + ", ".join(vals) + ")"


def _key_match(wt: WorldTable, vals: list[str], op: str = "=") -> str:
    """Rows of the work view whose key is (or, ``op`` 'IS NOT', isn't) ``vals``."""
    return f"{_row(wt.key_cols)} {op} {_row(vals)}"


# --- UNIQUE, with REPLACE ------------------------------------------------------------------


def _key_rule(wt: WorldTable, new: list[str], moved: str) -> list[str]:
    """An integer key (or a hidden rowid) given that another row already has."""
    t = wt.t
    name = t.pk[0] if t.pk else "rowid"
    rule_mode = mode(t.rules.pk_conflict)
    found = f"EXISTS (SELECT 1 FROM {wt.view} WHERE {_key_match(wt, new)})"
    return wt.steps.refuse(
        f"{moved} AND {found}",
        rule_mode,
        f"UNIQUE constraint failed: {t.name}.{name}",
        lets=(REPLACE,),
    )


def _rule_checks(
    wt: WorldTable, rule: UniqueRule, values: dict[str, str], moved: str, not_self: str
) -> list[str]:
    found = f"EXISTS (SELECT 1 FROM {wt.view} WHERE {unique_match(rule, values)}{not_self})"
    return wt.steps.refuse(
        f"{moved} AND {unique_applies(rule, values)} AND {found}",
        mode(rule.on_conflict),
        rule.message,
        lets=(REPLACE,),
    )


def _replace(wt: WorldTable, rule_mode: str, where: str) -> list[str]:
    """REPLACE: the rows in the way go, as a DELETE through the view (their foreign-key
    actions run; their DELETE triggers don't, as recursive_triggers is off)."""
    quiet = [f"UPDATE {CTX} SET replacing = 1"] if wt.quiet_replace else []
    back = [f"UPDATE {CTX} SET replacing = 0"] if wt.quiet_replace else []
    return [
        DEPTH_UP,
        *quiet,
        f"DELETE FROM {wt.view} WHERE {wt.steps.go} AND {rule_mode} = {REPLACE} AND {where}",
        *back,
        DEPTH_DOWN,
    ]


def _uniques(
    wt: WorldTable,
    values: dict[str, str],
    new: list[str],
    old: list[str] | None,
    given: str = "1",
    key_settled: bool = False,
) -> list[str]:
    """The key (``given``: an INSERT named it) and every unique rule (only those whose values
    changed, for an UPDATE), then REPLACE's deletes of the rows in the way. ``key_settled``:
    an integer key that needs nothing (an UPDATE keeps it, an INSERT took it from the
    shared counter)."""
    t = wt.t
    steps: list[str] = []
    moved = "1" if old is None else f"{_row(old)} IS NOT {_row(new)}"
    not_self = "" if old is None else f" AND {_key_match(wt, old, 'IS NOT')}"
    rules = [r for r in t.rules.uniques]
    if t.key_kind in ("int", "rowid") and not key_settled:
        steps += _key_rule(wt, new, f"{moved} AND {given}")
    for rule in rules:
        changed = moved if rule.primary else _changed(rule, values, old is None)
        steps += _rule_checks(wt, rule, values, changed, "" if rule.primary else not_self)
    if t.key_kind in ("int", "rowid") and not key_settled:
        where = f"{moved} AND {given} AND {_key_match(wt, new)}"
        steps += _replace(wt, mode(t.rules.pk_conflict), where)
    for rule in rules:
        changed = moved if rule.primary else _changed(rule, values, old is None)
        where = f"{changed} AND {unique_applies(rule, values)} AND {unique_match(rule, values)}"
        steps += _replace(wt, mode(rule.on_conflict), where + ("" if rule.primary else not_self))
    return steps


def _changed(rule: UniqueRule, values: dict[str, str], inserting: bool) -> str:
    if inserting:
        return "1"
    olds = {c: f"OLD.{quote_ident(c)}" for c in values}
    pairs = [f"({on_row(t, values)}) IS NOT ({on_row(t, olds)})" for t in rule.terms]
    if rule.where:
        pairs.append(f"({on_row(rule.where, values)}) IS NOT ({on_row(rule.where, olds)})")
    return "(" + " OR ".join(pairs) + ")"


# --- foreign keys ---------------------------------------------------------------------------


def _fk_added(wt: WorldTable, values: dict[str, str], old: dict[str, str] | None) -> list[str]:
    """After the row is written: the counters for the keys it holds (as a child) and is (as a
    parent), each only where the values changed (an UPDATE)."""
    go = wt.steps.go
    steps: list[str] = []
    for lk in wt.links:
        new_vals = [values.get(c, f"NEW.{quote_ident(c)}") for c in lk.fk.columns]
        if old is None:
            steps += lk.child_added(new_vals, go)
            continue
        old_vals = [old[c] for c in lk.fk.columns]
        changed = f"{go} AND {_row(old_vals)} IS NOT {_row(new_vals)}"
        steps += lk.child_removed(old_vals, changed) + lk.child_added(new_vals, changed)
    for lk in wt.referenced:
        new_vals = [values.get(c, f"NEW.{quote_ident(c)}") for c in lk.parent_key]
        if old is None:
            steps += lk.parent_added(new_vals, go)
            continue
        old_vals = [old[c] for c in lk.parent_key]
        changed = f"{go} AND {_row(old_vals)} IS NOT {_row(new_vals)}"
        steps += lk.parent_removed(old_vals, changed) + lk.parent_added(new_vals, changed)
    return steps


def _fk_actions(wt: WorldTable, old: dict[str, str], new: dict[str, str] | None) -> list[str]:
    steps: list[str] = []
    for lk in wt.referenced:
        olds = [old[c] for c in lk.parent_key]
        if new is None:
            steps += lk.on_delete(olds, wt.steps.go)
        else:
            steps += lk.on_update(olds, [new[c] for c in lk.parent_key], wt.steps.go)
    return steps


# --- the triggers ----------------------------------------------------------------------------


def _given(t: TableInfo, n: int, index: int, column: str, default: str | None) -> str:
    """A column's value for an INSERT: NEW's, or its default where the statement didn't name
    it (``_chronos_given``; where that isn't known, a NULL takes the default)."""
    v = f"NEW.{quote_ident(column)}"
    if default is None:
        return v
    if index >= 62:
        return f"coalesce({v}, {default})"
    named = f"(SELECT mask FROM temp._chronos_given WHERE n = {n})"
    return (
        f"CASE WHEN coalesce({named} & {1 << index}, {v} IS NOT NULL) THEN {v} ELSE {default} END"
    )


def _stored(wt: WorldTable, key: list[str]) -> str:
    """FROM ... WHERE finding the row as the world now holds it, at key ``key``."""
    return f"FROM {wt.view} WHERE {_key_match(wt, key)}"


def _rowid_of(wt: WorldTable, key: list[str]) -> str:
    return key[0] if wt.t.key_kind in ("int", "rowid") else "NULL"


def insert_triggers(wt: WorldTable, upsert: Upsert | None = None, log: bool = False) -> list[str]:
    """INSTEAD OF INSERT. ``upsert``: the statement's ON CONFLICT clause; ``log``: record the
    written keys for a RETURNING clause. (Both only in a trigger put in place for one
    statement, so ordinary inserts pay for neither.) Ordinarily a table with an integer key
    has two: for a row whose key is given, and for one that takes the next from the shared
    counter (no key check, nothing to hide of main's). Exactly one fires a row."""
    t = wt.t
    if upsert is not None or log or t.key_kind not in ("int", "rowid"):
        return [_insert_trigger(wt, upsert, log)]
    raw = _raw_key(t, _given_values(wt))
    return [
        _insert_trigger(wt, when=f"({raw}) IS NOT NULL"),
        _insert_trigger(wt, when=f"({raw}) IS NULL", counted=True),
    ]


def set_insert_triggers(
    conn: apsw.Connection, wt: WorldTable, upsert: Upsert | None = None, log: bool = False
) -> None:
    """Put a table's INSERT triggers for one statement in place (or the ordinary ones back)."""
    kv = wt.t.key_kind == "rowid"
    for suffix in ("ii", "iia"):
        conn.execute(f"DROP TRIGGER IF EXISTS temp.{trigger_name(wt.n, suffix, kv)}")
    for sql in insert_triggers(wt, upsert, log):
        conn.execute(sql)


def _given_values(wt: WorldTable) -> dict[str, str]:
    """An INSERT's values, by column: NEW's, or the column's default (``_given``)."""
    t, names = wt.t, wt.t.column_names
    return {c.name: _given(t, wt.n, names.index(c.name), c.name, c.default) for c in t.writable}


def _raw_key(t: TableInfo, values: dict[str, str]) -> str:
    """An INSERT's integer key as given (NULL: the next from the shared counter)."""
    return values[t.pk[0]] if t.key_kind == "int" else f"NEW.{quote_ident(ROWID_COL)}"


def _insert_trigger(
    wt: WorldTable,
    upsert: Upsert | None = None,
    log: bool = False,
    when: str = "",
    counted: bool = False,
) -> str:
    """One INSERT trigger (``counted``: for rows whose key comes from the shared counter)."""
    t, n, st = wt.t, wt.n, wt.steps
    go = st.go
    values = _given_values(wt)
    steps: list[str] = []
    given_key = None
    named = "1"
    if t.key_kind in ("int", "rowid"):
        name = t.pk[0] if t.key_kind == "int" else ROWID_COL
        named = f"NEW.{quote_ident(name)} IS NOT NULL"
        given_key = checked_int(_raw_key(t, values))
    if given_key is not None:
        before = dict(values)
        if t.key_kind == "int":
            before[t.pk[0]] = f"coalesce({given_key}, -1)"
        steps += fire(wt.events, "BEFORE", "INSERT", go, before, f"coalesce({given_key}, -1)")
    else:
        steps += fire(wt.events, "BEFORE", "INSERT", go, values, "NULL")
    if t.key_kind in ("int", "rowid"):
        # (a trigger for given keys only: the key is the given one, the counter follows it)
        raw = None if counted else _raw_key(t, values)
        step, new_key = allocate(t, n, raw, known=bool(when))
        steps.append(step + f" AND {go}")
        if t.key_kind == "int":
            values[t.pk[0]] = new_key
        key = [new_key]
    else:
        key = [values[c] for c in t.pk]
    for c in t.writable:
        values[c.name] = replace_null(t, c.name, values[c.name])
    steps += not_null(t, values, st, set(t.pk) if t.key_kind == "int" else set())
    steps += checks(t, n, values, st)
    if upsert is not None:
        steps += _upsert_steps(wt, upsert, values, log)
    steps += _uniques(wt, values, key, None, named, key_settled=counted)
    steps += write_row(t, n, wt.world, key, values, go, fresh=counted, hidden=not wt.whole)
    steps += _fk_added(wt, values, None)
    if log:
        o = f"main.{overlay_table(n)}"
        stored = [t.col(c) for c in t.key_cols]
        where = f"{go} AND {WORLD} = {wt.world} AND {_row(stored)} = {_row(key)}"
        steps.append(_log_keys(o, stored, where))
    steps.append(f"{COUNT} AND {go}")
    steps += fire(
        wt.events, "AFTER", "INSERT", go, new_rowid=_rowid_of(wt, key), stored=_stored(wt, key)
    )
    if st.skipping:
        steps.append(f"UPDATE {CTX} SET skip = 0")
    return _trigger(wt, "iia" if counted else "ii", "INSERT", steps, when)


def update_triggers(wt: WorldTable) -> list[str]:
    """A table with an integer key has two: for an UPDATE that keeps a row's key (the usual
    one: none of a moving key's work), and for one that moves it. Exactly one fires a row."""
    if wt.t.key_kind not in ("int", "rowid"):
        return [_update_trigger(wt, moves=None)]
    name = wt.t.pk[0] if wt.t.key_kind == "int" else ROWID_COL
    same = f"OLD.{quote_ident(name)} IS NEW.{quote_ident(name)}"
    # (UPDATE OF the key: SQLite compiles and fires it only for statements that set the key)
    moving = _update_trigger(wt, moves=f"NOT ({same})", of=name)
    return [moving, _update_trigger(wt, moves=None, kept=same)]


def _update_trigger(wt: WorldTable, moves: str | None, kept: str = "", of: str = "") -> str:
    t, n, st = wt.t, wt.n, wt.steps
    go = st.go
    values = {c.name: f"NEW.{quote_ident(c.name)}" for c in t.writable}
    olds = {c: f"OLD.{quote_ident(c)}" for c in t.column_names}
    steps: list[str] = []
    if t.key_kind == "rowid":
        old_key = [f"OLD.{quote_ident(ROWID_COL)}"]
        key = old_key if kept else [checked_int(f"NEW.{quote_ident(ROWID_COL)}")]
    elif t.key_kind == "int":
        pk = t.pk[0]
        old_key = [olds[pk]]
        if kept:  # (the key as stored: NEW's may be 5.0 where OLD's is 5)
            values[pk] = old_key[0]
        else:
            steps.append(
                f"SELECT RAISE(ABORT, 'datatype mismatch') WHERE NEW.{quote_ident(pk)} IS NULL"
            )
            values[pk] = checked_int(values[pk])
        key = [values[pk]]
    else:
        old_key = [olds[c] for c in t.pk]
        key = [values[c] for c in t.pk]
    steps += start(wt.events, "UPDATE", old_key[0] if t.key_kind in ("int", "rowid") else "NULL")
    steps += fire(wt.events, "BEFORE", "UPDATE", go, values, _rowid_of(wt, key))
    if t.key_kind == "int" and not kept:
        table, col, row = counter(t, n)  # a key moved up moves the shared counter too
        steps.append(
            f"UPDATE {table} SET {col} = {key[0]} WHERE {row} AND {col} < {key[0]} AND {go}"
        )
    for c in t.writable:
        values[c.name] = replace_null(t, c.name, values[c.name])
    steps += not_null(t, values, st, set(t.pk) if t.key_kind == "int" else set())
    steps += checks(t, n, values, st)
    steps += _uniques(wt, values, key, old_key, key_settled=bool(kept))
    if not kept:  # the key moved: the old goes
        moved = f"{_row(old_key)} IS NOT {_row(key)}"
        steps += tombstone(t, n, wt.world, old_key, f"WHERE {go} AND {moved}", not wt.whole)
    steps += write_row(t, n, wt.world, key, values, go, hidden=not wt.whole)
    steps += _fk_added(wt, values, olds)
    steps.append(f"{COUNT} AND {go}")
    steps += _fk_actions(wt, olds, values)
    steps += fire(
        wt.events, "AFTER", "UPDATE", go, new_rowid=_rowid_of(wt, key), stored=_stored(wt, key)
    )
    if st.skipping:
        steps.append(f"UPDATE {CTX} SET skip = 0")
    event = f"UPDATE OF {quote_ident(of)}" if of else "UPDATE"
    when = " AND ".join(c for c in (kept or moves, _still_there(wt, old_key)) if c)
    return _trigger(wt, "iuk" if kept else "iu", event, steps, when)


def _still_there(wt: WorldTable, old_key: list[str]) -> str:
    """Where REPLACE may delete rows: a row an earlier row of the same UPDATE deleted is skipped,
    as SQLite skips a row of a table that is gone by the time the UPDATE reaches it (a view's
    rows are read before the first is written)."""
    rules = wt.t.rules
    declared = rules.pk_conflict == "REPLACE" or any(
        u.on_conflict == "REPLACE" for u in rules.uniques
    )
    replacing = f"coalesce(nullif((SELECT mode FROM {CTX}), 0), {REPLACE if declared else 0})"
    alive = f"EXISTS (SELECT 1 FROM {wt.view} WHERE {_key_match(wt, old_key)})"
    return f"({replacing} IS NOT {REPLACE} OR {alive})"


def delete_trigger(wt: WorldTable) -> str:
    t, st = wt.t, wt.steps
    go = st.go
    olds = {c: f"OLD.{quote_ident(c)}" for c in t.column_names}
    if t.key_kind == "rowid":
        old_key = [f"OLD.{quote_ident(ROWID_COL)}"]
    else:
        old_key = [olds[c] for c in t.pk]
    steps: list[str] = start(wt.events, "DELETE", _rowid_of(wt, old_key))
    if wt.quiet_replace:
        steps.append(f"UPDATE {CTX} SET replacing = 0")
    steps += fire(wt.events, "BEFORE", "DELETE", go)
    steps += tombstone(t, wt.n, wt.world, old_key, f"WHERE {go}", not wt.whole)
    for lk in wt.links:
        steps += lk.child_removed([olds[c] for c in lk.fk.columns], go)
    for lk in wt.referenced:
        steps += lk.parent_removed([olds[c] for c in lk.parent_key], go)
    steps.append(f"{COUNT} AND {go}")
    steps += _fk_actions(wt, olds, None)
    steps += fire(wt.events, "AFTER", "DELETE", go)
    if st.skipping:
        steps.append(f"UPDATE {CTX} SET skip = 0")
    return _trigger(wt, "id", "DELETE", steps)


# --- a table without a key: the view named like it passes rows on to the key view ----------


def forward_triggers(wt: WorldTable) -> list[str]:
    """INSERT, UPDATE and DELETE on the view named like a table without a key: the row goes to
    the key view (found by its values: the first row equal to OLD)."""
    t, n = wt.t, wt.n
    kv = f"temp.{key_view(n)}"
    cols = [quote_ident(c.name) for c in t.writable]
    rid = quote_ident(ROWID_COL)
    same = " AND ".join(f"{quote_ident(c)} IS OLD.{quote_ident(c)}" for c in t.column_names)
    found = f"(SELECT {rid} FROM {kv} WHERE {same} LIMIT 1)"
    sets = ", ".join(f"{c} = NEW.{c}" for c in cols)
    head = f"INSTEAD OF {{}} ON {quote_ident(t.name)} BEGIN"
    return [
        f"CREATE TEMP TRIGGER {trigger_name(n, 'ii')} {head.format('INSERT')} "
        f"INSERT INTO {kv}({', '.join(cols)}) VALUES ({', '.join('NEW.' + c for c in cols)}); END",
        f"CREATE TEMP TRIGGER {trigger_name(n, 'iu')} {head.format('UPDATE')} "
        f"UPDATE {kv} SET {sets} WHERE {rid} = {found}; END",
        f"CREATE TEMP TRIGGER {trigger_name(n, 'id')} {head.format('DELETE')} "
        f"DELETE FROM {kv} WHERE {rid} = {found}; END",
    ]


# --- upsert and RETURNING ------------------------------------------------------------------


def _log_keys(source: str, keys: list[str], where: str) -> str:
    """Record the keys an INSERT wrote (``keys``: their columns in ``source``), for its
    RETURNING clause."""
    return (
        f"INSERT INTO temp._chronos_inserted(k) SELECT json_array({', '.join(keys)}) "
        f"FROM {source} WHERE {where}"
    )


def _upsert_steps(wt: WorldTable, upsert: Upsert, values: dict[str, str], log: bool) -> list[str]:
    """On a row the target constraint already has: update it (or do nothing) and stop."""
    t, go = wt.t, wt.steps.go
    view = f"temp.{quote_ident(t.name)}"
    match = " AND ".join(f"{quote_ident(c)} = {values[c]}" for c in upsert.target)
    hit = f"(SELECT k2 FROM {CTX}) = 1"
    steps = [f"UPDATE {CTX} SET k2 = {go} AND EXISTS (SELECT 1 FROM {view} WHERE {match})"]
    if upsert.assignments is not None:
        where = f" AND ({upsert.condition})" if upsert.condition else ""
        steps.append(f"UPDATE {view} SET {upsert.assignments} WHERE {hit} AND {match}{where}")
        if log:
            steps.append(_log_keys(view, wt.key_cols, f"{hit} AND {match}"))
    if wt.steps.skipping:
        steps.append(f"UPDATE {CTX} SET skip = 1 WHERE {hit}")
    else:
        steps.append(f"SELECT RAISE(IGNORE) WHERE {hit}")
    return steps


__all__ = [
    "IGNORE",
    "Upsert",
    "WorldTable",
    "insert_triggers",
    "set_insert_triggers",
    "update_triggers",
    "delete_trigger",
]
