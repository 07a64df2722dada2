#!/usr/bin/env python3
"""find's cost against the same search done by hand (issue 26), measured in the same run,
interleaved, best of N; on main and on a world that changed 1% of the rows.

* filters: ``db.find(table, where)`` (a count and a page of 20 in key order) against the same
  two statements through ``db.sql``; 100k rows; target 1.3x.
* text: ``db.find(table, text=...)`` (two words, top 20 with their rows and the match count)
  against raw FTS5 on a plain copy (``MATCH ... ORDER BY bm25(...) LIMIT 20`` joined to the
  rows); 100k rows of product-like text; targets 1.2x main, 1.5x a world.
* vectors: ``db.find(table, vector=..., vector_field=...)`` (top 20 by dot product, exact,
  and the count) against a raw sqlite-vec KNN (``vec0``, k = 20, joined to the rows) on a
  plain copy; 50k x 384 float32; targets 1.2x main, 1.5x a world; a find filtered to 1% of
  the rows at most 0.2x the unfiltered one; the first find after 10k writes to main by an app
  (catching the connection's index up), reported.
* writes with a text index in place: single-row inserts through chronos and by an app's own
  connection to chronos' file, against a plain file with the usual external-content FTS5
  triggers (the same synchronous=full); target 0.7x; the first text find after them.

    .venv/bin/python benchmarks/bench_find.py            # the sizes above
    .venv/bin/python benchmarks/bench_find.py --quick    # a tenth of them, 64-dim vectors
"""

from __future__ import annotations

import dataclasses
import random
import sys
from pathlib import Path

import search_shapes as shapes
from common import (
    Figure,
    arguments,
    best_of,
    figure,
    missed,
    table,
    timed,
    work_folder,
    write_json,
)

import chronos_lite

CATEGORIES = 1000  # each a tenth of a percent of the rows: a page of 20 out of ~100


def build(folder: Path, rows: int) -> chronos_lite.Chronos:
    db = chronos_lite.init(folder)
    db.sql(
        "create table products(id integer primary key, name text, category text, price real); "
        "create index products_category on products(category)"
    )
    rng = random.Random(5)
    values = ", ".join(
        f"('p{i}', 'c{rng.randrange(CATEGORIES)}', {rng.randrange(100, 10_000) / 100})"
        for i in range(rows)
    )
    db.sql(f"insert into products(name, category, price) values {values}")
    db.fork("w")
    changed = rng.sample(range(1, rows + 1), rows // 100)
    db.sql(
        "; ".join(f"update products set price = price + 1 where id = {i}" for i in changed),
        branch="w",
    )
    return db


def jobs(db: chronos_lite.Chronos, branch: str, categories: list[str]) -> dict:
    def by_find() -> float:
        return timed(
            lambda: [db.find("products", {"category": c}, branch=branch) for c in categories]
        )

    def by_sql() -> float:
        def run() -> None:
            for c in categories:
                db.sql(
                    "select count(*) from products where category = $1; select id, name, "
                    "category, price from products where category = $1 order by id limit 20",
                    c,
                    branch=branch,
                )

        return timed(run)

    return {"find": by_find, "sql": by_sql}


def filters(work: Path, rows: int, rounds: int, calls: int) -> list[Figure]:
    figures = []
    db = build(work / "db", rows)
    rng = random.Random(9)
    categories = [f"c{rng.randrange(CATEGORIES)}" for _ in range(calls)]
    for branch, what in (("main", "main"), ("w", "a world, 1% changed")):
        best = best_of(rounds, jobs(db, branch, categories))
        figures.append(
            figure(
                f"find where (indexed field), {rows // 1000}k rows, {what}",
                "us",
                best["find"] / calls * 1e6,
                best["sql"] / calls * 1e6,
                "the same count and page by db.sql",
                at_most=1.3,
            )
        )
    db.close()
    return figures


def text(work: Path, rows: int, rounds: int, calls: int) -> list[Figure]:
    figures = []
    db, plain = shapes.build_text(work, rows)
    queries = shapes.text_queries(random.Random(21), calls)
    for branch, what, most in (("main", "main", 1.2), ("w", "a world, 1% changed", 1.5)):
        first = timed(lambda b=branch: db.find("products", text=queries[0], branch=b))
        print(f"  first text find on {what}: {first * 1e3:.0f} ms (its index made)")
        best = best_of(rounds, shapes.text_jobs(db, plain, branch, queries))
        figures.append(
            figure(
                f"find text, top 20, {rows // 1000}k rows, {what}",
                "us",
                best["find"] / calls * 1e6,
                best["raw"] / calls * 1e6,
                "raw FTS5 bm25 on a plain copy",
                at_most=most,
            )
        )
    count = max(rows // 100, 100)
    best = best_of(rounds, shapes.write_jobs(db, plain, work / "text" / "chronos.db", count))
    for who, name in (("chronos", "through chronos"), ("app", "by an app's own connection")):
        figures.append(
            figure(
                f"insert a row with the text index in place, {name}",
                "rows/s",
                count / best[who],
                count / best["plain"],
                "plain SQLite + FTS5 triggers",
                at_least=0.7,
            )
        )
    caught = timed(lambda: db.find("products", text=queries[0]))
    print(f"  first text find after {4 * rounds * count} more rows: {caught * 1e3:.0f} ms")
    db.close()
    return figures


def vectors(work: Path, rows: int, dims: int, rounds: int, calls: int) -> list[Figure]:
    figures = []
    db, plain = shapes.build_vectors(work, rows, dims)
    rng = random.Random(23)
    asked = [[rng.gauss(0, 1) for _ in range(dims)] for _ in range(calls)]
    unfiltered = 0.0
    for branch, what, most in (("main", "main", 1.2), ("w", "a world, 1% changed", 1.5)):
        first = timed(
            lambda b=branch: db.find("items", vector=asked[0], vector_field="emb", branch=b)
        )
        print(
            f"  first vector find on {what}: {first * 1e3:.0f} ms (a scan; the next makes "
            "the connection's index)"
        )
        best = best_of(rounds, shapes.vector_jobs(db, plain, branch, asked))
        unfiltered = unfiltered or best["find"]
        figures.append(
            figure(
                f"find vector, top 20, {rows // 1000}k x {dims}, {what}",
                "ms",
                best["find"] / calls * 1e3,
                best["raw"] / calls * 1e3,
                "raw sqlite-vec KNN on a plain copy",
                at_most=most,
            )
        )
    filtered = best_of(rounds, shapes.vector_jobs(db, plain, "main", asked, {"category": "c7"}))
    figures.append(
        figure(
            "find vector where (1% of the rows), main",
            "ms",
            filtered["find"] / calls * 1e3,
            unfiltered / calls * 1e3,
            "the same find unfiltered",
            at_most=0.2,
        )
    )
    writes = 10_000 if rows >= 50_000 else 1_000
    wrote, caught = shapes.catch_up(db, work / "vec" / "chronos.db", rows, writes, dims)
    print(
        f"  {writes} writes to main by an app: {wrote * 1e3:.0f} ms; the first vector find "
        f"after them (catching the index up): {caught * 1e3:.0f} ms"
    )
    db.close()
    return figures


def main() -> int:
    args = arguments(__doc__ or "", "a tenth of the rows, 64-dim vectors").parse_args()
    if args.quick:
        rows, text_rows, vec_rows, dims, rounds, calls = 10_000, 10_000, 5_000, 64, 3, 20
    else:
        rows, text_rows, vec_rows, dims, rounds, calls = 100_000, 100_000, 50_000, 384, 5, 50
    figures: list[Figure] = []
    with work_folder("find-") as work:
        figures += filters(work, rows, rounds, calls * 4)
        figures += text(work, text_rows, rounds, calls)
        figures += vectors(work, vec_rows, dims, rounds, calls // 2)
    print(f"find benchmarks: best of {rounds} interleaved rounds")
    print(table(figures))
    print(missed(f.passed for f in figures))
    write_json(args.json, {"figures": [dataclasses.asdict(f) for f in figures]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
