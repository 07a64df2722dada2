"""A whole copy whose rules SQLite keeps alone is a real TEMP table (``world.native``): its
statements run as on main, its writes land in the overlay as an emulated table's do, and its
new keys come from the counter every world shares. Each test runs with the table copied whole
(native) and read apart (emulated): the same answers both ways."""

from __future__ import annotations

import apsw
import pytest

import chronos_lite
from chronos_lite import ChronosError

APP = """
create table items(id integer primary key, name text not null default 'x',
                   price real check (price >= 0), twice real generated always as (price * 2));
create index items_name on items(name);
create table tags(k text primary key, v int) without rowid;
create table coded(id integer primary key, code text unique);
create table parent(id integer primary key);
create table child(id integer primary key, p int references parent(id));
create table watched(id integer primary key, v);
create table seen(m);
create trigger watched_seen after insert on watched begin insert into seen values (new.v); end;
create table texts(k text primary key, v);
insert into items(name, price) values ('a', 1), ('b', 2), ('c', 3);
insert into tags values ('x', 1), ('y', 2);
insert into coded(code) values ('a'), ('b');
create unique index coded_upper on coded(upper(code)) where code <> 'free';
"""


@pytest.fixture
def db(tmp_path):
    with chronos_lite.init(tmp_path / "db") as db:
        db.sql(APP)
        db.fork("w")
        yield db


def rows(db, sql: str, branch: str = "w") -> list[tuple]:
    return db.sql(sql, branch=branch).results[-1].rows


def written(db, table: str) -> list[tuple]:
    """What diff says the world changed in ``table``: (kind, key) pairs, from the overlay."""
    found = db.call("diff", branch="w").data
    return sorted((c["kind"], c["id"]) for c in found["changes"] if c["table"] == table)


def test_only_tables_whose_rules_a_temp_table_keeps_alone_are_native(db, copies):
    for table in ("items", "tags", "coded", "child", "parent", "watched", "texts"):
        db.sql(f"delete from {table} where 0", branch="w")
        db.database.writable(db.database.session("w"), table)
    session = db.database.session("w")
    assert session.schema is not None
    native = {name for name, (n, _t) in session.schema.tables.items() if n in session.native}
    if copies == "apart":
        assert session.native == set()
        return
    assert native == {"items", "tags", "coded"}, native


def test_statements_run_as_on_main_and_land_in_the_overlay(db, copies):
    sqls = [
        "insert into items(price) values (4) returning id, name, twice",
        "insert into items(id, price) values (1, 9) on conflict(id) do update set price = "
        "excluded.price + 1 returning price, twice",
        "insert or replace into items(id, name, price) values (2, 'bb', 5)",
        "insert into tags values ('x', 7) on conflict do nothing",
        "insert into tags values ('z', 3) on conflict(k) do update set v = 0",
        "update tags set v = v + 10 where k = 'y' returning k, v",
        "delete from items where id = 3 returning name",
    ]
    plain = apsw.Connection(":memory:")  # (SQLite itself, the same schema and rows)
    plain.execute(APP)
    for sql in sqls:
        assert rows(db, sql) == plain.execute(sql).fetchall(), sql
    for table in ("items", "tags"):
        read = f"select * from {table} order by 1"
        assert rows(db, read) == plain.execute(read).fetchall(), table
    assert written(db, "items") == [
        ("delete", "3"),
        ("insert", "4"),
        ("update", "1"),
        ("update", "2"),
    ]


def test_a_broken_rule_fails_as_on_main_and_changes_nothing(db, copies):
    before = rows(db, "select * from items order by id")
    for sql, message in (
        ("insert into items(price) values (-1)", "CHECK constraint failed"),
        ("insert into items(name, price) values (null, 1)", "NOT NULL constraint failed"),
        ("insert into items(id, price) values (1, 1)", "UNIQUE constraint failed: items.id"),
        ("update items set twice = 1", "cannot UPDATE generated column"),
    ):
        with pytest.raises(ChronosError, match=message):
            db.sql(f"insert into items(price) values (7); {sql}", branch="w")
        assert rows(db, "select * from items order by id") == before, sql
    assert written(db, "items") == []


def test_a_key_moved_by_an_update_is_a_delete_and_an_insert(db, copies):
    db.sql("update items set id = 50 where id = 2", branch="w")
    assert rows(db, "select id, name from items order by id") == [(1, "a"), (3, "c"), (50, "b")]
    assert written(db, "items") == [("delete", "2"), ("insert", "50")]
    db.sql("insert into items(price) values (1)")  # (main's next key: past the world's 50)
    assert rows(db, "select max(id) from items", "main") == [(51,)]


def test_worlds_and_main_never_take_the_same_new_key(db, copies):
    db.fork("v")
    db.sql("insert into items(price) values (1)", branch="w")  # 4
    db.sql("insert into items(price) values (1)", branch="v")  # 5
    db.sql("insert into items(price) values (1)")  # main: 6
    db.sql("insert into items(price) values (1)", branch="w")  # 7: past main's, placed before
    assert [r[0] for r in rows(db, "select id from items where id > 3")] == [4, 7]
    assert [r[0] for r in rows(db, "select id from items where id > 3", "v")] == [5]
    db.merge("w")
    db.merge("v")
    assert [r[0] for r in rows(db, "select id from items order by id", "main")] == [
        1, 2, 3, 4, 5, 6, 7,
    ]  # fmt: skip


def test_a_rolled_back_transaction_leaves_neither_rows_nor_overlay(db, copies):
    db.sql(
        "begin; insert into items(price) values (8); update tags set v = 0; rollback",
        branch="w",
    )
    assert rows(db, "select count(*) from items") == [(3,)]
    assert rows(db, "select v from tags order by k") == [(1,), (2,)]
    assert written(db, "items") == [] and written(db, "tags") == []
    db.sql("insert into items(price) values (8)", branch="w")  # (placed again: still works)
    assert written(db, "items") == [("insert", "4")]


def test_the_world_read_as_it_was_and_undone(db, copies):
    import time
    from datetime import UTC, datetime

    db.sql("update items set price = 10 where id = 1", branch="w")
    moment = datetime.fromtimestamp(time.time(), UTC).isoformat()
    time.sleep(0.05)
    db.sql("delete from items where id = 1; insert into items(price) values (6)", branch="w")
    then = f"w@{moment}"
    assert rows(db, "select id, price from items order by id", then) == [
        (1, 10.0),
        (2, 2.0),
        (3, 3.0),
    ]
    assert rows(db, "select count(*) from items", then) == [(3,)]
    assert rows(db, "select count(*) from items") == [(3,)]


def test_a_user_cannot_reach_around_the_copys_triggers(db, copies):
    db.sql("update items set price = 5 where id = 1", branch="w")
    for sql in (
        "drop table temp.items",
        "alter table temp.items rename to gone",
        "create unique index temp.by_name on items(name)",
        "update temp.sqlite_sequence set seq = 0",
        "drop trigger temp._chronos_w_ni_1",
    ):
        with pytest.raises(ChronosError):
            db.sql(sql, branch="w")
    db.sql("insert into items(price) values (1)", branch="w")
    assert written(db, "items") == [("insert", "4"), ("update", "1")]


def test_a_replace_that_deletes_the_row_in_a_unique_rules_way_is_recorded(db, copies):
    """REPLACE deletes the row holding the value: on a native copy its DELETE trigger records
    it (a world's connection runs recursive_triggers on)."""
    plain = apsw.Connection(":memory:")
    plain.execute(APP)
    for sql in (
        "insert or replace into coded(code) values ('a') returning id",
        "insert into coded(code) values ('B') on conflict do nothing returning id",
        "update or replace coded set code = 'A' where id = 2 returning id",
        "insert into coded(code) values ('free') returning code",  # (id: the shared counter's)
    ):
        assert rows(db, sql) == plain.execute(sql).fetchall(), sql
    read = "select code from coded order by code"
    assert rows(db, read) == plain.execute(read).fetchall()
    with pytest.raises(apsw.ConstraintError) as on_plain:
        plain.execute("insert into coded(code) values ('A')")
    with pytest.raises(ChronosError, match=str(on_plain.value).split(": ", 1)[1]):
        db.sql("insert into coded(code) values ('A')", branch="w")
    # (row 3, inserted by the first REPLACE, went in the third's: main never had it)
    free = str(rows(db, "select id from coded where code = 'free'")[0][0])
    assert written(db, "coded") == [("delete", "1"), ("insert", free), ("update", "2")]
