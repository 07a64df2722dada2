"""FTS5 tables made the way apps make them, on a world: sqlite-utils' ``enable_fts(...,
create_triggers=True)`` (external content, no ``content_rowid``, the rowid read from the table)
on a table keyed by an integer and on one without a key; the FTS5 commands (rebuild, optimize,
integrity-check, delete-all) on a world; an index read as it was at a moment; main changed by a
plain sqlite3 client under an open world; rowids kept across a merge."""

from __future__ import annotations

import sqlite3
import time

import pytest
import sqlite_utils

import chronos_lite
from chronos_lite import ChronosError

ROWS = [("one", "green tea"), ("two", "black coffee"), ("three", "jasmine tea")]


def _rows(db: chronos_lite.Chronos, sql: str, branch: str = "main") -> list[tuple]:
    return list(db.sql(sql, branch=branch).results[-1].rows)


def _match(db: chronos_lite.Chronos, word: str, branch: str = "main") -> list[tuple]:
    return _rows(
        db,
        f"select rowid, title from docs_fts where docs_fts match '{word}' order by rowid",
        branch,
    )


@pytest.fixture(params=["integer key", "no key"])
def shop(request, tmp_path):
    folder = tmp_path / "shop"
    db = chronos_lite.init(folder)
    key = "id integer primary key, " if request.param == "integer key" else ""
    db.sql(f"create table docs({key}title text, body text)")
    for title, body in ROWS:
        db.sql("insert into docs(title, body) values ($1, $2)", title, body)
    db.close()
    su = sqlite_utils.Database(str(folder / "chronos.db"))
    su["docs"].enable_fts(["title", "body"], create_triggers=True)
    su.conn.close()
    db = chronos_lite.open(folder)
    db.fork("w")
    yield db
    db.close()


def test_a_world_writes_and_finds_its_own_rows(shop):
    shop.sql("insert into docs(title, body) values ('four', 'oolong tea')", branch="w")
    shop.sql("update docs set body = 'green coffee' where title = 'one'", branch="w")
    shop.sql("delete from docs where title = 'three'", branch="w")
    assert _match(shop, "tea", "w") == [(4, "four")]
    assert _match(shop, "coffee", "w") == [(1, "one"), (2, "two")]
    assert _match(shop, "tea") == [(1, "one"), (3, "three")]  # (main's, as it was)
    ranked = _rows(
        shop,
        "select title, highlight(docs_fts, 1, '[', ']') from docs_fts "
        "where docs_fts match 'coffee' order by bm25(docs_fts), rowid",
        "w",
    )
    assert sorted(ranked) == [("one", "green [coffee]"), ("two", "black [coffee]")]


@pytest.mark.parametrize("command", ["rebuild", "optimize", "integrity-check"])
def test_the_fts5_commands_run_on_a_world(shop, command):
    shop.sql("update docs set body = 'white tea' where title = 'two'", branch="w")
    shop.sql(f"insert into docs_fts(docs_fts) values ('{command}')", branch="w")
    assert _match(shop, "tea", "w") == [(1, "one"), (2, "two"), (3, "three")]
    assert _match(shop, "tea") == [(1, "one"), (3, "three")]


def test_a_command_on_a_world_that_changed_nothing_yet(shop):
    shop.sql("insert into docs_fts(docs_fts) values ('rebuild')", branch="w")
    assert _match(shop, "tea", "w") == [(1, "one"), (3, "three")]
    shop.sql("insert into docs_fts(docs_fts) values ('delete-all')", branch="w")
    assert _match(shop, "tea", "w") == []
    assert _match(shop, "tea") == [(1, "one"), (3, "three")]  # (main's index untouched)


def test_main_changed_by_sqlite3_under_an_open_world(shop):
    shop.sql("select 1", branch="w")  # (the world's connection placed before main changes)
    raw = sqlite3.connect(shop.database.folder / "chronos.db")
    with raw:
        raw.execute("insert into docs(title, body) values ('main', 'main tea')")
        raw.execute("update docs set body = 'cold coffee' where title = 'one'")
    raw.close()
    assert _rows(shop, "select 1", "w") == [(1,)]
    assert _match(shop, "tea", "w") == [(1, "one"), (3, "three")]
    assert _match(shop, "tea") == [(3, "three"), (4, "main")]
    shop.sql("insert into docs(title, body) values ('mine', 'my tea')", branch="w")
    assert [t for _r, t in _match(shop, "tea", "w")] == ["one", "three", "mine"]


def test_an_index_reads_as_it_was_at_a_moment(shop):
    time.sleep(1.1)
    then = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    time.sleep(1.1)
    shop.sql("update docs set body = 'cold coffee' where title = 'one'")
    shop.sql("insert into docs(title, body) values ('new', 'new tea')")
    assert _match(shop, "tea") == [(3, "three"), (4, "new")]
    assert _match(shop, "tea", f"main@{then}") == [(1, "one"), (3, "three")]
    assert _match(shop, "coffee", f"main@{then}") == [(2, "two")]


def test_rowids_kept_across_a_merge(shop):
    shop.sql("insert into docs(title, body) values ('four', 'oolong tea')", branch="w")
    shop.sql("update docs set body = 'white tea' where title = 'two'", branch="w")
    before = _match(shop, "tea", "w")
    shop.merge("w")
    assert _match(shop, "tea") == before == [(1, "one"), (2, "two"), (3, "three"), (4, "four")]
    shop.sql("insert into docs_fts(docs_fts) values ('integrity-check')")


def test_a_text_keyed_table_indexed_by_rowid_is_refused_clearly(tmp_path):
    folder = tmp_path / "kv"
    db = chronos_lite.init(folder)
    db.sql("create table kv(k text primary key, v text); insert into kv values ('a', 'tea')")
    db.sql("create virtual table kv_fts using fts5(v, content='kv')")
    db.sql("insert into kv_fts(kv_fts) values ('rebuild')")
    db.fork("w")
    with pytest.raises(ChronosError, match="content_rowid"):
        db.sql("update kv set v = 'coffee' where k = 'a'", branch="w")
    db.close()
