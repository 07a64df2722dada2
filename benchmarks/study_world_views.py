#!/usr/bin/env python3
"""Study: the cheapest SQL shapes for a world's view of a table, its INSTEAD OF triggers, and
main as of a fork, measured on plain apsw databases (issue 13, "Speed").

Not a benchmark of chronos_lite: every design here is written out in SQL by this script, on
scratch SQLite files under /tmp, so that designs can be compared before the package adopts one.

What it does, for each candidate design:

1. builds the data (``items`` with an index on ``category``, ``orders`` pointing at items, five
   chain tables ``c1``..``c5`` whose ``ref`` points at the next one), in one file per design;
2. puts a world on it: the design's shadow tables in main, and on a second connection its TEMP
   views (named like the tables) and INSTEAD OF triggers; then changes 1% of each table's rows
   *through the views* (80% updates, 10% deletes, 10% inserts with a key from the shared
   counter), so the triggers are exercised too. State "world": main is not changed after the
   fork. State "both": main then changes 1% of its rows too (recorded by history triggers) and
   the world must still see main as of the fork;
3. checks the world against a real copy (a plain file the same statements were applied to):
   every query shape must return the same rows (at ``--check`` rows, then totals at full size);
4. times every query shape on main and on the world, interleaved rounds, best of each, and prints
   the ratio against the issue's target with PASS/MISS.

Then the writes: rows/s of single-row INSERTs and UPDATEs (executemany, one transaction) on a
world against plain SQLite, without and with constraints and an app trigger; and the prepare
cost of a new statement text on a world against main.

Run from the repository root:

    .venv/bin/python benchmarks/study_world_views.py               # 1M rows (and 5M lookups)
    .venv/bin/python benchmarks/study_world_views.py --rows 100000 --big 0   # a quick pass
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import apsw
from common import aligned, best_of, timed

# --- the tables -----------------------------------------------------------------------------

CATEGORIES = 100
WORLD = 1  # the world measured; world 2 holds rows too in the shared layouts (as it would)


@dataclass(frozen=True)
class Table:
    name: str
    cols: tuple[str, ...]  # the first is the key: an INTEGER PRIMARY KEY
    ddl: str  # the CREATE TABLE text, with {name} for the table's name
    indexes: tuple[tuple[str, str], ...] = ()  # (name suffix, columns)
    uniques: tuple[str, ...] = ()  # single-column UNIQUE constraints (besides the key)

    def create(self, name: str | None = None, autoincrement: bool = True) -> list[str]:
        name = name or self.name
        ddl = self.ddl.format(name=name)
        if not autoincrement:
            ddl = ddl.replace(" autoincrement", "")
        out = [ddl]
        out += [f"create index {name}_{suffix} on {name}({cols})" for suffix, cols in self.indexes]
        return out

    @property
    def rest(self) -> tuple[str, ...]:
        return self.cols[1:]

    def collist(self, prefix: str = "") -> str:
        return ", ".join(prefix + c for c in self.cols)

    def typed(self, cols: tuple[str, ...] | None = None) -> str:
        """Columns with main's declared types: every arm of a view then has the same affinity
        (else SQLite won't flatten the view into a join, and probes can't use the indexes)."""
        decl = self.ddl.split("(", 1)[1]
        types = {}
        for part in decl.split(","):
            words = part.split()
            if words and words[0] in self.cols:
                types[words[0]] = words[1].rstrip(")")
        return ", ".join(f"{c} {types[c]}" for c in (cols or self.cols))


ITEMS = Table(
    "items",
    ("id", "category", "price", "name"),
    "create table {name}(id integer primary key autoincrement, category int, price real, "
    "name text)",
    (("category", "category"),),
)
ORDERS = Table(
    "orders",
    ("id", "item_id", "qty"),
    "create table {name}(id integer primary key autoincrement, item_id int, qty int)",
)
CHAIN = tuple(
    Table(
        f"c{i}",
        ("id", "ref", "v", "w"),
        "create table {name}(id integer primary key autoincrement, ref int, v int, w text)",
    )
    for i in range(1, 6)
)
# The constrained table of the write test: NOT NULL, CHECK, UNIQUE, and an app trigger that logs
# every price change into ``log``.
STRICT = Table(
    "strict",
    ("id", "category", "price", "name"),
    "create table {name}(id integer primary key autoincrement, "
    "category int not null check (category >= 0), price real not null check (price > 0), "
    "name text unique)",
    (("category", "category"),),
    ("name",),
)
LOG = Table(
    "log",
    ("id", "item", "old", "new"),
    "create table {name}(id integer primary key autoincrement, item int, old real, new real)",
)
APP_TRIGGER = (
    "create trigger strict_log after update of price on strict when new.price is not old.price "
    "begin insert into log(item, old, new) values (new.id, old.price, new.price); end"
)
APP_TRIGGER_BODY = (  # the same, as the world's INSTEAD OF UPDATE trigger runs it
    "INSERT INTO log(item, old, new) SELECT NEW.id, OLD.price, NEW.price "
    "WHERE NEW.price IS NOT OLD.price"
)


def make_row(t: Table, key: int | None, rng: random.Random, n: int) -> tuple:
    if t.name in ("items", "strict"):
        name = f"item {key}" if key is not None else f"new {rng.random()}"
        return (key, rng.randrange(CATEGORIES), rng.randrange(100, 100_000) / 100, name)
    if t.name == "orders":
        return (key, rng.randrange(1, n + 1), rng.randrange(1, 10))
    return (key, rng.randrange(1, n + 1), rng.randrange(1000), f"w{key}")


def update_sql(t: Table) -> str:
    return f"update {t.name} set {t.rest[0]} = ?, {t.rest[1]} = ? where id = ?"


def change_plan(t: Table, n: int, rng: random.Random, share: float = 0.01) -> list[tuple]:
    """``share`` of the table's rows changed: 80% updated, 10% deleted, as many inserted."""
    ids = rng.sample(range(1, n + 1), max(int(n * share), 10))
    plan: list[tuple] = []
    ins = f"insert into {t.name}({', '.join(t.rest)}) values ({', '.join('?' * len(t.rest))})"
    for k, key in enumerate(ids):
        if k % 10 == 0:
            plan.append((f"delete from {t.name} where id = ?", (key,)))
        elif k % 10 == 1:
            plan.append((ins, make_row(t, None, rng, n)[1:]))
        else:
            row = make_row(t, key, rng, n)
            plan.append((update_sql(t), (row[1], row[2], key)))
    return plan


# --- history of main (as chronos keeps it) --------------------------------------------------


def history_ddl(t: Table) -> list[str]:
    h = f"_h_{t.name}"
    cols = ", ".join(t.cols)
    olds = ", ".join(f"OLD.{c}" for c in t.cols)
    return [
        f"create table if not exists {h}(seq integer primary key, op integer not null, "
        f"{t.typed()})",
        f"create index if not exists {h}_key on {h}(id, seq)",
        f"create trigger if not exists {h}_ai after insert on {t.name} begin "
        f"insert into {h}(op, id) values (0, NEW.id); end",
        f"create trigger if not exists {h}_au after update on {t.name} begin "
        f"insert into {h}(op, {cols}) values (1, {olds}); "
        f"insert into {h}(op, id) select 0, NEW.id where NEW.id is not OLD.id; end",
        f"create trigger if not exists {h}_ad after delete on {t.name} begin "
        f"insert into {h}(op, {cols}) values (1, {olds}); end",
    ]


# --- the designs ----------------------------------------------------------------------------
#
# A design gives, for one table: the shadow tables it keeps in main (created once), the view
# (the TEMP view named like the table on the world's connection) and the INSTEAD OF triggers.
# ``S`` is the last history seq of the table at the fork: the world sees main as of S.

CTX = "temp._ctx"  # per connection: the statement's conflict mode (0 abort, 1 ignore, 2 replace)
MODE = f"(SELECT mode FROM {CTX})"


def refuse(cond: str, msg: str) -> str:
    """OR IGNORE skips the row, OR REPLACE goes on, anything else fails with SQLite's message."""
    return (
        f"SELECT CASE {MODE} WHEN 1 THEN RAISE(IGNORE) ELSE RAISE(ABORT, '{msg}') END "
        f"WHERE {MODE} != 2 AND {cond}"
    )


@dataclass
class Design:
    name: str
    about: str
    shadow: Callable[[Table], list[str]]
    view: Callable[[Table, int], str]
    triggers: Callable[[Table, int, str], list[str]]  # (table, S, app trigger body)
    sync: Callable[[apsw.Connection, Table, int], None] | None = None  # at a call's start
    states: tuple[str, ...] = ("world", "both")


# Per-world tables: the keys the world shadows (updated or deleted main rows) and the world's
# live rows, in a table made from main's own CREATE TABLE (so NOT NULL, CHECK, UNIQUE, types and
# the key's rules are SQLite's own) with main's indexes mirrored.


def k_of(t: Table) -> str:
    return f"main._w{WORLD}_{t.name}_k"


def l_of(t: Table) -> str:
    return f"main._w{WORLD}_{t.name}_l"


def per_world_shadow(t: Table) -> list[str]:
    return [f"create table {k_of(t)[5:]}(id integer primary key)"] + t.create(
        l_of(t)[5:], autoincrement=False
    )


# The keys a trigger shadows: one key (an expression, and a condition on shadowing it) or a
# SELECT of a column ``id`` (the rows an OR REPLACE deletes).
Keys = tuple[str, str] | str
Shadow = Callable[[Table, Keys], list[str]]  # statements that hide main's rows of those keys


def shadow_keys(t: Table, ids: Keys) -> list[str]:
    if isinstance(ids, tuple):
        key, cond = ids
        return [f"INSERT INTO {k_of(t)}(id) SELECT {key} WHERE {cond} ON CONFLICT DO NOTHING"]
    return [f"INSERT INTO {k_of(t)}(id) SELECT id FROM ({ids}) WHERE 1 ON CONFLICT DO NOTHING"]


def lean_triggers(
    t: Table, _s: int, app: str = "", history: bool = False, shadow: Shadow = shadow_keys
) -> list[str]:
    """The lean INSTEAD OF triggers on the per-world layout: base tables only (never the view),
    SQLite's own constraints on the live table, the shared counter in sqlite_sequence.

    Only the checks SQLite can't make on the live table are written out: the key and UNIQUE
    columns against main's rows the world did not shadow. (The live table's own NOT NULL,
    CHECK, UNIQUE and key errors name it, not the table: the caller maps the name back.)"""
    k, lv, name = k_of(t), l_of(t), t.name
    cols = t.collist()
    new = ", ".join(f"NEW.{c}" for c in t.rest)
    main_has = f"EXISTS (SELECT 1 FROM main.{name} WHERE id = NEW.id)"
    shadowed = f"EXISTS (SELECT 1 FROM {k} WHERE id = NEW.id)"
    wh = (
        [f"INSERT INTO main._wh_{name}(op, {cols}) SELECT 1, {cols} FROM {lv} WHERE id = OLD.id"]
        if history
        else []
    )
    uniq_ins: list[str] = []
    uniq_upd: list[str] = []
    for u in t.uniques:  # against main's rows the world did not shadow (its own: the live table)
        clash = (
            f"EXISTS (SELECT 1 FROM main.{name} AS m WHERE m.{u} = NEW.{u} "
            f"AND m.id NOT IN (SELECT id FROM {k}))"
        )
        msg = f"UNIQUE constraint failed: {name}.{u}"
        uniq_ins.append(refuse(f"NEW.{u} IS NOT NULL AND {clash}", msg))
        uniq_upd.append(refuse(f"NEW.{u} IS NOT OLD.{u} AND NEW.{u} IS NOT NULL AND {clash}", msg))
        replaced = f"SELECT m.id AS id FROM main.{name} AS m WHERE {MODE} = 2 AND m.{u} = NEW.{u}"
        uniq_ins += shadow(t, replaced)  # OR REPLACE: the main row it collides with goes
        uniq_upd += shadow(t, replaced + " AND m.id IS NOT OLD.id")
    counter = f"(SELECT seq FROM main.sqlite_sequence WHERE name = '{name}')"
    insert = [
        # the key first, as SQLite takes it (an insert that is then ignored still uses one)
        f"UPDATE main.sqlite_sequence SET seq = seq + 1 WHERE NEW.id IS NULL AND name = '{name}'",
        refuse(
            f"NEW.id IS NOT NULL AND {main_has} AND NOT {shadowed}",
            f"UNIQUE constraint failed: {name}.id",
        ),
        *shadow(t, ("NEW.id", f"NEW.id IS NOT NULL AND {main_has}")),
        *uniq_ins,
        f"INSERT INTO {lv}({cols}) VALUES (coalesce(NEW.id, {counter}), {new})",
        f"UPDATE main.sqlite_sequence SET seq = last_insert_rowid() WHERE NEW.id IS NOT NULL "
        f"AND name = '{name}' AND seq < last_insert_rowid()",
        f"UPDATE {CTX} SET n = n + 1",
    ]
    sets = ", ".join(f"{c} = excluded.{c}" for c in t.rest)
    update = [
        refuse(
            f"NEW.id IS NOT OLD.id AND (EXISTS (SELECT 1 FROM {lv} WHERE id = NEW.id) OR "
            f"({main_has} AND NOT {shadowed}))",
            f"UNIQUE constraint failed: {name}.id",
        ),
        *uniq_upd,
        *wh,
        *shadow(t, ("OLD.id", "1")),
        *shadow(t, ("NEW.id", f"NEW.id IS NOT OLD.id AND {main_has}")),
        f"DELETE FROM {lv} WHERE id = OLD.id AND NEW.id IS NOT OLD.id",
        f"INSERT INTO {lv}({cols}) VALUES (NEW.id, {new}) ON CONFLICT (id) DO UPDATE SET {sets}",
        f"UPDATE main.sqlite_sequence SET seq = NEW.id WHERE NEW.id IS NOT OLD.id "
        f"AND name = '{name}' AND seq < NEW.id",
        *([app] if app else []),
        f"UPDATE {CTX} SET n = n + 1",
    ]
    delete = [
        *wh,
        *shadow(t, ("OLD.id", "1")),
        f"DELETE FROM {lv} WHERE id = OLD.id",
        f"UPDATE {CTX} SET n = n + 1",
    ]
    return [
        f"CREATE TEMP TRIGGER _ii_{name} INSTEAD OF INSERT ON {name} BEGIN "
        + "; ".join(insert)
        + "; END",
        f"CREATE TEMP TRIGGER _iu_{name} INSTEAD OF UPDATE ON {name} BEGIN "
        + "; ".join(update)
        + "; END",
        f"CREATE TEMP TRIGGER _id_{name} INSTEAD OF DELETE ON {name} BEGIN "
        + "; ".join(delete)
        + "; END",
    ]


APP_COLUMNS = "price"  # the app trigger's UPDATE OF list


def split_triggers(t: Table, _s: int, app: str = "") -> list[str]:
    """The lean triggers cut for prepare: SQLite compiles only the triggers a statement can
    fire, and an UPDATE trigger with a column list only when the statement sets one of those
    columns. So an UPDATE that moves no key and sets no UNIQUE column compiles three short
    statements. Triggers on one event fire newest first: the checks are created last, the app's
    trigger (AFTER UPDATE on main) first."""
    k, lv, name = k_of(t), l_of(t), t.name
    cols = t.collist()
    new = ", ".join(f"NEW.{c}" for c in t.rest)
    main_has = f"EXISTS (SELECT 1 FROM main.{name} WHERE id = NEW.id)"
    shadowed = f"EXISTS (SELECT 1 FROM {k} WHERE id = NEW.id)"

    def clash(msg: str) -> str:  # OR REPLACE: go on (the caller shadows); OR IGNORE: skip
        return (
            f"CASE {MODE} WHEN 2 THEN 1 WHEN 1 THEN RAISE(IGNORE) "
            f"ELSE RAISE(ABORT, 'UNIQUE constraint failed: {name}.{msg}') END"
        )

    def unique_shadow(u: str, other: str = "") -> str:
        """Main's row holding NEW.u (not shadowed) refuses the row, or (OR REPLACE) goes."""
        return (
            f"INSERT INTO {k}(id) SELECT m.id FROM main.{name} AS m WHERE NEW.{u} IS NOT NULL "
            f"AND m.{u} = NEW.{u}{other} AND m.id NOT IN (SELECT id FROM {k}) AND {clash(u)} "
            "ON CONFLICT DO NOTHING"
        )

    counter = f"(SELECT seq FROM main.sqlite_sequence WHERE name = '{name}')"
    insert = [
        f"UPDATE main.sqlite_sequence SET seq = seq + 1 WHERE NEW.id IS NULL AND name = '{name}'",
        f"INSERT INTO {k}(id) SELECT NEW.id WHERE NEW.id IS NOT NULL AND {main_has} "
        f"AND NOT {shadowed} AND {clash('id')} ON CONFLICT DO NOTHING",
        *(unique_shadow(u) for u in t.uniques),
        f"INSERT INTO {lv}({cols}) VALUES (coalesce(NEW.id, {counter}), {new})",
        f"UPDATE main.sqlite_sequence SET seq = last_insert_rowid() WHERE NEW.id IS NOT NULL "
        f"AND name = '{name}' AND seq < last_insert_rowid()",
        f"UPDATE {CTX} SET n = n + 1",
    ]
    sets = ", ".join(f"{c} = excluded.{c}" for c in t.rest)
    write = [
        f"INSERT INTO {k}(id) VALUES (OLD.id) ON CONFLICT DO NOTHING",
        f"INSERT INTO {lv}({cols}) VALUES (OLD.id, {new}) ON CONFLICT (id) DO UPDATE SET {sets}",
        f"UPDATE {CTX} SET n = n + 1",
    ]
    move = [
        f"SELECT {clash('id')} WHERE EXISTS (SELECT 1 FROM {lv} WHERE id = NEW.id) "
        f"OR ({main_has} AND NOT {shadowed})",
        f"INSERT INTO {k}(id) VALUES (OLD.id) ON CONFLICT DO NOTHING",
        f"INSERT INTO {k}(id) SELECT NEW.id WHERE {main_has} ON CONFLICT DO NOTHING",
        f"DELETE FROM {lv} WHERE id IN (OLD.id, NEW.id)",
        f"INSERT INTO {lv}({cols}) VALUES (NEW.id, {new})",
        f"UPDATE main.sqlite_sequence SET seq = NEW.id WHERE name = '{name}' AND seq < NEW.id",
        f"UPDATE {CTX} SET n = n + 1",
    ]
    delete = [
        f"INSERT INTO {k}(id) VALUES (OLD.id) ON CONFLICT DO NOTHING",
        f"DELETE FROM {lv} WHERE id = OLD.id",
        f"UPDATE {CTX} SET n = n + 1",
    ]

    def trig(suffix: str, event: str, body: list[str], when: str = "") -> str:
        when = f" WHEN {when}" if when else ""
        return (
            f"CREATE TEMP TRIGGER _{suffix}_{name} INSTEAD OF {event} ON {name}{when} BEGIN "
            + "; ".join(body)
            + "; END"
        )

    out = []
    if app:
        out.append(trig("ia", f"UPDATE OF {APP_COLUMNS}", [app]))
    out += [
        trig("ii", "INSERT", insert),
        trig("iu", "UPDATE", write, "NEW.id IS OLD.id"),
        trig("ik", "UPDATE OF id", move, "NEW.id IS NOT OLD.id"),
        trig("id", "DELETE", delete),
    ]
    for u in t.uniques:
        out.append(
            trig(
                f"iq{u}",
                f"UPDATE OF {u}",
                [unique_shadow(u, " AND m.id IS NOT OLD.id")],
                f"NEW.{u} IS NOT OLD.{u}",
            )
        )
    return out


def main_minus(t: Table, how: str, s: int | None) -> str:
    """Main's rows the world did not shadow (and, with ``s``, that main did not change since)."""
    k = k_of(t)
    cols = t.collist("m.")
    since = ""
    if s is not None:
        since = (
            f" AND NOT EXISTS (SELECT 1 FROM main._h_{t.name} AS h WHERE h.id = m.id "
            f"AND h.seq > {s})"
        )
    if how == "notin":
        return (
            f"SELECT {cols} FROM main.{t.name} AS m WHERE m.id NOT IN (SELECT id FROM {k}){since}"
        )
    if how == "notexists":
        return (
            f"SELECT {cols} FROM main.{t.name} AS m WHERE NOT EXISTS "
            f"(SELECT 1 FROM {k} AS k WHERE k.id = m.id){since}"
        )
    if how == "antijoin":
        return (
            f"SELECT {cols} FROM main.{t.name} AS m LEFT JOIN {k} AS k ON k.id = m.id "
            f"WHERE k.id IS NULL{since}"
        )
    raise ValueError(how)


def past_arm(t: Table, s: int, exclude: str) -> str:
    """Rows main changed since S, as they were at S (the first history record after S, if it
    holds an image), minus the keys the world shadows."""
    h = f"main._h_{t.name}"
    return (
        f"SELECT {t.collist('h.')} FROM {h} AS h WHERE h.seq > {s} AND h.op = 1 "
        f"AND NOT EXISTS (SELECT 1 FROM {h} AS h2 WHERE h2.id = h.id AND h2.seq > {s} "
        f"AND h2.seq < h.seq) AND {exclude}"
    )


def two_arm(how: str, history: bool = True) -> Callable[[Table, int], str]:
    def view(t: Table, s: int) -> str:
        since = s if history and t.name in BOTH_TABLES.get("on", ()) else None
        arms = [main_minus(t, how, since)]
        if since is not None:
            arms.append(past_arm(t, s, f"h.id NOT IN (SELECT id FROM {k_of(t)})"))
        arms.append(f"SELECT {t.collist()} FROM {l_of(t)}")
        return " UNION ALL ".join(arms)

    return view


# Which tables main changed since the fork: set per run (state "both": all of them). The view
# of a table fits its state: the history arm only where main moved.
BOTH_TABLES: dict[str, tuple[str, ...]] = {}


def notin_hin_view(t: Table, s: int) -> str:
    """State "both" with main's changed keys probed by NOT IN (an ephemeral index built from
    history once per statement) instead of a correlated NOT EXISTS per row."""
    if t.name not in BOTH_TABLES.get("on", ()):
        return two_arm("notin")(t, s)
    k, h = k_of(t), f"main._h_{t.name}"
    main = (
        f"SELECT {t.collist('m.')} FROM main.{t.name} AS m WHERE m.id NOT IN (SELECT id FROM {k}) "
        f"AND m.id NOT IN (SELECT id FROM {h} WHERE seq > {s})"
    )
    return " UNION ALL ".join(
        [
            main,
            past_arm(t, s, f"h.id NOT IN (SELECT id FROM {k})"),
            f"SELECT {t.collist()} FROM {l_of(t)}",
        ]
    )


# Gaps: the main arm reads main's rows between consecutive shadowed keys by rowid ranges, so a
# scan pays no probe per row. Gaps are cut at multiples of GAP so a lookup finds its gap in a
# bounded range of the gap table.
GAP = 64
LOW, HIGH = -(1 << 62), 1 << 62


def g_of(t: Table) -> str:
    return f"main._w{WORLD}_{t.name}_g"


def gaps_shadow(t: Table) -> list[str]:
    return per_world_shadow(t) + [f"create table {g_of(t)[5:]}(lo integer primary key, hi int)"]


def gaps_first_write(conn: apsw.Connection, t: Table) -> None:
    """The gap table of a table the world starts changing: [lo, hi) ranges at every GAP."""
    top = conn.execute(f"select coalesce(max(id), 0) from main.{t.name}").fetchall()[0][0]
    rows = [(LOW, 0)] + [(a, a + GAP) for a in range(0, top + 1, GAP)]
    rows[-1] = (rows[-1][0], HIGH)
    conn.executemany(f"insert into {g_of(t)} values (?, ?)", rows)


def gaps_view(t: Table, s: int) -> str:
    main = (
        f"SELECT {t.collist('m.')} FROM {g_of(t)} AS g JOIN main.{t.name} AS m "
        f"ON m.id >= g.lo AND m.id < g.hi AND g.lo > m.id - {GAP + 1}"
    )
    return f"{main} UNION ALL SELECT {t.collist()} FROM {l_of(t)}"


def cut_gaps(t: Table, ids: Keys) -> list[str]:
    """Shadow keys for the gaps design: a key shadowed for the first time cuts its gap in two
    (the gap [lo, hi) holding it becomes [lo, id) and [id + 1, hi))."""
    g, k = g_of(t), k_of(t)
    if isinstance(ids, tuple):
        x, cond = ids
        near = f"lo <= {x} AND lo > {x} - {GAP + 1}"
        fresh = f"{cond} AND {x} NOT IN (SELECT id FROM {k})"
        return [
            f"INSERT INTO {g}(lo, hi) SELECT {x} + 1, hi FROM {g} WHERE {near} "
            f"AND hi > {x} + 1 AND {fresh}",
            f"UPDATE {g} SET hi = {x} WHERE {near} AND hi > {x} AND {fresh}",
            f"DELETE FROM {g} WHERE lo = {x} AND hi = {x}",
            *shadow_keys(t, ids),
        ]
    near = f"g.lo <= s.id AND g.lo > s.id - {GAP + 1}"
    fresh = f"s.id NOT IN (SELECT id FROM {k})"
    return [
        f"INSERT INTO {g}(lo, hi) SELECT s.id + 1, g.hi FROM ({ids}) AS s JOIN {g} AS g "
        f"ON {near} AND g.hi > s.id + 1 WHERE {fresh}",
        f"UPDATE {g} AS g SET hi = s.id FROM ({ids}) AS s WHERE {near} AND g.hi > s.id AND {fresh}",
        f"DELETE FROM {g} WHERE lo IN (SELECT id FROM ({ids})) AND hi = lo",
        *shadow_keys(t, ids),
    ]


def gaps_triggers(t: Table, s: int, app: str = "") -> list[str]:
    return lean_triggers(t, s, app, shadow=cut_gaps)


# Shared layout: one key table and one live table for all worlds, keyed (world, id).


def shared_shadow(t: Table) -> list[str]:
    name = t.name
    out = [
        f"create table _s_{name}_k(world int, id integer, primary key (world, id)) without rowid",
        f"create table _s_{name}_l(world int, {t.typed()}, primary key (world, id)) without rowid",
    ]
    out += [f"create index _s_{name}_l_{sfx} on _s_{name}_l(world, {c})" for sfx, c in t.indexes]
    return out


def shared_view(how: str) -> Callable[[Table, int], str]:
    def view(t: Table, s: int) -> str:
        k = f"main._s_{t.name}_k"
        if how == "notexists":
            main = (
                f"SELECT {t.collist('m.')} FROM main.{t.name} AS m WHERE NOT EXISTS "
                f"(SELECT 1 FROM {k} AS k WHERE k.world = {WORLD} AND k.id = m.id)"
            )
        else:
            main = (
                f"SELECT {t.collist('m.')} FROM main.{t.name} AS m WHERE m.id NOT IN "
                f"(SELECT id FROM {k} WHERE world = {WORLD})"
            )
        return (
            f"{main} UNION ALL SELECT {t.collist()} FROM main._s_{t.name}_l WHERE world = {WORLD}"
        )

    return view


def shared_triggers(t: Table, s: int, app: str = "") -> list[str]:
    name = t.name
    k, lv = f"main._s_{name}_k", f"main._s_{name}_l"
    cols, new = t.collist(), ", ".join(f"NEW.{c}" for c in t.rest)
    sets = ", ".join(f"{c} = excluded.{c}" for c in t.rest)
    insert = (
        f"INSERT INTO {lv}(world, {cols}) VALUES ({WORLD}, coalesce(NEW.id, (SELECT seq + 1 "
        f"FROM main.sqlite_sequence WHERE name = '{name}')), {new}); "
        f"UPDATE main.sqlite_sequence SET seq = (SELECT max(id) FROM {lv} WHERE world = {WORLD}) "
        f"WHERE name = '{name}' AND seq < (SELECT max(id) FROM {lv} WHERE world = {WORLD})"
    )
    update = (
        f"INSERT INTO {k} VALUES ({WORLD}, OLD.id) ON CONFLICT DO NOTHING; "
        f"INSERT INTO {lv}(world, {cols}) VALUES ({WORLD}, NEW.id, {new}) "
        f"ON CONFLICT (world, id) DO UPDATE SET {sets}"
    )
    delete = (
        f"INSERT INTO {k} VALUES ({WORLD}, OLD.id) ON CONFLICT DO NOTHING; "
        f"DELETE FROM {lv} WHERE world = {WORLD} AND id = OLD.id"
    )
    return [
        f"CREATE TEMP TRIGGER _ii_{name} INSTEAD OF INSERT ON {name} BEGIN {insert}; END",
        f"CREATE TEMP TRIGGER _iu_{name} INSTEAD OF UPDATE ON {name} BEGIN {update}; END",
        f"CREATE TEMP TRIGGER _id_{name} INSTEAD OF DELETE ON {name} BEGIN {delete}; END",
    ]


# The layout chronos has today: one overlay (world, key) -> row or tombstone, and one
# three-arm view for every table whatever its state (worldviews.view_select, written out).


def current_shadow(t: Table) -> list[str]:
    name = t.name
    return [
        f"create table _o_{name}(wld integer not null, seq integer not null, dead integer not null "
        f"default 0, {t.typed()}, primary key (wld, id)) without rowid",
        f"create index _o_{name}_k on _o_{name}(wld, id)",
    ]


def current_view(t: Table, s: int) -> str:
    o, h, name = f"main._o_{t.name}", f"main._h_{t.name}", t.name
    untouched = (
        f"(NOT EXISTS (SELECT 1 FROM {o} WHERE wld = {WORLD}) OR NOT EXISTS "
        f"(SELECT 1 FROM {o} AS o INDEXED BY _o_{name}_k WHERE o.wld = {WORLD} AND o.id = m.id))"
    )
    unchanged = (
        f"((SELECT coalesce(max(seq), 0) FROM {h}) <= {s} OR NOT EXISTS "
        f"(SELECT 1 FROM {h} AS h WHERE h.id = m.id AND h.seq > {s}))"
    )
    live = f"SELECT {t.collist('m.')} FROM main.{name} AS m WHERE {untouched} AND {unchanged}"
    past = past_arm(
        t, s, f"NOT EXISTS (SELECT 1 FROM {o} AS o WHERE o.wld = {WORLD} AND o.id = h.id)"
    )
    own = f"SELECT {t.collist()} FROM {o} WHERE wld = {WORLD} AND dead = 0"
    return f"{live} UNION ALL {past} UNION ALL {own}"


def current_triggers(t: Table, s: int, app: str = "") -> list[str]:
    """Only to build the overlay for the reads (chronos' real triggers: see bench_worlds)."""
    name, o = t.name, f"main._o_{t.name}"
    cols, new = t.collist(), ", ".join(f"NEW.{c}" for c in t.rest)
    sets = ", ".join(f"{c} = excluded.{c}" for c in t.rest)
    nulls = ", ".join(f"{c} = NULL" for c in t.rest)
    return [
        f"CREATE TEMP TRIGGER _ii_{name} INSTEAD OF INSERT ON {name} BEGIN "
        f"UPDATE main.sqlite_sequence SET seq = seq + 1 WHERE name = '{name}'; "
        f"INSERT INTO {o}(wld, seq, dead, {cols}) VALUES ({WORLD}, 1, 0, (SELECT seq FROM "
        f"main.sqlite_sequence WHERE name = '{name}'), {new}); END",
        f"CREATE TEMP TRIGGER _iu_{name} INSTEAD OF UPDATE ON {name} BEGIN "
        f"INSERT INTO {o}(wld, seq, dead, {cols}) VALUES ({WORLD}, 1, 0, NEW.id, {new}) "
        f"ON CONFLICT (wld, id) DO UPDATE SET dead = 0, {sets}; END",
        f"CREATE TEMP TRIGGER _id_{name} INSTEAD OF DELETE ON {name} BEGIN "
        f"INSERT INTO {o}(wld, seq, dead, id) VALUES ({WORLD}, 1, 1, OLD.id) "
        f"ON CONFLICT (wld, id) DO UPDATE SET dead = 1, {nulls}; END",
    ]


# Pinned: state "both" turned into state "world". At the start of a call, when main's history
# moved past what the world last saw, the world's connection copies main's rows as of S for the
# keys main changed (and the world did not) into the world's own tables: the key table hides
# main's row, the live table holds the row as of S (none if main inserted it after S). Reads
# then need no history arm, and the triggers check uniqueness against main as they do in state
# "world". (A merge must tell these rows from the world's own: the ``_p`` table lists them.)

PINNED_AT: dict[str, int] = {}


def pinned_shadow(t: Table) -> list[str]:
    return per_world_shadow(t) + [f"create table _w{WORLD}_{t.name}_p(id integer primary key)"]


def pin(conn: apsw.Connection, t: Table, s: int) -> None:
    h, k, lv, p = f"main._h_{t.name}", k_of(t), l_of(t), f"main._w{WORLD}_{t.name}_p"
    last = PINNED_AT.get(t.name, s)
    top = conn.execute(f"select coalesce(max(seq), 0) from {h}").fetchall()[0][0]
    if top <= last:
        return
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        f"INSERT INTO {p}(id) SELECT DISTINCT id FROM {h} WHERE seq > {last} "
        f"AND id NOT IN (SELECT id FROM {k}) ORDER BY id"
    )
    conn.execute(
        f"INSERT INTO {lv}({t.collist()}) SELECT {t.collist('h.')} FROM {p} AS p "
        f"JOIN {h} AS h ON h.id = p.id AND h.seq = (SELECT min(seq) FROM {h} AS h2 "
        f"WHERE h2.id = p.id AND h2.seq > {s}) WHERE p.id NOT IN (SELECT id FROM {k}) "
        "AND h.op = 1"
    )
    conn.execute(f"INSERT INTO {k}(id) SELECT id FROM {p} WHERE id NOT IN (SELECT id FROM {k})")
    conn.execute("COMMIT")
    PINNED_AT[t.name] = top


def wh_shadow(t: Table) -> list[str]:
    return per_world_shadow(t) + [
        f"create table _wh_{t.name}(seq integer primary key, op integer, {t.typed()})"
    ]


def wh_triggers(t: Table, s: int, app: str = "") -> list[str]:
    return lean_triggers(t, s, app, history=True)


DESIGNS = {
    d.name: d
    for d in (
        Design(
            "current",
            "chronos today: shared overlay with tombstones, one 3-arm view for every state",
            current_shadow,
            current_view,
            current_triggers,
        ),
        Design(
            "notin",
            "per-world key table + live table (main's DDL and indexes); main arm "
            "id NOT IN (SELECT id FROM keys); history arm only when main moved",
            per_world_shadow,
            two_arm("notin"),
            lean_triggers,
        ),
        Design(
            "notexists",
            "as notin, main arm NOT EXISTS (SELECT 1 FROM keys WHERE id = m.id)",
            per_world_shadow,
            two_arm("notexists"),
            lean_triggers,
        ),
        Design(
            "antijoin",
            "as notin, main arm LEFT JOIN keys ... WHERE keys.id IS NULL",
            per_world_shadow,
            two_arm("antijoin"),
            lean_triggers,
        ),
        Design(
            "gaps",
            f"main arm: rowid ranges between shadowed keys (cut every {GAP} ids), no probe per row",
            gaps_shadow,
            gaps_view,
            gaps_triggers,
            states=("world",),
        ),
        Design(
            "shared",
            "one key table and one live table (world, id) for all worlds; NOT EXISTS",
            shared_shadow,
            shared_view("notexists"),
            shared_triggers,
            states=("world",),
        ),
        Design(
            "shared-notin",
            "as shared, main arm NOT IN (SELECT id FROM keys WHERE world = W)",
            shared_shadow,
            shared_view("notin"),
            shared_triggers,
            states=("world",),
        ),
        Design(
            "notin-split",
            "as notin, the triggers split by column lists so a statement compiles only what it "
            "can fire (writes only)",
            per_world_shadow,
            two_arm("notin"),
            split_triggers,
            states=(),
        ),
        Design(
            "notin-wh",
            "as notin, the triggers also keep the world's history (the live row before each "
            "update or delete; writes only)",
            wh_shadow,
            two_arm("notin"),
            wh_triggers,
            states=(),
        ),
        Design(
            "notin-hin",
            "as notin; main's changed keys probed by NOT IN (SELECT id FROM history WHERE "
            "seq > S), an ephemeral index per statement",
            per_world_shadow,
            notin_hin_view,
            lean_triggers,
            states=("both",),
        ),
        Design(
            "pinned",
            "as notin; main's rows as of S that main changed copied into the world's tables at "
            "a call's start (no history arm)",
            pinned_shadow,
            two_arm("notin", history=False),
            lean_triggers,
            sync=pin,
            states=("both",),
        ),
    )
}


# --- building a world -----------------------------------------------------------------------


QPSG = [True]  # SQLITE_DBCONFIG_ENABLE_QPSG on every connection (--qpsg)


def connect(path: Path, cache: str) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(60_000)
    # Without the query planner stability guarantee, SQLite 3.54 re-prepares a statement that
    # joins tables each time a parameter is bound (the varmask of constant propagation): a
    # world's statement recompiles its views on every run.
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, int(QPSG[0]))
    conn.execute("pragma synchronous = normal; pragma temp_store = memory")
    if cache == "hot":
        conn.execute("pragma cache_size = -1000000")
    return conn


def build_base(path: Path, rows: int, chain: int, seed: int, tables: tuple[Table, ...]) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("pragma journal_mode = wal")
    rng = random.Random(seed)
    conn.execute("BEGIN")
    for t in tables:
        n = chain if t.name.startswith("c") else rows
        for ddl in t.create():
            conn.execute(ddl)
        conn.executemany(
            f"insert into {t.name} values ({', '.join('?' * len(t.cols))})",
            (make_row(t, i, rng, n) for i in range(1, n + 1)),
        )
        for ddl in history_ddl(t):
            conn.execute(ddl)
    conn.execute("COMMIT")
    # Some history before the fork, as a live database has (the fork point S follows it).
    apply_plans(conn, tables, rows, chain, random.Random(seed + 1), 0.005)
    conn.execute("pragma wal_checkpoint(truncate)")
    conn.close()


def apply_plans(
    conn: apsw.Connection,
    tables: tuple[Table, ...],
    rows: int,
    chain: int,
    rng: random.Random,
    share: float = 0.01,
) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for t in tables:
        n = chain if t.name.startswith("c") else rows
        for sql, params in change_plan(t, n, rng, share):
            conn.execute(sql, params)
    conn.execute("COMMIT")


def forks(conn: apsw.Connection, tables: tuple[Table, ...]) -> dict[str, int]:
    return {
        t.name: conn.execute(f"select coalesce(max(seq), 0) from _h_{t.name}").fetchall()[0][0]
        for t in tables
    }


@dataclass
class World:
    design: Design
    state: str
    main: apsw.Connection
    conn: apsw.Connection
    copy: apsw.Connection
    seqs: dict[str, int] = field(default_factory=dict)

    def sync(self, tables: tuple[Table, ...]) -> None:
        if self.design.sync:
            for t in tables:
                self.design.sync(self.conn, t, self.seqs[t.name])

    def close(self) -> None:
        for c in (self.main, self.conn, self.copy):
            c.close()


def put_world_objects(
    conn: apsw.Connection,
    design: Design,
    tables: tuple[Table, ...],
    seqs: dict[str, int],
    apps: dict[str, str] | None = None,
) -> None:
    conn.execute(
        "create temp table if not exists _ctx(id integer primary key, mode int not null "
        "default 0, n int not null default 0); insert or ignore into temp._ctx(id) values (1)"
    )
    for t in tables:
        conn.execute(f"create temp view {t.name} as {design.view(t, seqs[t.name])}")
        for trig in design.triggers(t, seqs[t.name], (apps or {}).get(t.name, "")):
            conn.execute(trig)


def make_world(
    base: Path,
    work: Path,
    design: Design,
    state: str,
    tables: tuple[Table, ...],
    rows: int,
    chain: int,
    cache: str,
    seed: int,
) -> World:
    path = work / f"{design.name}-{state}.sqlite"
    copy_path = work / f"{design.name}-{state}-copy.sqlite"
    shutil.copyfile(base, path)
    main = connect(path, cache)
    main.execute("BEGIN")
    for t in tables:
        for ddl in design.shadow(t):
            main.execute(ddl)
    if design.name == "current":  # world 2's rows share the overlay
        for t in tables:
            main.execute(
                f"insert into _o_{t.name}(wld, seq, dead, {t.collist()}) select 2, 1, 0, "
                f"{t.collist()} from {t.name} where id % 97 = 0"
            )
    if design.name.startswith("shared"):
        for t in tables:
            main.execute(
                f"insert into _s_{t.name}_l(world, {t.collist()}) select 2, {t.collist()} "
                f"from {t.name} where id % 97 = 0"
            )
            main.execute(f"insert into _s_{t.name}_k select 2, id from {t.name} where id % 97 = 0")
    if design.name == "gaps":
        start = time.perf_counter()
        for t in tables:
            gaps_first_write(main, t)
        ONE_OFF[f"gaps: gap tables made at the first write ({rows:,} rows)"] = (
            time.perf_counter() - start
        )
    main.execute("COMMIT")
    seqs = forks(main, tables)
    shutil.copyfile(path, copy_path)  # the copy: main at the fork, as plain tables
    copy = connect(copy_path, cache)
    BOTH_TABLES["on"] = tuple(t.name for t in tables) if state == "both" else ()
    PINNED_AT.clear()
    conn = connect(path, cache)
    put_world_objects(conn, design, tables, seqs)
    world = World(design, state, main, conn, copy, seqs)
    # the world's changes, through its views (and the same statements on the copy)
    apply_plans(conn, tables, rows, chain, random.Random(seed + 2))
    apply_plans(copy, tables, rows, chain, random.Random(seed + 2))
    if state == "both":  # then main moves on: the world must still see main as of the fork
        apply_plans(main, tables, rows, chain, random.Random(seed + 3))
    start = time.perf_counter()
    world.sync(tables)
    if design.sync:
        what = f"{design.name}: sync after main changed 1% ({rows:,} rows, {len(tables)} tables)"
        ONE_OFF[what] = time.perf_counter() - start
    return world


ONE_OFF: dict[str, float] = {}  # one-off costs of a design (seconds), printed at the end


# --- the query shapes -----------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    sql: str
    params: list[tuple] | None  # run once per tuple; None: once
    target: float | None  # at most this ratio; None: information
    ordered: bool = False  # compare results in order (else as sorted lists)


def shapes(rows: int, chain: int, rng: random.Random, lookups: int) -> list[Shape]:
    ids = [(rng.randrange(1, rows + 1),) for _ in range(lookups)]
    cids = [(rng.randrange(1, chain + 1),) for _ in range(max(lookups // 4, 50))]
    out = [
        Shape("point lookup", "select * from items where id = ?", ids, 1.3),
        Shape(
            "range (index)",
            "select count(*), avg(price) from items where category = ?",
            [(c,) for c in range(10)],
            1.5,
        ),
        Shape("sum", "select sum(price) from items", None, 2.5),
        Shape("count(*)", "select count(*) from items", None, 4),
        Shape(
            "join 2 tables",
            "select sum(o.qty * i.price) from orders o join items i on i.id = o.item_id",
            None,
            3,
        ),
        Shape(
            "order by pk offset",
            f"select * from items order by id limit 100 offset {rows // 2}",
            None,
            4,
            ordered=True,
        ),
    ]
    for k in range(1, 6):
        sel = ", ".join(f"c{i}.v" for i in range(1, k + 1))
        joins = "".join(f" join c{i} on c{i}.id = c{i - 1}.ref" for i in range(2, k + 1))
        out.append(
            Shape(
                f"key join {k} table{'s' if k > 1 else ''}",
                f"select {sel} from c1{joins} where c1.id = ?",
                cids,
                None,
            )
        )
    return out


def run(conn: apsw.Connection, shape: Shape) -> list:
    if shape.params is None:
        return conn.execute(shape.sql).fetchall()
    out = []
    for p in shape.params:
        out += conn.execute(shape.sql, p).fetchall()
    return out


def same(a: list, b: list, ordered: bool) -> bool:
    if not ordered:
        a, b = sorted(a, key=repr), sorted(b, key=repr)
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def check(world: World, shape_list: list[Shape]) -> list[str]:
    """The world against its copy: the shapes whose results differ."""
    return [
        s.name for s in shape_list if not same(run(world.conn, s), run(world.copy, s), s.ordered)
    ]


# --- reads: the table of figures ------------------------------------------------------------


def bench_reads(
    world: World, shape_list: list[Shape], rounds: int
) -> dict[str, tuple[float, float]]:
    out = {}
    for s in shape_list:
        jobs = {
            "main": lambda s=s: timed(lambda: run(world.main, s)),
            "world": lambda s=s: timed(lambda: run(world.conn, s)),
        }
        slow = jobs["world"]()  # (a first run, untimed: warms the caches; a slow shape
        n = rounds + 2 if slow < 1 else 2  # -- a 3^5-arm join -- gets two rounds)
        best = best_of(n, jobs)
        per = len(s.params) if s.params else 1
        out[s.name] = (best["main"] / per, best["world"] / per)
    return out


COUNT_REWRITE = (  # count(*) as chronos could run it instead of through the view
    "select (select count(*) from main.items) - (select count(*) from main._w1_items_k AS k "
    "cross join main.items AS m on m.id = k.id) + (select count(*) from main._w1_items_l)"
)


def bench_count_rewrite(world: World, rounds: int) -> dict[str, tuple[float, float]]:
    """``select count(*) from items`` rewritten into three counts (not a view: the statement
    itself would be rewritten): main's count is SQLite's O(pages) count of a whole b-tree."""
    want = world.copy.execute("select count(*) from items").fetchall()
    got = world.conn.execute(COUNT_REWRITE).fetchall()
    assert want == got, (want, got)
    best = best_of(
        rounds,
        {
            "main": lambda: timed(
                lambda: world.main.execute("select count(*) from items").fetchall()
            ),
            "world": lambda: timed(lambda: world.conn.execute(COUNT_REWRITE).fetchall()),
        },
    )
    return {"count(*), statement rewritten": (best["main"], best["world"])}


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.2f} ms"


def verdict(ratio: float, target: float | None) -> tuple[str, str]:
    if target is None:
        return "(info)", ""
    return f"<= {target:g}", "PASS" if ratio <= target else "MISS"


def print_reads(
    title: str, results: dict[str, dict[str, tuple[float, float]]], shape_list: list[Shape]
) -> None:
    print(f"\n{title}")
    lines = [("shape", "design", "main", "world", "ratio", "target", "result")]
    names = [s.name for s in shape_list]
    extra = sorted({n for f in results.values() for n in f if n not in names})
    targets = {s.name: s.target for s in shape_list} | dict.fromkeys(extra, 4.0)
    for s in [*shape_list, *(Shape(n, "", None, targets[n]) for n in extra)]:
        for design, figures in results.items():
            if s.name not in figures:
                continue
            m, w = figures[s.name]
            target, result = verdict(w / m, s.target)
            lines.append(
                (s.name, design, fmt_time(m), fmt_time(w), f"{w / m:.2f}x", target, result)
            )
    for design, figures in results.items():
        if "key join 5 tables" in figures and "key join 2 tables" in figures:
            r5 = figures["key join 5 tables"][1] / figures["key join 5 tables"][0]
            r2 = figures["key join 2 tables"][1] / figures["key join 2 tables"][0]
            target, result = verdict(r5 / r2, 1.5)
            lines.append(
                (
                    "key join 5 / key join 2",
                    design,
                    f"{r2:.2f}x",
                    f"{r5:.2f}x",
                    f"{r5 / r2:.2f}x",
                    target,
                    result,
                )
            )
    print(aligned(lines), flush=True)


# --- writes and prepare ---------------------------------------------------------------------


def write_world(
    path: Path,
    design: Design,
    tables: tuple[Table, ...],
    cache: str,
    apps: dict[str, str] | None = None,
) -> apsw.Connection:
    conn = connect(path, cache)
    put_world_objects(conn, design, tables, forks(conn, tables), apps)
    return conn


def in_transaction(conn: apsw.Connection, sql: str, params: list[tuple]) -> float:
    def go() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, params)
        conn.execute("COMMIT")

    return timed(go)


Factory = Callable[[Path, tuple[Table, ...], str, str], apsw.Connection]
KEEP: list = []  # chronos databases opened for the package's rows (closed at the end)


def design_world(d: Design) -> Factory:
    """A world of design ``d`` on the plain file at ``path``: its shadow tables, then a
    connection with its views and triggers."""

    def make(path: Path, tables: tuple[Table, ...], app: str, cache: str) -> apsw.Connection:
        BOTH_TABLES["on"] = ()  # state "world": main did not move since the fork
        m = apsw.Connection(str(path))
        m.execute("BEGIN")
        for tt in tables:
            for ddl in d.shadow(tt) + history_ddl(tt):
                m.execute(ddl)
            if d.name == "gaps":
                gaps_first_write(m, tt)
        m.execute("COMMIT")
        m.close()
        return write_world(path, d, tables, cache, {tables[0].name: app} if app else None)

    return make


def package_world(path: Path, tables: tuple[Table, ...], app: str, cache: str) -> apsw.Connection:
    """The package as it is: ``chronos_lite.init`` adopting the file, a fork, its session."""
    import chronos_lite  # (only here: the study itself runs on plain apsw)

    db = chronos_lite.init(path.with_suffix(""), from_file=path)
    KEEP.append(db)
    db.fork("w")
    return db.database.session("w").conn


def bench_writes(
    work: Path, rows: int, batch: int, rounds: int, cache: str, writers: dict[str, Factory]
) -> None:
    """Rows/s of single-row INSERTs and UPDATEs in one transaction: a world (fresh shadow tables
    each round) against a plain file, plain and with constraints and an app trigger."""
    print(
        f"\nwrites: batches of {batch:,} single-row statements into {rows:,} rows, one "
        f"transaction; best of {rounds}"
    )
    lines = [
        ("table", "design", "kind", "plain rows/s", "world rows/s", "ratio", "target", "result")
    ]
    for t, app in ((ITEMS, ""), (STRICT, APP_TRIGGER_BODY)):
        plain = work / f"w-{t.name}-plain.sqlite"
        conn = apsw.Connection(str(plain))
        conn.execute("pragma journal_mode = wal")
        rng = random.Random(9)
        for ddl in t.create() + (LOG.create() if app else []) + ([APP_TRIGGER] if app else []):
            conn.execute(ddl)
        conn.execute("BEGIN")
        conn.executemany(
            f"insert into {t.name} values (?, ?, ?, ?)",
            (make_row(t, i, rng, rows) for i in range(1, rows + 1)),
        )
        conn.execute("COMMIT")
        conn.close()
        tables = (t, LOG) if app else (t,)
        names = [n for n in writers if not (app and n == "chronos (package)")]
        best: dict[tuple[str, str], float] = {}
        for r in range(rounds):
            new = [make_row(t, None, rng, rows)[1:] for _ in range(batch)]
            ids = rng.sample(range(1, rows + 1), batch)
            upd = [(rng.randrange(CATEGORIES), rng.randrange(100, 100_000) / 100, i) for i in ids]
            ins_sql = f"insert into {t.name}({', '.join(t.rest)}) values (?, ?, ?)"
            raw = work / f"w-{t.name}-raw{r}.sqlite"
            shutil.copyfile(plain, raw)
            conns = {"plain": connect(raw, cache)}
            for i, name in enumerate(names):
                path = work / f"w-{t.name}-{i}-{r}.sqlite"
                shutil.copyfile(plain, path)
                conns[name] = writers[name](path, tables, app, cache)
            order = list(conns) if r % 2 == 0 else list(reversed(conns))
            for kind, sql, params in (("insert", ins_sql, new), ("update", update_sql(t), upd)):
                for name in order:
                    sec = in_transaction(conns[name], sql, params)
                    best[(name, kind)] = min(best.get((name, kind), math.inf), sec)
            for c in conns.values():
                c.close()
            while KEEP:
                KEEP.pop().close()
        target = 1 / 4 if app else 1 / 3
        for kind in ("insert", "update"):
            base = batch / best[("plain", kind)]
            for name in names:
                rate = batch / best[(name, kind)]
                ratio = rate / base
                lines.append(
                    (
                        t.name + (" + trigger" if app else ""),
                        name,
                        kind,
                        f"{base:,.0f}",
                        f"{rate:,.0f}",
                        f"{ratio:.3f}x",
                        f">= 1/{round(1 / target)}",
                        "PASS" if ratio >= target else "MISS",
                    )
                )
    print(aligned(lines), flush=True)


def trivial_triggers(t: Table, _s: int, _app: str = "") -> list[str]:
    """INSTEAD OF triggers that do nothing: the floor of a write statement's prepare on a view."""
    return [
        f"CREATE TEMP TRIGGER _i{e[0].lower()}_{t.name} INSTEAD OF {e} ON {t.name} BEGIN "
        "SELECT 1; END"
        for e in ("INSERT", "UPDATE", "DELETE")
    ]


FLOOR = Design(
    "floor",
    "the notin view with triggers that do nothing (prepare only)",
    per_world_shadow,
    two_arm("notin"),
    trivial_triggers,
)


def bench_prepare(
    work: Path, rows: int, rounds: int, cache: str, writers: dict[str, Factory]
) -> None:
    """A new statement text each time (a counter in a comment): prepare (and a run that touches
    no row) on main (a table with chronos' history triggers) and on a world."""
    plain = work / "prep.sqlite"
    build_base(plain, rows, 1000, 11, (ITEMS,))
    stmts = {
        "select by key": "select * from items where id = -1 /*{n}*/",
        "insert": "insert into items(category, price, name) select 1, 2.0, 'x' where 0 /*{n}*/",
        "update": "update items set price = 1.0 where id = -1 /*{n}*/",
        "delete": "delete from items where id = -1 /*{n}*/",
    }
    counter = iter(range(10**9))
    conns: dict[str, apsw.Connection] = {"main": connect(plain, cache)}
    for i, (name, make) in enumerate(writers.items()):
        path = work / f"prep-{i}.sqlite"
        shutil.copyfile(plain, path)
        conns[name] = make(path, (ITEMS,), "", cache)
        conns[name].execute("update items set price = price where id = 1")  # a changed table

    def job(conn: apsw.Connection, text: str) -> Callable[[], float]:
        def go() -> float:
            texts = [text.format(n=next(counter)) for _ in range(100)]
            cur = conn.cursor()
            start = time.perf_counter()
            for sql in texts:
                cur.execute(sql, can_cache=False).fetchall()
            return (time.perf_counter() - start) / len(texts)

        return go

    print(f"\nprepare: a new statement text each time (best of {rounds} rounds of 100)")
    lines = [("statement", "design", "main", "world", "ratio", "target", "result")]
    for kind, text in stmts.items():
        best = best_of(rounds, {name: job(c, text) for name, c in conns.items()})
        for name in writers:
            ratio = best[name] / best["main"]
            lines.append(
                (
                    kind,
                    name,
                    fmt_time(best["main"]),
                    fmt_time(best[name]),
                    f"{ratio:.2f}x",
                    "<= 2",
                    "PASS" if ratio <= 2 else "MISS",
                )
            )
    for c in conns.values():
        c.close()
    while KEEP:
        KEEP.pop().close()
    print(aligned(lines), flush=True)


# --- the triggers keep SQLite's rules ---------------------------------------------------------

RULES = [  # statements on the constrained table, run on a world and on a plain copy
    "insert into strict(category, price, name) values (1, 2.0, 'a1')",
    "insert into strict(id, category, price, name) values (5, 1, 2.0, 'x')",
    "insert or ignore into strict(id, category, price, name) values (5, 1, 2.0, 'x')",
    "insert or replace into strict(id, category, price, name) values (5, 2, 3.0, 'x5')",
    "insert into strict(category, price, name) values (null, 1.0, 'n')",
    "insert into strict(category, price, name) values (-1, 1.0, 'c')",
    "insert into strict(category, price, name) values (1, 1.0, 'item 7')",
    "insert or ignore into strict(category, price, name) values (1, 1.0, 'item 7')",
    "insert or replace into strict(category, price, name) values (1, 1.0, 'item 8')",
    "insert into strict(id, category, price, name) values ('abc', 1, 1.0, 'z')",
    "insert into strict(id, category, price, name) values ('77', 1, 1.0, 'z77')",
    "update strict set price = 9.5 where id = 3",
    "update strict set name = 'item 4' where id = 3",
    "update strict set price = -1 where id = 3",
    "update strict set category = null where id = 3",
    "delete from strict where id = 4",
    "insert into strict(category, price, name) values (1, 1.0, 'item 4')",
    "update strict set id = 100 where id = 3",
    "update strict set id = 6 where id = 100",
    "update or ignore strict set name = 'item 9' where id = 10",
    "update strict set price = price + 1 where category = 5",
    "update or replace strict set name = 'item 12' where id = 11",
    "update strict set name = 'a1' where id = 13",
    "delete from strict where category = 7",
    "insert into strict(id, category, price, name) values (7, 1, 1.0, 'back')",
]


def check_rules(work: Path, design: Design) -> list[str]:
    """Each statement of RULES on a world (its triggers) and on a plain copy: the same error
    message (the live table's name read as the table's) or the same rows after it."""
    plain = work / f"rules-{design.name}.sqlite"
    conn = apsw.Connection(str(plain))
    rng = random.Random(3)
    for ddl in STRICT.create() + LOG.create() + [APP_TRIGGER]:
        conn.execute(ddl)
    conn.executemany(
        "insert into strict values (?, ?, ?, ?)",
        (make_row(STRICT, i, rng, 50) for i in range(1, 51)),
    )
    conn.close()
    copy_path = work / f"rules-{design.name}-copy.sqlite"
    shutil.copyfile(plain, copy_path)
    copy = apsw.Connection(str(copy_path))
    world = design_world(design)(plain, (STRICT, LOG), APP_TRIGGER_BODY, "default")
    bad = []
    for sql in RULES:
        mode = 2 if " or replace " in sql else 1 if " or ignore " in sql else 0
        world.execute("update temp._ctx set mode = ?", (mode,))
        out = []
        for c in (world, copy):
            try:
                c.execute(sql)
                out.append("ok")
            except apsw.Error as e:
                out.append(f"{type(e).__name__}: {e}".replace(f"_w{WORLD}_strict_l", "strict"))
        rows = [
            c.execute("select * from strict order by id").fetchall()
            + c.execute("select * from log order by id").fetchall()
            for c in (world, copy)
        ]
        if out[0] != out[1] or rows[0] != rows[1]:
            bad.append(
                f"{sql}: world {out[0]}, copy {out[1]}"
                + ("" if rows[0] == rows[1] else " (rows differ)")
            )
    world.close()
    copy.close()
    return bad


# --- main -----------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of items and orders")
    p.add_argument(
        "--big", type=int, default=5_000_000, help="rows of the lookup and range run (0: skip it)"
    )
    p.add_argument("--chain", type=int, default=20_000, help="rows of each chain table")
    p.add_argument("--check", type=int, default=3_000, help="rows of the correctness run")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--lookups", type=int, default=2_000)
    p.add_argument(
        "--cache",
        choices=("hot", "default"),
        default="hot",
        help="hot: a 1 GB page cache on every connection (the SQL's own cost); "
        "default: SQLite's 2 MB (reads go through the OS)",
    )
    p.add_argument(
        "--qpsg",
        choices=("on", "off"),
        default="on",
        help="SQLITE_DBCONFIG_ENABLE_QPSG on every connection (main and world)",
    )
    p.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated")
    p.add_argument("--skip", default="", help="comma-separated: reads, big, writes, prepare")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    designs = [DESIGNS[n] for n in args.designs.split(",") if n]
    QPSG[0] = args.qpsg == "on"
    skip = set(args.skip.split(","))
    tables = (ITEMS, ORDERS, *CHAIN)
    print(
        f"SQLite {apsw.sqlite_lib_version()}, apsw {apsw.apsw_version()}; {args.rows:,} rows "
        f"(chain tables {args.chain:,}), 1% changed; cache {args.cache}, qpsg {args.qpsg}; "
        f"best of "
        f"{args.rounds} interleaved rounds"
    )
    for d in designs:
        print(f"  {d.name}: {d.about} [{', '.join(d.states)}]")
    work = Path(tempfile.mkdtemp(prefix="chronos-study-", dir="/tmp"))
    failed = []
    try:
        # 1. correctness on small data, every design and state, every shape
        small = work / "small.sqlite"
        build_base(small, args.check, min(args.chain, args.check), 1, tables)
        small_shapes = shapes(args.check, min(args.chain, args.check), random.Random(4), 300)
        for d in designs:
            for state in d.states:
                w = make_world(
                    small,
                    work,
                    d,
                    state,
                    tables,
                    args.check,
                    min(args.chain, args.check),
                    args.cache,
                    1,
                )
                bad = check(w, small_shapes)
                w.close()
                print(
                    f"check {d.name} ({state}) against a copy at {args.check:,} rows: "
                    + ("same rows" if not bad else f"DIFFERS in {', '.join(bad)}"),
                    flush=True,
                )
                if bad:
                    failed.append((d.name, state))
        # 2. the triggers' rules, prepare, writes (prepare first: it is the most sensitive to what
        # a long run leaves behind)
        lean = [d for d in designs if d.triggers is not current_triggers]
        for d in lean:
            if d.name in ("pinned", "notin-hin", "notin-wh") or d.name.startswith("shared"):
                continue  # (the same triggers as notin; shared's are minimal, for reads only)
            bad = check_rules(work, d)
            print(
                f"\ntriggers of {d.name} against plain SQLite, {len(RULES)} statements with "
                "constraints, conflict modes and an app trigger: "
                + ("the same outcome for each" if not bad else "DIFFER:\n  " + "\n  ".join(bad))
            )
        writers: dict[str, Factory] = {
            d.name: design_world(d)
            for d in lean
            if d.name not in ("pinned", "notin-hin") and not d.name.startswith("shared")
        }
        writers["chronos (package)"] = package_world
        if "prepare" not in skip:
            bench_prepare(
                work, 100_000, args.rounds, args.cache, writers | {"floor": design_world(FLOOR)}
            )
        if "writes" not in skip:
            bench_writes(work, 100_000, 5_000, args.rounds, args.cache, writers)
        # 3. reads at full size
        if "reads" not in skip:
            base = work / "base.sqlite"
            start = time.perf_counter()
            build_base(base, args.rows, args.chain, 1, tables)
            print(f"\nbuilt {args.rows:,} rows in {time.perf_counter() - start:.1f} s", flush=True)
            full = shapes(args.rows, args.chain, random.Random(4), args.lookups)
            totals = [s for s in full if s.name in ("sum", "count(*)", "join 2 tables")]
            for state in ("world", "both"):
                results = {}
                for d in designs:
                    if state not in d.states or (d.name, state) in failed:
                        continue
                    w = make_world(
                        base, work, d, state, tables, args.rows, args.chain, args.cache, 1
                    )
                    bad = check(w, totals)
                    if bad:
                        print(f"  {d.name} ({state}) differs from its copy at full size: {bad}")
                    results[d.name] = bench_reads(w, full, args.rounds)
                    if d.shadow is per_world_shadow and state == "world":
                        results[d.name] |= bench_count_rewrite(w, args.rounds)
                    w.close()
                    for f in work.glob(f"{d.name}-{state}*"):
                        f.unlink()
                moved = "main unchanged" if state == "world" else "main changed 1%"
                print_reads(
                    f"reads, state {state!r} ({moved} since the fork), {args.rows:,} rows",
                    results,
                    full,
                )
        # 4. point and range at the big size
        if args.big and "big" not in skip:
            big = work / "big.sqlite"
            build_base(big, args.big, 1000, 1, (ITEMS,))
            few = [
                s
                for s in shapes(args.big, 1000, random.Random(5), args.lookups)
                if s.name in ("point lookup", "range (index)")
            ]
            results = {}
            for d in designs:
                if "world" not in d.states:
                    continue
                w = make_world(big, work, d, "world", (ITEMS,), args.big, 1000, args.cache, 1)
                results[d.name] = bench_reads(w, few, args.rounds)
                w.close()
                for f in work.glob(f"{d.name}-world*"):
                    f.unlink()
            print_reads(f"reads, state 'world', {args.big:,} rows", results, few)
        if ONE_OFF:
            print("\none-off costs")
            for what, sec in ONE_OFF.items():
                print(f"  {what}: {sec * 1e3:.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        print(f"\ndesigns that differ from a copy (not timed): {failed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
