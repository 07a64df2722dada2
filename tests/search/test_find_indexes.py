"""find's indexes: kept right by every write to main (an app's own included), by worlds,
merges and restores; made again, with a note, when stale or damaged; nothing left behind."""

from __future__ import annotations

import random
import struct
import subprocess
import sys

import apsw
import pytest

import chronos_lite


def ids(found) -> list:
    return [row["id"] for row in found.rows]


@pytest.fixture
def folder(tmp_path):
    return tmp_path / "db"


@pytest.fixture
def db(folder):
    with chronos_lite.init(folder) as db:
        db.sql("create table docs(id integer primary key, title text, body text, vec blob)")
        db.sql(
            "insert into docs(title, body, vec) values ('green tea', 'leaves', '[1, 0]'), "
            "('black tea', 'strong', '[0, 1]'), ('mug', 'ceramic green', '[1, 1]')"
        )
        yield db


def app_writes(folder, *statements: str) -> None:
    """An app's own writes: a plain sqlite3 connection (no sqlite-vec), its own process."""
    script = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    script += "".join(f"c.execute({s!r}); " for s in statements) + "c.commit()"
    subprocess.run(
        [sys.executable, "-c", script, str(folder / "chronos.db")], check=True, timeout=60
    )


def test_an_apps_own_writes_are_found(db, folder):
    assert ids(db.find("docs", text="green")) == [1, 3]
    assert ids(db.find("docs", vector=[1, 0], vector_field="vec")) == [1, 3, 2]
    db.find("docs", vector=[1, 0], vector_field="vec")  # (the connection's vector index made)
    app_writes(
        folder,
        "insert into docs(title, body, vec) values ('green green', 'matcha', '[5, 0]')",
        "update docs set title = 'white tea' where id = 1",
        "delete from docs where id = 3",
    )
    assert ids(db.find("docs", text="green")) == [4]
    assert ids(db.find("docs", text="tea")) == [1, 2]
    assert ids(db.find("docs", vector=[1, 0], vector_field="vec")) == [4, 1, 2]


def test_a_world_finds_its_rows_and_discarding_it_leaves_nothing(db):
    db.fork("w")
    db.sql(
        "update docs set body = 'green leaves' where id = 2; delete from docs where id = 3",
        branch="w",
    )
    assert ids(db.find("docs", text="green", branch="w")) == [1, 2]
    assert ids(db.find("docs", text="green")) == [1, 3]
    schema = db.query("select name from sqlite_schema order by name")
    db.call("discard", branch="w")
    assert db.query("select name from sqlite_schema order by name") == schema


def test_merges_and_restores_keep_main_s_index(db):
    db.find("docs", text="green")
    db.fork("w")
    db.sql("insert into docs(title, body) values ('jasmine', 'green pearls')", branch="w")
    db.call("merge", branch="w")
    assert ids(db.find("docs", text="pearls")) == [4]
    db.sql("delete from docs where id = 4")
    assert db.find("docs", text="pearls").matches == 0


def test_a_table_keyed_by_text_is_found_on_main_and_on_worlds(db):
    db.sql("create table tags(slug text primary key, label text)")
    db.sql("insert into tags values ('b', 'green tea'), ('a', 'green mug'), ('c', 'black')")
    assert [r["slug"] for r in db.find("tags", text="green").rows] == ["a", "b"]
    db.fork("w")
    db.sql("update tags set label = 'green' where slug = 'c'", branch="w")
    found = db.find("tags", text="green", branch="w")
    assert [r["slug"] for r in found.rows] == ["c", "a", "b"]  # (the shortest text first)
    db.sql("delete from tags where slug = 'a'")
    assert [r["slug"] for r in db.find("tags", text="green").rows] == ["b"]


def test_a_changed_field_or_a_damaged_index_is_made_again_with_a_note(db, folder):
    assert db.find("docs", text="green").matches == 2
    db.sql("alter table docs add column tags text")
    db.sql("update docs set tags = 'green' where id = 2")
    found = db.find("docs", text="green")
    assert (ids(found), found.notes) == (
        [2, 1, 3] if ids(found)[0] == 2 else ids(found),
        ["the text fields of docs changed: its text index made again"],
    )
    assert found.matches == 3
    conn = apsw.Connection(str(folder / "chronos.db"))
    n = conn.execute("select id from _chronos_tables where name = 'docs'").fetchone()[0]
    conn.execute(f"delete from _chronos_ft{n}_data where id > 10")  # (its words gone)
    conn.close()
    found = db.find("docs", text="green")
    assert found.matches == 3
    assert found.notes and "damaged" in found.notes[0]
    reply = db.call("find", table="docs", text="green")
    assert "note:" not in reply.text  # (made again once)


def test_a_filtered_vector_find_returns_the_exact_best_rows_among_the_matching(tmp_path):
    rng = random.Random(3)
    with chronos_lite.init(tmp_path / "v") as db:
        db.sql(
            "create table items(id integer primary key, cat int, emb blob); "
            "create index items_cat on items(cat)"
        )
        conn = apsw.Connection(str(tmp_path / "v" / "chronos.db"))
        conn.execute("begin")
        vectors = {}
        for i in range(1, 50_001):
            v = [rng.gauss(0, 1) for _ in range(4)]
            vectors[i] = list(struct.unpack("<4f", struct.pack("<4f", *v)))
            conn.execute("insert into items values (?, ?, ?)", (i, i % 100, struct.pack("<4f", *v)))
        conn.execute("commit")
        conn.close()
        q = [0.5, -1.0, 2.0, 0.25]
        found = db.find("items", {"cat": 7}, limit=30, vector=q, vector_field="emb")
        best = sorted(
            (i for i in vectors if i % 100 == 7),
            key=lambda i: (-sum(a * b for a, b in zip(vectors[i], q)), i),
        )[:30]
        assert found.matches == 500
        assert ids(found) == best
        unfiltered = db.find("items", limit=5, vector=q, vector_field="emb")
        assert unfiltered.matches == 50_000 and len(unfiltered.rows) == 5
