"""What bench_worlds.py reads and writes: its tables, the 1% of rows a world changes, worlds
at depth 1 and 8 with a table changed or untouched, plain copies to check their answers
against, the query shapes, the table with constraints and a trigger, and the timed jobs of
the writes and prepare sections.

Not a script: bench_worlds imports it by name (this folder is first on ``sys.path``).
"""

from __future__ import annotations

import itertools
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apsw
from common import CATEGORIES, TABLE, in_transaction, raw_copy

import chronos_lite

Plans = dict[str, list[tuple[str, tuple]]]  # table -> its statements, in order


# --- the tables -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """A table with an ``id integer primary key`` and ``rest``, its other columns;
    ``values(rng, refs)`` makes those for a new row (``refs``: rows in the table it points at)."""

    name: str
    ddl: str
    rest: tuple[str, ...]
    values: Callable[[random.Random, int], tuple]
    extra: tuple[str, ...] = ()  # indexes, created after the rows


def _item(rng: random.Random, _refs: int) -> tuple:
    return rng.randrange(CATEGORIES), rng.randrange(100, 100_000) / 100, f"item {rng.random()}"


def _order(rng: random.Random, refs: int) -> tuple:
    return rng.randrange(1, refs + 1), rng.randrange(1, 10)


def _link(rng: random.Random, refs: int) -> tuple:
    return rng.randrange(1, refs + 1), rng.randrange(1000), f"w{rng.randrange(10**6)}"


ITEMS = Table(
    "items",
    TABLE,
    ("category", "price", "name"),
    _item,
    ("create index items_category on items(category)",),
)
ORDERS = Table(
    "orders",
    "create table orders(id integer primary key, item_id int, qty int)",
    ("item_id", "qty"),
    _order,
)
CHAIN = tuple(  # c1.ref -> c2.id -> ... -> c5.id: a join by key picks one row of each
    Table(
        f"c{i}",
        f"create table c{i}(id integer primary key, ref int, v int, w text)",
        ("ref", "v", "w"),
        _link,
    )
    for i in range(1, 6)
)


@dataclass(frozen=True)
class Filled:
    """A table and how many rows it holds (``refs``: rows of the table it points at)."""

    table: Table
    rows: int
    refs: int = 0


def build_file(path: Path, tables: list[Filled], seed: int = 1) -> Path:
    """A plain SQLite file (WAL) holding ``tables``, each row ``id`` 1..rows."""
    conn = apsw.Connection(str(path))
    conn.execute("pragma journal_mode = wal").fetchall()
    rng = random.Random(seed)
    conn.execute("BEGIN")
    for f in tables:
        t = f.table
        conn.execute(t.ddl)
        marks = ", ".join("?" * (len(t.rest) + 1))
        conn.executemany(
            f"insert into {t.name} values ({marks})",
            ((i, *t.values(rng, f.refs)) for i in range(1, f.rows + 1)),
        )
        for sql in t.extra:
            conn.execute(sql)
    conn.execute("COMMIT")
    conn.close()
    return path


# --- the changes: 1% of a table's rows ------------------------------------------------------


def change_plan(f: Filled, rng: random.Random) -> list[tuple[str, tuple]]:
    """1% of the rows changed, as ``common.change_plan``: 80% updated (every column but the
    key), 10% deleted, as many inserted. New rows take explicit ids above the table's, so a
    world, a chain of worlds and a plain copy all end with the same rows."""
    t = f.table
    ids = rng.sample(range(1, f.rows + 1), max(f.rows // 100, 10))
    sets = ", ".join(f"{c} = ?" for c in t.rest)
    marks = ", ".join("?" * (len(t.rest) + 1))
    insert = f"insert into {t.name}(id, {', '.join(t.rest)}) values ({marks})"
    plan: list[tuple[str, tuple]] = []
    for k, key in enumerate(ids):
        if k % 10 == 0:
            plan.append((f"delete from {t.name} where id = ?", (key,)))
        elif k % 10 == 1:
            plan.append((insert, (f.rows + 1 + k, *t.values(rng, f.refs))))
        else:
            plan.append((f"update {t.name} set {sets} where id = ?", (*t.values(rng, f.refs), key)))
    return plan


def plans_for(tables: list[Filled], seed: int) -> Plans:
    rng = random.Random(seed)
    return {f.table.name: change_plan(f, rng) for f in tables}


def apply_plans(db: chronos_lite.Chronos, world: str, plans: Plans) -> None:
    """The statements of ``plans`` on ``world``, through its triggers, in one transaction."""
    conn = db.database.writable(db.database.session(world), *plans).conn
    with db.database.write(conn):
        for plan in plans.values():
            for sql, params in plan:
                conn.execute(sql, params)


def plain_copy(plain: Path, path: Path, plans: Plans | None = None) -> apsw.Connection:
    """A plain SQLite copy of ``plain`` with ``plans`` applied: the answers a world must give."""
    conn = raw_copy(plain, path)
    conn.execute("BEGIN")
    for plan in (plans or {}).values():
        for sql, params in plan:
            conn.execute(sql, params)
    conn.execute("COMMIT")
    return conn


# --- the worlds -----------------------------------------------------------------------------

DEPTHS = (1, 8)


def make_worlds(db: chronos_lite.Chronos, plans: Plans) -> dict[str, apsw.Connection]:
    """Main and four worlds of it: "changed, depth 1" made all of ``plans``; "changed, depth 8"
    is the last of a chain of 8 worlds, each forked from the one before and making 1/8 of the
    changes; "untouched, depth 1" and "untouched, depth 8" (the end of a chain of 8) changed
    nothing. Main is not changed after the forks. Name -> the connection placed on it."""
    db.fork("changed1")
    apply_plans(db, "changed1", plans)
    parent = None
    for d in range(1, 9):
        db.fork(f"chain{d}", parent)
        apply_plans(db, f"chain{d}", {t: plan[d - 1 :: 8] for t, plan in plans.items()})
        parent = f"chain{d}"
    db.fork("untouched1")
    parent = None
    for d in range(1, 9):
        db.fork(f"still{d}", parent)
        parent = f"still{d}"
    # (sessions last: the pool keeps 16, and closes the oldest)
    return {
        "main": db.database.session("main").conn,
        "changed, depth 1": db.database.session("changed1").conn,
        "changed, depth 8": db.database.session("chain8").conn,
        "untouched, depth 1": db.database.session("untouched1").conn,
        "untouched, depth 8": db.database.session("still8").conn,
    }


def adopt(plain: Path, folder: Path) -> chronos_lite.Chronos:
    """A chronos database whose main is a copy of ``plain`` (no history written)."""
    return chronos_lite.init(folder, from_file=plain)


# --- query shapes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    name: str
    sql: str
    params: list[tuple] | None  # run once per tuple (the figure is per run); None: once
    changed: float | None  # the target on a changed table (at most this ratio to main)
    ordered: bool = False  # its rows compared in order


def table_shapes(rows: int, lookups: int, rng: random.Random) -> list[Shape]:
    """The single-table shapes and the items-orders joins (by key under ORDER BY, GROUP BY and
    DISTINCT, and scanning) on a table of ``rows`` rows, each with issue 25's target: 1.2x
    main on a table under 100k rows, 1.5x above."""
    ids = [(rng.randrange(1, rows + 1),) for _ in range(lookups)]
    # (a join read apart under ORDER BY / GROUP BY / DISTINCT may read the whole table each
    # time: a few lookups tell its ratio)
    orders = [(rng.randrange(1, rows // 10 + 1),) for _ in range(min(lookups, 20))]
    cats = [(c,) for c in rng.sample(range(CATEGORIES), 10)]
    at_most = 1.2 if rows < 100_000 else 1.5
    by_key = "from orders o join items i on i.id = o.item_id where o.id = ?"
    return [
        Shape("point lookup", "select * from items where id = ?", ids, at_most),
        Shape(
            "index range (1% of rows)",
            "select count(*), sum(price) from items where category = ?",
            cats,
            at_most,
        ),
        Shape("sum(price)", "select sum(price) from items", None, at_most),
        Shape("count(*)", "select count(*) from items", None, at_most),
        Shape(
            "group by category",
            "select category, count(*), sum(price) from items group by category",
            None,
            at_most,
            ordered=True,
        ),
        Shape(
            "join items-orders",
            "select sum(o.qty * i.price) from orders o join items i on i.id = o.item_id",
            None,
            at_most,
        ),
        Shape("key join, order by", f"select o.id, i.name {by_key} order by o.id", orders, at_most),
        Shape(
            "key join, group by",
            f"select o.id, count(*), sum(o.qty * i.price) {by_key} group by o.id",
            orders,
            at_most,
        ),
        Shape("key join, distinct", f"select distinct i.category {by_key}", orders, at_most),
        Shape(
            "order by pk offset",
            f"select * from items order by id limit 100 offset {rows // 2}",
            None,
            at_most,
            ordered=True,
        ),
        Shape(
            "order by index offset",
            f"select * from items order by category, id limit 100 offset {rows // 2}",
            None,
            at_most,
            ordered=True,
        ),
    ]


def key_join(k: int, ids: list[tuple], target: float | None) -> Shape:
    """c1 joined by key to c2 .. ck, one row of each, for one id of c1."""
    cols = ", ".join(f"c{i}.v" for i in range(1, k + 1))
    joins = "".join(f" join c{i} on c{i}.id = c{i - 1}.ref" for i in range(2, k + 1))
    return Shape(
        f"key join {k} tables", f"select {cols} from c1{joins} where c1.id = ?", ids, target
    )


def run(conn: apsw.Connection, shape: Shape) -> list:
    if shape.params is None:
        return conn.execute(shape.sql).fetchall()
    out = []
    for p in shape.params:
        out += conn.execute(shape.sql, p).fetchall()
    return out


def same(a: list, b: list, ordered: bool) -> bool:
    """The same rows (floats equal to 1e-9: a sum's order of additions may differ)."""
    if not ordered:
        a, b = sorted(a, key=repr), sorted(b, key=repr)
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                if x is None or y is None or not math.isclose(x, y, rel_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def wrong_answers(
    conns: dict[str, apsw.Connection], copies: dict[str, apsw.Connection], shapes: list[Shape]
) -> set[tuple[str, str]]:
    """(connection, shape) pairs whose rows differ from the plain copy's: the changed worlds
    against a copy with the changes applied, main and the untouched worlds against the file."""
    bad = set()
    for shape in shapes:
        want = {state: run(conn, shape) for state, conn in copies.items()}
        for name, conn in conns.items():
            state = "changed" if name.startswith("changed") else "untouched"
            if not same(run(conn, shape), want[state], shape.ordered):
                bad.add((name, shape.name))
    return bad


# --- the table with constraints and a trigger (writes) --------------------------------------

KINDS = 100  # rows of the parent table
STRICT_SCHEMA = (
    "create table kinds(id integer primary key, label text not null)",
    "create table strict(id integer primary key, "
    "kind int not null references kinds(id), "
    "price real not null check (price > 0), "
    "name text not null unique)",
    "create table log(id integer primary key, item int not null, old real, new real)",
    "create trigger strict_ai after insert on strict begin "
    "insert into log(item, old, new) values (new.id, null, new.price); end",
    "create trigger strict_au after update of price on strict begin "
    "insert into log(item, old, new) values (new.id, old.price, new.price); end",
)
STRICT_TABLES = ("kinds", "strict", "log")
STRICT_INSERT = "insert into strict(kind, price, name) values (?, ?, ?)"
STRICT_UPDATE = "update strict set price = ? where id = ?"


def build_strict(path: Path, rows: int, seed: int = 4, triggers: bool = True) -> Path:
    """A plain file: ``kinds`` (the parent), ``strict`` with ``rows`` rows (NOT NULL, CHECK,
    UNIQUE, a foreign key to kinds) and (``triggers``) its AFTER INSERT and AFTER UPDATE
    triggers writing ``log``. The rows are loaded before the triggers exist (the log starts
    empty)."""
    conn = apsw.Connection(str(path))
    conn.execute("pragma journal_mode = wal").fetchall()
    rng = random.Random(seed)
    conn.execute("BEGIN")
    for sql in STRICT_SCHEMA[:3]:
        conn.execute(sql)
    conn.executemany("insert into kinds values (?, ?)", ((i, f"kind {i}") for i in range(KINDS)))
    conn.executemany(
        "insert into strict values (?, ?, ?, ?)",
        (
            (i, rng.randrange(KINDS), rng.randrange(100, 100_000) / 100, f"s{i}")
            for i in range(1, rows + 1)
        ),
    )
    for sql in STRICT_SCHEMA[3:] if triggers else ():
        conn.execute(sql)
    conn.execute("COMMIT")
    conn.close()
    return path


def strict_batches(
    batch: int, rows: int, rng: random.Random, names: itertools.count
) -> dict[str, tuple[str, list]]:
    """A fresh batch of each kind for ``strict``: ``batch`` new rows (names never used
    before), and price updates of ``batch`` distinct existing rows (each logged)."""
    new = [
        (rng.randrange(KINDS), rng.randrange(100, 100_000) / 100, f"new {next(names)}")
        for _ in range(batch)
    ]
    ids = rng.sample(range(1, rows + 1), batch)
    upd = [(rng.randrange(100, 100_000) / 100, i) for i in ids]
    return {"insert": (STRICT_INSERT, new), "update": (STRICT_UPDATE, upd)}


# --- timed jobs: a batch on a fresh world, new statement texts ------------------------------


class WorldWriter:
    """Times a batch on a world freshly forked from main (the fork is not timed); ``check``
    (untimed) sees the world's connection after each batch."""

    def __init__(
        self,
        db: chronos_lite.Chronos,
        tables: tuple[str, ...] = ("items",),
        check: Callable[[apsw.Connection, int], None] | None = None,
    ) -> None:
        self.db, self.tables, self.check = db, tables, check
        self.count = 0

    def __call__(self, sql: str, params: list[tuple]) -> float:
        self.count += 1
        name = f"writer{self.count}"
        self.db.fork(name)
        session = self.db.database.writable(self.db.database.session(name), *self.tables)
        seconds = in_transaction(session.conn, sql, params)
        if self.check:
            self.check(session.conn, len(params))
        self.db.discard(name)
        return seconds


def logged(conn: apsw.Connection, rows: int) -> None:
    """A batch on a fresh world: one log row per row written, by the app's trigger."""
    got = conn.execute("select count(*) from log").fetchone()[0]
    if got != rows:
        print(f"warning: the world's trigger logged {got} rows for {rows}", file=sys.stderr)


TEXTS = {  # each run a text never seen before: a unique literal
    "select by key": "select * from items where id = -{n}",
    "insert (no row)": "insert into items(category, price, name) select 1, 2.0, 'x' where {n} < 0",
    "update (no row)": "update items set price = 1.0 where id = -{n}",
    "delete (no row)": "delete from items where id = -{n}",
}


def apsw_job(conn: apsw.Connection, text: str, count: int, n: itertools.count) -> Callable:
    def go() -> float:
        texts = [text.format(n=next(n)) for _ in range(count)]
        cur = conn.cursor()
        start = time.perf_counter()
        for sql in texts:
            cur.execute(sql, can_cache=False).fetchall()
        return time.perf_counter() - start

    return go


def sql_job(db: chronos_lite.Chronos, branch: str, count: int, n: itertools.count) -> Callable:
    def go() -> float:
        texts = [TEXTS["select by key"].format(n=next(n)) for _ in range(count)]
        start = time.perf_counter()
        for sql in texts:
            db.sql(sql, branch=branch)
        return time.perf_counter() - start

    return go
