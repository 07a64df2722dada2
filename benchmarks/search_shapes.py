"""bench_find.py's text and vector parts: the data, the plain copies they are measured against,
and the jobs (each returns the seconds it measured)."""

from __future__ import annotations

import random
import struct
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import sqlite_vec
from common import BUSY_TIMEOUT_MS, timed

import chronos_lite
from chronos_lite.search.text import TOKENIZE, query

PRODUCT_WORDS = [f"w{i}" for i in range(5000)]
NAMES = "green black jasmine oolong white herbal mint chai earl grey lemon ginger rooibos matcha"
NAMES += " sencha darjeeling assam ceylon smoky floral fruity organic loose leaf bag tin gift set"
NAME_WORDS = NAMES.split() + " cup mug pot kettle strainer tray spoon scoop jar box".split()


def product_text(rng: random.Random) -> tuple[str, str, str]:
    """A product's name (3 words of 40), category (one of 100) and description (30 words of
    5,000, the frequent ones more often: Zipf-like, as words in text are)."""
    name = " ".join(rng.choices(NAME_WORDS, k=3))
    words = [PRODUCT_WORDS[min(int(rng.paretovariate(0.8)) - 1, 4999)] for _ in range(30)]
    return name, f"c{rng.randrange(100)}", " ".join(words)


def text_queries(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.sample(NAME_WORDS, 2)) for _ in range(n)]


def plain_connection(path: Path) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("pragma journal_mode = wal").fetchall()
    conn.execute("pragma synchronous = full; pragma foreign_keys = on")
    return conn


FTS_TRIGGERS = """
create virtual table products_fts using fts5(name, category, description, content='products',
  content_rowid='id', tokenize='{tokenize}');
create trigger products_ai after insert on products begin
  insert into products_fts(rowid, name, category, description)
  values (new.id, new.name, new.category, new.description); end;
create trigger products_ad after delete on products begin
  insert into products_fts(products_fts, rowid, name, category, description)
  values ('delete', old.id, old.name, old.category, old.description); end;
create trigger products_au after update on products begin
  insert into products_fts(products_fts, rowid, name, category, description)
  values ('delete', old.id, old.name, old.category, old.description);
  insert into products_fts(rowid, name, category, description)
  values (new.id, new.name, new.category, new.description); end;
"""

PRODUCTS = (
    "create table products(id integer primary key, name text, category text, description text)"
)


def build_text(folder: Path, rows: int) -> tuple[chronos_lite.Chronos, apsw.Connection]:
    """Chronos' products (and a world with 1% of them changed), and a plain copy of main's
    with the usual external-content FTS5 index and triggers."""
    rng = random.Random(11)
    data = [(i, *product_text(rng)) for i in range(1, rows + 1)]
    plain = plain_connection(folder / "plain-text.db")
    plain.execute(PRODUCTS)
    plain.execute(FTS_TRIGGERS.format(tokenize=TOKENIZE))
    plain.execute("BEGIN")
    plain.executemany("insert into products values (?, ?, ?, ?)", data)
    plain.execute("COMMIT")
    db = chronos_lite.init(folder / "text")
    db.sql(PRODUCTS)
    conn = apsw.Connection(str(folder / "text" / "chronos.db"))  # (loading, as an app would)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("BEGIN")
    conn.executemany("insert into products values (?, ?, ?, ?)", data)
    conn.execute("COMMIT")
    conn.close()
    db.fork("w")
    changed = rng.sample(range(1, rows + 1), rows // 100)
    db.sql(
        "; ".join(
            f"update products set description = description || ' "
            f"{NAME_WORDS[i % len(NAME_WORDS)]}' where id = {i}"
            for i in changed
        ),
        branch="w",
    )
    return db, plain


def text_jobs(
    db: chronos_lite.Chronos, plain: apsw.Connection, branch: str, queries: list[str]
) -> dict[str, Callable[[], float]]:
    def by_find() -> float:
        return timed(lambda: [db.find("products", text=q, branch=branch) for q in queries])

    def raw() -> float:
        def run() -> None:
            for q in queries:
                plain.execute(  # (the best 20 first, then their rows: the fast way)
                    "select p.* from (select rowid, bm25(products_fts) as score from "
                    "products_fts where products_fts match ? order by score limit 20) as top "
                    "join products as p on p.id = top.rowid order by top.score",
                    (query(q),),
                ).fetchall()

        return timed(run)

    return {"find": by_find, "raw": raw}


# --- vectors --------------------------------------------------------------------------------


def vector(rng: random.Random, dims: int) -> bytes:
    return struct.pack(f"<{dims}f", *(rng.gauss(0, 1) for _ in range(dims)))


ITEMS = "create table items(id integer primary key, category text, emb blob)"


def build_vectors(
    folder: Path, rows: int, dims: int
) -> tuple[chronos_lite.Chronos, apsw.Connection]:
    """Chronos' items (50k x 384 float32 vectors, a category of 100 indexed; a world with 1%
    of the vectors changed), and a plain copy with sqlite-vec's vec0 index of the vectors."""
    rng = random.Random(13)
    data = [(i, f"c{i % 100}", vector(rng, dims)) for i in range(1, rows + 1)]
    plain = plain_connection(folder / "plain-vec.db")
    plain.enable_load_extension(True)
    plain.load_extension(sqlite_vec.loadable_path())
    plain.execute(ITEMS + "; create index items_category on items(category)")
    plain.execute(f"create virtual table items_vec using vec0(emb float[{dims}])")
    plain.execute("BEGIN")
    plain.executemany("insert into items values (?, ?, ?)", data)
    plain.execute("insert into items_vec(rowid, emb) select id, emb from items")
    plain.execute("COMMIT")
    db = chronos_lite.init(folder / "vec")
    db.sql(ITEMS + "; create index items_category on items(category)")
    conn = apsw.Connection(str(folder / "vec" / "chronos.db"))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("BEGIN")
    conn.executemany("insert into items values (?, ?, ?)", data)
    conn.execute("COMMIT")
    conn.close()
    db.fork("w")
    for i in rng.sample(range(1, rows + 1), rows // 100):
        db.sql("update items set emb = $1 where id = $2", vector(rng, dims), i, branch="w")
    return db, plain


def vector_jobs(
    db: chronos_lite.Chronos,
    plain: apsw.Connection,
    branch: str,
    asked: list[list[float]],
    where: dict | None = None,
) -> dict[str, Callable[[], float]]:
    blobs = [struct.pack(f"<{len(q)}f", *q) for q in asked]

    def by_find() -> float:
        def run() -> None:
            for q in asked:
                db.find("items", where, text=None, vector=q, vector_field="emb", branch=branch)

        return timed(run)

    def raw() -> float:
        def run() -> None:
            for blob in blobs:
                plain.execute(
                    "select i.* from (select rowid, distance from items_vec where emb match ? "
                    "and k = 20) as knn join items as i on i.id = knn.rowid order by distance",
                    (blob,),
                ).fetchall()

        return timed(run)

    return {"find": by_find, "raw": raw}


def catch_up(
    db: chronos_lite.Chronos, path: Path, rows: int, writes: int, dims: int
) -> tuple[float, float]:
    """Seconds for ``writes`` single-row writes to main by an app's own connection, and for
    the first vector find after them (which brings the connection's index up to them)."""
    rng = random.Random(17)
    q = list(struct.unpack(f"<{dims}f", vector(rng, dims)))
    db.find("items", vector=q, vector_field="emb")
    db.find("items", vector=q, vector_field="emb")  # (the index made: a second find)
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    start = time.perf_counter()
    conn.execute("BEGIN")
    for i in rng.sample(range(1, rows + 1), writes):
        conn.execute("update items set emb = ? where id = ?", (vector(rng, dims), i))
    conn.execute("COMMIT")
    wrote = time.perf_counter() - start
    conn.close()
    return wrote, timed(lambda: db.find("items", vector=q, vector_field="emb"))


# --- writes with the text index in place ----------------------------------------------------


def write_jobs(
    db: chronos_lite.Chronos, plain: apsw.Connection, path: Path, count: int
) -> dict[str, Callable[[], float]]:
    """Single-row inserts, each its own transaction: through chronos (``db.sql``), by an app's
    own connection to chronos' file (its history triggers), and by an app to a plain file with
    the usual external-content FTS5 triggers."""
    rng = random.Random(19)
    app = apsw.Connection(str(path))
    app.set_busy_timeout(BUSY_TIMEOUT_MS)
    app.execute("pragma synchronous = full")

    def rows() -> list[tuple[str, str, str]]:
        return [product_text(rng) for _ in range(count)]

    sql = "insert into products(name, category, description) values (?, ?, ?)"

    def by_chronos() -> float:
        batch = rows()
        return timed(
            lambda: [
                db.sql(sql.replace("?", "$1", 1).replace("?", "$2", 1).replace("?", "$3", 1), *r)
                for r in batch
            ]
        )

    def by_app() -> float:
        batch = rows()
        return timed(lambda: [app.execute(sql, r) for r in batch])

    def plain_fts() -> float:
        batch = rows()
        return timed(lambda: [plain.execute(sql, r) for r in batch])

    return {"chronos": by_chronos, "app": by_app, "plain": plain_fts}
