"""Worlds through the Python API: isolation, nesting, names, metadata, versions, discard."""

from __future__ import annotations

import sqlite3

import pytest

import chronos_lite
from chronos_lite import ChronosError


def names(db, branch="main", table="users"):
    return [r["name"] for r in db.query(f"select name from {table} order by id", branch=branch)]


def test_python_api_walkthrough(shop):
    world = shop.fork("task-1", meta={"task": "fix names"})
    assert world.name == "task-1" and world.wid.startswith("w") and len(world.wid) == 17
    shop.sql("update users set name = 'Ada L.' where id = 1", branch="task-1")
    assert shop.get("users", 1) == {"id": 1, "name": "Ada", "email": "ada@x.org"}
    assert shop.get("users", "1", branch="task-1")["name"] == "Ada L."
    reopened = chronos_lite.open(shop.folder)
    assert reopened.get("users", 1, branch="task-1")["name"] == "Ada L."
    assert [w.name for w in reopened.branches()] == ["task-1"]
    reopened.close()


def test_world_never_sees_mains_later_writes(shop):
    shop.fork("w")
    shop.sql("insert into users(name, email) values ('Bob', 'bob@x')")
    shop.sql("update users set name = 'Ada2' where id = 1")
    app = sqlite3.connect(shop.database.path)
    app.execute("insert into users(name, email) values ('App', 'app@x')")
    app.execute("delete from users where name = 'Bob'")
    app.commit()
    assert names(shop, "w") == ["Ada"]
    assert names(shop) == ["Ada2", "App"]


def test_world_writes_touch_nothing_else(shop):
    shop.fork("a")
    shop.fork("b")
    shop.sql("update users set name = 'A' where id = 1", branch="a")
    shop.sql("insert into users(name, email) values ('Bee', 'bee@x')", branch="b")
    shop.sql("delete from users where id = 1", branch="b")
    assert names(shop) == ["Ada"]
    assert names(shop, "a") == ["A"]
    assert names(shop, "b") == ["Bee"]
    app = sqlite3.connect(shop.database.path)
    assert app.execute("select name from users").fetchall() == [("Ada",)]


def test_nested_worlds_see_parent_at_fork_only(shop):
    shop.fork("p")
    shop.sql("update users set name = 'P1' where id = 1", branch="p")
    shop.fork("c", "p")
    shop.sql("update users set name = 'P2' where id = 1", branch="p")
    shop.sql("insert into users(name, email) values ('C', 'c@x')", branch="c")
    assert names(shop, "c") == ["P1", "C"]
    assert names(shop, "p") == ["P2"]
    depth = "c"
    for i in range(8):
        shop.fork(f"d{i}", depth)
        depth = f"d{i}"
    assert names(shop, depth) == ["P1", "C"]
    assert shop.database.world(depth).parent == "d6"


def test_world_ids_are_never_reused_and_names_are(shop):
    first = shop.fork("t").wid
    shop.discard("t")
    second = shop.fork("t").wid
    assert first != second
    with pytest.raises(ChronosError, match="already exists"):
        shop.fork("t")


def test_discard_refuses_with_children_unless_cascade(shop):
    shop.fork("top")
    shop.fork("mid", "top")
    shop.fork("leaf", "mid")
    shop.sql("insert into users(name, email) values ('L', 'l@x')", branch="leaf")
    with pytest.raises(ChronosError, match=r"forked from it \(mid, leaf\).*cascade"):
        shop.discard("top")
    assert len(shop.database.worlds()) == 3
    gone = shop.discard("top", cascade=True)
    assert [w.name for w in gone] == ["leaf", "mid", "top"]
    assert shop.database.worlds() == []
    leftovers = shop.database.main.conn.execute("select count(*) from _chronos_o_1").fetchone()[0]
    assert leftovers == 0


def test_metadata_merge_remove_and_size_limit(shop):
    shop.fork("t", meta={"task": "x", "owner": "me"})
    world = shop.set_meta("t", {"task": None, "ticket": 7})
    assert world.meta == {"owner": "me", "ticket": 7}
    with pytest.raises(ChronosError, match="at most 65,536"):
        shop.set_meta("t", {"blob": "x" * 70_000})
    with pytest.raises(ChronosError, match="at most 65,536"):
        shop.fork("big", meta={"blob": "x" * 70_000})
    assert shop.database.world("t").meta == {"owner": "me", "ticket": 7}
    assert "big" not in [w.name for w in shop.database.worlds()]


def test_version_moves_on_with_every_write(shop):
    shop.fork("t")
    assert shop.database.world("t").version == 0
    shop.sql("update users set name = 'x' where id = 1", branch="t")
    shop.put("users", 5, {"name": "n", "email": "n@x"}, branch="t")
    shop.delete("users", 5, branch="t")
    assert shop.database.world("t").version == 3
    shop.sql("select * from users", branch="t")
    shop.sql("update users set name = 'y' where id = 999", branch="t")
    assert shop.database.world("t").version == 3


def test_fork_is_constant_work(db):
    db.sql("create table big(id integer primary key, v int)")
    db.sql(
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000) "
        "insert into big(v) select i from n"
    )
    before = db.database.main.conn.execute("select count(*) from _chronos_o_1").fetchone()[0]
    db.fork("f")
    after = db.database.main.conn.execute("select count(*) from _chronos_o_1").fetchone()[0]
    assert before == after == 0
    assert db.query("select count(*) as n from big", branch="f") == [{"n": 20000}]


def test_name_rules_and_hostile_names(db):
    with pytest.raises(ChronosError, match="U\\+0022 QUOTATION MARK at character 3"):
        db.fork('we"ird;drop')  # (a name keeps to letters, digits and _ - . : /)
    hostile = "we.ird:drop/ü-1"
    db.sql('create table "odd ""name"" ✓"(id integer primary key, "sp ace" text)')
    db.sql('insert into "odd ""name"" ✓"("sp ace") values (\'v\')')
    db.fork(hostile)
    db.sql('update "odd ""name"" ✓" set "sp ace" = \'w\'', branch=hostile)
    assert db.get('odd "name" ✓', 1, branch=hostile) == {"id": 1, "sp ace": "w"}
    assert db.get('odd "name" ✓', 1) == {"id": 1, "sp ace": "v"}
    for bad in ("main", "a@b"):
        with pytest.raises(ChronosError):
            db.fork(bad)
    with pytest.raises(ChronosError, match="'name' must be a non-empty string without spaces"):
        db.call("fork", name="has space")


def test_main_views_read_the_world_on_a_world(shop):
    shop.sql(
        "create view names as select name from users; "
        "create view upper_names as select upper(name) as u from names"
    )
    shop.fork("w")
    shop.sql("update users set name = 'Wanda' where id = 1", branch="w")
    assert shop.query("select * from upper_names", branch="w") == [{"u": "WANDA"}]
    assert shop.query("select * from upper_names") == [{"u": "ADA"}]


def test_a_world_another_connection_changed_reads_as_it_is_now(tmp_path):
    # (the catalog row a connection keeps is read again after any write, its own or another's)
    first = chronos_lite.init(tmp_path / "p")
    second = chronos_lite.open(tmp_path / "p")
    try:
        first.sql("create table t(id integer primary key, v text); insert into t(v) values ('a')")
        first.fork("w")
        assert first.sql("select v from t", branch="w").results[0].rows == [("a",)]
        second.sql("update t set v = 'b'", branch="w")
        assert first.sql("select v from t", branch="w").results[0].rows == [("b",)]
        second.discard("w")
        with pytest.raises(ChronosError, match="no branch 'w'"):
            first.sql("select v from t", branch="w")
        second.fork("w")  # the same name, a new world: main's rows
        assert first.sql("select v from t", branch="w").results[0].rows == [("a",)]
        first.sql("update t set v = 'c'", branch="w")
        first.discard("w")
        with pytest.raises(ChronosError, match="no branch 'w'"):
            second.sql("select v from t", branch="w")
    finally:
        first.close()
        second.close()
