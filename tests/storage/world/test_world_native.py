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
create table node(id integer primary key, up int references node(id));
create table watched(id integer primary key, v);
create table seen(m);
create trigger watched_seen after insert on watched begin insert into seen values (new.v); end;
create table texts(k text primary key, v);
insert into items(name, price) values ('a', 1), ('b', 2), ('c', 3);
insert into tags values ('x', 1), ('y', 2);
insert into coded(code) values ('a'), ('b');
insert into parent values (1), (2);
insert into child values (1, 1);
insert into node values (1, null);
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
    for table in ("items", "tags", "coded", "child", "watched", "texts", "node"):
        db.sql(f"delete from {table} where 0", branch="w")
        db.database.writable(db.database.session("w"), table)
    session = db.database.session("w")
    assert session.schema is not None
    native = {name for name, (n, _t) in session.schema.tables.items() if n in session.native}
    if copies == "apart":
        assert session.native == set()
        return
    # (parent: copied natively with child, whose foreign key SQLite then checks against it)
    assert native == {"items", "tags", "coded", "child", "parent"}, native


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


SHOP = """
create table customers(id integer primary key, name text not null unique);
create table invoices(id integer primary key, customer int not null references customers(id),
                      total real default 0);
create table lines(id integer primary key,
                   invoice int references invoices(id) on delete cascade on update cascade,
                   note int references notes(id) on delete set null deferrable initially deferred,
                   qty int check (qty > 0));
create table notes(id integer primary key, body text);
insert into customers(name) values ('ann'), ('bob');
insert into invoices(customer, total) values (1, 10), (1, 20), (2, 30);
insert into notes(body) values ('n1'), ('n2');
insert into lines(invoice, note, qty) values (1, 1, 1), (1, null, 2), (2, 2, 3), (3, 1, 4);
"""


@pytest.fixture
def shop(tmp_path):
    with chronos_lite.init(tmp_path / "shop") as db:
        db.sql(SHOP)
        db.fork("w")
        yield db


def test_tables_linked_by_foreign_keys_are_copied_natively_together(shop, copies):
    """Writing one table of a group makes every table its keys link the world's own, natively,
    and SQLite keeps the keys: failures, cascades, SET NULL and deferred keys as on main."""
    plain = apsw.Connection(":memory:")
    plain.execute("pragma foreign_keys = on")
    plain.execute(SHOP)
    shop.sql("update lines set qty = qty + 1 where id = 1", branch="w")
    plain.execute("update lines set qty = qty + 1 where id = 1")
    session = shop.database.session("w")
    assert session.schema is not None
    native = {name for name, (n, _t) in session.schema.tables.items() if n in session.native}
    assert native == ({"customers", "invoices", "lines", "notes"} if copies == "whole" else set())
    for sql in (
        "delete from invoices where id = 1",  # (its lines go with it)
        "update invoices set id = 9 where id = 2",  # (its line follows)
        "delete from notes where id = 1",  # (the lines' note set null)
        "insert into lines(invoice, qty) values (9, 5) returning id, invoice",
        "begin; insert into lines(invoice, note, qty) values (3, 7, 1); "
        "insert into notes(id, body) values (7, 'late'); commit",  # (deferred: holds at commit)
    ):
        assert rows(shop, sql) == plain.execute(sql).fetchall(), sql
    for sql, message in (
        ("insert into invoices(customer) values (5)", "FOREIGN KEY constraint failed"),
        ("delete from customers where id = 2", "FOREIGN KEY constraint failed"),
        ("insert into lines(invoice, qty) values (3, 0)", "CHECK constraint failed"),
    ):
        with pytest.raises(ChronosError, match=message):
            shop.sql(sql, branch="w")
    with pytest.raises(ChronosError, match="rolled back\\): FOREIGN KEY constraint failed"):
        shop.sql("begin; insert into lines(note, qty) values (8, 1); commit", branch="w")
    for table in ("customers", "invoices", "lines", "notes"):
        read = f"select * from {table} order by id"
        assert rows(shop, read) == plain.execute(read).fetchall(), table
    assert written(shop, "lines") == [
        ("delete", "1"),
        ("delete", "2"),
        ("insert", "5"),
        ("insert", "6"),
        ("update", "3"),
        ("update", "4"),
    ]
    assert written(shop, "invoices") == [("delete", "1"), ("delete", "2"), ("insert", "9")]
    shop.merge("w")
    for table in ("customers", "invoices", "lines", "notes"):
        read = f"select * from {table} order by id"
        assert rows(shop, read, "main") == plain.execute(read).fetchall(), table


def test_rows_whose_keys_main_never_checked_keep_the_group_apart(shop, tmp_path, copies):
    """Main written by a client without foreign keys on (SQLite's default) may hold a child
    whose parent is gone: the world copies the group apart instead, and writes it as before."""
    raw = apsw.Connection(str(tmp_path / "shop" / "chronos.db"))
    raw.execute("pragma foreign_keys = off")
    raw.execute("insert into lines(invoice, qty) values (77, 1)")
    raw.close()
    shop.fork("v")
    shop.sql("update lines set qty = 9 where invoice = 77", branch="v")
    session = shop.database.session("v")
    assert session.native == set()
    assert rows(shop, "select qty from lines where invoice = 77", "v") == [(9,)]
    with pytest.raises(ChronosError, match="FOREIGN KEY constraint failed"):
        shop.sql("insert into invoices(customer) values (5)", branch="v")
    with chronos_lite.open(tmp_path / "shop") as again:  # (a new connection placed on it)
        assert rows(again, "select qty from lines where invoice = 77", "v") == [(9,)]
        again.sql("delete from lines where invoice = 77", branch="v")
        assert again.database.session("v").native == set()
        assert rows(again, "select count(*) from lines", "v") == [(4,)]


def test_a_group_written_back_as_data_by_a_rollback_and_a_merge(shop, copies):
    """A rollback and a merge into a world write rows as data, in any order: the keys between
    a group's copies are checked at the commit (as a restore on main does), not row by row."""
    tables = ("customers", "invoices", "lines", "notes")

    def world(branch: str) -> list:
        return [rows(shop, f"select * from {t} order by id", branch) for t in tables]

    shop.sql("update lines set qty = 7 where id = 4", branch="w")
    shop.call("checkpoint", branch="w", name="start")
    then = world("w")
    shop.sql(
        "delete from invoices where customer = 1; delete from customers where id = 1; "
        "delete from notes where id = 2",
        branch="w",
    )
    shop.call("rollback", branch="w", checkpoint="start")
    assert world("w") == then
    shop.fork("v", "w")
    shop.sql(
        "delete from lines where invoice = 3; delete from invoices where id = 3; "
        "delete from customers where id = 2; insert into customers(name) values ('cy')",
        branch="v",
    )
    shop.merge("v", into="w")
    assert world("w") == world("v")
    shop.fork("u", "w")
    shop.sql("delete from invoices where customer = 1", branch="u")
    shop.sql("delete from customers where id = 1", branch="u")
    shop.sql("insert into invoices(customer) values (1)", branch="w")
    with pytest.raises(ChronosError, match="would break a foreign key: rows of invoices"):
        shop.merge("u", into="w")  # (as into main: told before anything is written)


def test_a_group_copies_natively_only_up_to_whole_rows_together(shop, monkeypatch):
    """The first write to one table copies its whole group: bounded by ``whole_rows`` as one
    table's copy is (11 rows here, each table under 10: kept emulated)."""
    from chronos_lite.storage.world import state as worldstate

    monkeypatch.setattr(worldstate, "WHOLE_ROWS", 10)
    shop.sql("update notes set body = 'x' where id = 1", branch="w")
    session = shop.database.session("w")
    assert session.native == set() and session.whole  # (notes: an emulated whole copy)
    assert rows(shop, "select body from notes order by id") == [("x",), ("n2",)]


def test_a_group_placed_again_records_nothing(shop, copies):
    """Placing a world again drops its copies: children first and their triggers first, so a
    parent's drop (SQLite empties it) neither breaks a key nor cascades into a recorded
    delete of the children."""
    shop.sql("update lines set qty = 8 where id = 1", branch="w")
    before = (written(shop, "lines"), written(shop, "invoices"))
    session = shop.database.session("w")
    for _ in range(2):
        shop.database.place_again(session)
        assert rows(shop, "select count(*) from lines") == [(4,)]
    assert (written(shop, "lines"), written(shop, "invoices")) == before == ([("update", "1")], [])
