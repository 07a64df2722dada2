"""Generated columns (virtual and stored) wherever a world's rows are shown or replayed (issue
25): diff, diff as SQL (never assigning one), merge_preview, merge and undo_merge read the row
as SQLite computes it, a column computed from another one included."""

from __future__ import annotations

import sqlite3

import pytest

SCHEMA = (
    "create table items(id integer primary key, qty int, unit real, "
    "price real generated always as (qty * unit) virtual, "
    "tag text generated always as ('#' || id) stored, "
    "twice real generated always as (price * 2))"
)


@pytest.fixture
def items(db):
    db.sql(SCHEMA)
    db.sql("insert into items(qty, unit) values (2, 1.5), (3, 2.0), (4, 1.0)")
    db.fork("w")
    db.sql(
        "update items set qty = 10 where id = 1; delete from items where id = 3; "
        "insert into items(qty, unit) values (1, 0.5)",
        branch="w",
    )
    return db


def rows(db, branch: str = "main") -> list[dict]:
    return db.query("select * from items order by id", branch=branch)


def test_diff_and_merge_preview_show_the_computed_values(items):
    changes = {c["id"]: c for c in items.call("diff", branch="w").data["changes"]}
    on_world = {str(r["id"]): r for r in rows(items, "w")}
    assert changes["1"]["ours"] == on_world["1"]
    assert changes["4"]["ours"] == on_world["4"] == {
        "id": 4, "qty": 1, "unit": 0.5, "price": 0.5, "tag": "#4", "twice": 1.0,
    }  # fmt: skip
    preview = {r["id"]: r for r in items.call("merge_preview", branch="w").data["rows"]}
    assert preview["1"]["result"] == on_world["1"]
    assert preview["4"]["ours"] == on_world["4"]


def test_diff_as_sql_assigns_no_generated_column_and_replays_the_change(items, tmp_path):
    script = items.call("diff", branch="w", as_sql=True).text
    assert "price" not in script.split("\n", 1)[1] and "twice" not in script
    plain = sqlite3.connect(tmp_path / "plain.db")
    plain.execute(SCHEMA)
    plain.executemany(
        "insert into items(id, qty, unit) values (?, ?, ?)", [(1, 2, 1.5), (2, 3, 2.0), (3, 4, 1.0)]
    )
    plain.executescript(script)
    replayed = plain.execute("select * from items order by id").fetchall()
    assert replayed == [tuple(r.values()) for r in rows(items, "w")]


def test_merge_then_undo_merge_puts_main_back(items):
    before, world = rows(items), rows(items, "w")
    items.merge("w")
    assert rows(items) == world
    items.call("undo_merge", branch="w")
    assert rows(items) == before
