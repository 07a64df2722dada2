"""A changed table copied whole on a world's connection (``config whole_rows``): read as SQLite
reads a table, whatever the query's shape; a bigger table read apart (main's rows and the
world's). Every test here runs both ways (``conftest.copies``)."""

from __future__ import annotations

import sqlite3

import pytest

import chronos_lite
from chronos_lite import ChronosError
from chronos_lite.statements import worldrun
from chronos_lite.storage.world import demand


def _plan(db: chronos_lite.Chronos, sql: str, branch: str) -> str:
    rows = db.sql(f"explain query plan {sql}", branch=branch).results[-1].rows
    return "\n".join(str(r[-1]) for r in rows)


@pytest.fixture
def shop(tmp_path):
    db = chronos_lite.init(tmp_path / "db")
    db.sql(
        "create table items(id integer primary key, name text collate nocase, cat int);"
        "create table orders(id integer primary key, item_id int, qty int);"
        "create index items_cat on items(cat)"
    )
    db.sql(
        "insert into items(name, cat) values ('b', 1), ('A', 2), ('c', 1), ('B', 3);"
        "insert into orders(item_id, qty) values (1, 2), (2, 1), (3, 5), (4, 1)"
    )
    db.fork("w")
    db.sql(
        "update items set cat = 9 where id = 3; update orders set qty = 7 where id = 1", branch="w"
    )
    yield db
    db.close()


def test_a_key_join_under_order_by_reads_the_copy_as_a_table(shop, copies):
    sql = (
        "select o.id, i.name from orders o join items i on i.id = o.item_id "
        "where o.id = 3 order by o.id"
    )
    assert shop.sql(sql, branch="w").results[-1].rows == [(3, "c")]
    plan = _plan(shop, sql, "w")
    if copies == "whole":  # (read apart, SQLite materializes the compound view instead)
        assert "MATERIALIZE" not in plan and "CO-ROUTINE" not in plan, plan
        session = shop.database.session("w")
        assert session.whole == session.materialized == {1, 2}
    else:
        assert not shop.database.session("w").whole


def test_a_column_keeps_its_collation_on_a_world(shop):
    rows = shop.sql("select name from items order by name, id", branch="w").results[-1].rows
    assert rows == [("A",), ("b",), ("B",), ("c",)]
    found = shop.sql("select id from items where name = 'C'", branch="w").results[-1].rows
    assert found == [(3,)]


def test_not_indexed_scans_in_key_order_as_on_main(shop, copies):
    sql = "select group_concat(id) from items not indexed where cat > 0"
    main = shop.sql(sql).results[-1].rows
    shop.sql("update items set cat = 0 where id = 4", branch="w")
    world = shop.sql(sql.replace("cat > 0", "cat >= 0"), branch="w").results[-1].rows
    if copies == "apart":  # (main's rows first, then the world's: see storage.md)
        assert world == [("1,2,4,3",)]
        return
    assert main == world == [("1,2,3,4",)]
    aliased = "select group_concat(x.id) from items as x not indexed join orders o on o.id = x.id"
    assert shop.sql(aliased, branch="w").results[-1].rows == [("1,2,3,4",)]
    # (main's table, named as main's: not the world's)
    qualified = shop.sql("select count(*) from main.items not indexed", branch="w")
    assert qualified.results[-1].rows == [(4,)]


def test_main_changed_after_the_copy_doesnt_reach_the_world(shop, tmp_path):
    shop.sql("select count(*) from items", branch="w")  # (the connection placed, copied)
    raw = sqlite3.connect(shop.database.folder / "chronos.db")
    with raw:
        raw.execute("update items set name = 'zz' where id = 2")
        raw.execute("insert into items(name, cat) values ('new', 1)")
        raw.execute("delete from items where id = 1")
    raw.close()
    rows = shop.sql("select id, name, cat from items order by id", branch="w").results[-1].rows
    assert rows == [(1, "b", 1), (2, "A", 2), (3, "c", 9), (4, "B", 3)]
    assert shop.sql("select count(*) from items", branch="w").results[-1].rows == [(4,)]


def test_whole_rows_is_a_setting(tmp_path, copies):
    default = 100_000 if copies == "whole" else 0  # (read apart: the tests set the default 0)
    db = chronos_lite.init(tmp_path / "db")
    assert db.call("config", setting="whole_rows").data == {"whole_rows": default}
    with pytest.raises(ChronosError, match="whole_rows is a number of rows"):
        db.call("config", setting="whole_rows", value="lots")
    assert db.call("config", setting="whole_rows").data == {"whole_rows": default}
    db.sql("create table t(id integer primary key, v); insert into t(v) values (1), (2), (3)")
    db.call("config", setting="whole_rows", value="2")
    db.fork("w")
    db.sql("update t set v = 5 where id = 1", branch="w")
    assert not db.database.session("w").whole  # (3 rows: more than 2)
    assert db.sql("select sum(v) from t", branch="w").results[-1].rows == [(10,)]
    db.close()


def test_a_join_that_would_read_a_big_table_whole_copies_it_once(shop, monkeypatch):
    shop.call("config", setting="whole_rows", value="1")  # (every table here is "big")
    monkeypatch.setattr(demand, "COPY_S", 1e9)  # (the scans' time alone copies nothing)
    monkeypatch.setattr(demand, "LEAST_ROWS", 0)
    shop.database.close_session(shop.database.world("w").id)  # (placed again: read apart)
    sql = (
        "select o.id, count(*), sum(o.qty) from orders o join items i on i.id = o.item_id "
        "where o.id = $1 group by o.id"
    )
    expected = {1: [(1, 1, 7)], 2: [(2, 1, 1)], 3: [(3, 1, 5)]}
    assert shop.sql(sql, 1, branch="w").results[-1].rows == expected[1]
    session = shop.database.session("w")
    assert session.whole == set() and session.materialized == {1, 2}
    assert shop.sql(sql, 2, branch="w").results[-1].rows == expected[2]  # (the second: copies)
    assert session.bigger == session.whole == {1, 2}
    assert shop.sql(sql, 3, branch="w").results[-1].rows == expected[3]
    plan = _plan(shop, sql.replace("$1", "3"), "w")
    assert "MATERIALIZE" not in plan and "CO-ROUTINE" not in plan, plan
    # (a one-table read of the whole table is read whole on main too: nothing copied for it)
    shop.database.close_session(shop.database.world("w").id)
    for _ in range(3):
        shop.sql("select cat, count(*) from items group by cat", branch="w")
    assert shop.database.session("w").bigger == set()


def test_reads_that_scan_a_big_table_copy_it_once_they_cost_as_much(shop, monkeypatch):
    shop.call("config", setting="whole_rows", value="1")
    shop.database.close_session(shop.database.world("w").id)
    monkeypatch.setattr(demand, "COPY_S", 1e9)  # (no read costs a copy yet)
    monkeypatch.setattr(demand, "LEAST_ROWS", 0)
    sql = "select sum(cat), count(*) from items"
    assert shop.sql(sql, branch="w").results[-1].rows == [(15, 4)]
    session = shop.database.session("w")
    assert session.bigger == set() and session.scan_time.get(1, 0) > 0
    monkeypatch.setattr(demand, "COPY_S", 0.0)  # (any read's time is a copy's: copied after it)
    assert shop.sql(sql, branch="w").results[-1].rows == [(15, 4)]
    assert session.bigger == {1} and 1 in session.whole
    assert shop.sql(sql, branch="w").results[-1].rows == [(15, 4)]
    assert shop.sql(sql).results[-1].rows == [(7, 4)]  # (main's own)


def test_indexed_by_reads_a_whole_copy_by_that_index(shop, copies):
    sql = "select group_concat(x.id) from items as x indexed by items_cat where x.cat >= 0"
    main = shop.sql(sql).results[-1].rows
    shop.sql("update items set name = 'bb' where id = 1", branch="w")
    if copies == "apart":  # (a view read apart has no such index: SQLite says so)
        with pytest.raises(ChronosError, match="no such index"):
            shop.sql(sql, branch="w")
        return
    assert main == [("1,3,2,4",)]  # (by cat: 1, 1, 2, 3)
    assert shop.sql(sql, branch="w").results[-1].rows == [("1,2,4,3",)]  # (the world's 3: cat 9)
    session = shop.database.session("w")
    assert 1 in session.native  # (a real TEMP table: SQLite takes the clause as written)
    assert worldrun.unindexed(session, sql) == sql
    plan = " ".join(str(r[-1]) for r in session.conn.execute(f"explain query plan {sql}"))
    assert "INDEX items_cat" in plan, plan
    with pytest.raises(ChronosError, match="no such index: nope"):
        shop.sql("select * from items indexed by nope", branch="w")


def test_indexed_by_reads_an_emulated_whole_copy_by_its_mirror_of_that_index(tmp_path, copies):
    """A table whose rules a TEMP table can't keep alone (an app trigger: ``world.native``) is
    a view over its copy: the clause is read through a view of the copy by that index."""
    db = chronos_lite.init(tmp_path / "db")
    db.sql("create table items(id integer primary key, code text, cat int)")
    db.sql("create trigger items_t after insert on items begin select 1; end")
    db.sql("create index items_cat on items(cat)")
    db.sql("insert into items(code, cat) values ('a', 1), ('b', 2), ('c', 1), ('d', 3)")
    db.fork("w")
    db.sql("update items set cat = 9 where id = 3", branch="w")
    sql = "select group_concat(x.id) from items as x indexed by items_cat where x.cat >= 0"
    if copies == "apart":
        with pytest.raises(ChronosError, match="no such index"):
            db.sql(sql, branch="w")
        return
    assert db.sql(sql, branch="w").results[-1].rows == [("1,2,4,3",)]
    session = db.database.session("w")
    assert 1 in session.whole and 1 not in session.native
    rewritten = worldrun.unindexed(session, sql)
    plan = " ".join(str(r[-1]) for r in session.conn.execute(f"explain query plan {rewritten}"))
    assert "_chronos_l1_i0" in plan, plan
    db.close()
