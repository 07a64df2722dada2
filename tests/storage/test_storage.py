"""Storage rules: shared counters, key kinds, schema changes by any client, SQLite's rules."""

from __future__ import annotations

import sqlite3

import pytest

from chronos_lite import ChronosError


@pytest.mark.parametrize(
    "declared",
    [
        "id integer primary key autoincrement",
        "id integer primary key",
        "id INTEGER, v text, PRIMARY KEY(id)",
    ],
)
def test_shared_counters_never_collide(db, declared):
    body = declared if "v text" in declared else f"{declared}, v text"
    db.sql(f"create table t({body})")
    db.sql("insert into t(v) values ('main-1')")
    db.fork("a")
    db.fork("b")
    db.sql("insert into t(v) values ('a-1'), ('a-2')", branch="a")
    db.sql("insert into t(v) values ('b-1')", branch="b")
    app = sqlite3.connect(db.database.path)
    app.execute("insert into t(v) values ('app-1')")
    app.commit()
    ids = {}
    for branch in ("main", "a", "b"):
        for row in db.query("select id, v from t", branch=branch):
            ids.setdefault(row["id"], set()).add(row["v"])
    assert all(len(v) == 1 for v in ids.values()), ids
    assert len(ids) == 5
    # the app still reads its own id back (lastrowid) and the table still has the same shape
    cur = app.execute("insert into t(v) values ('app-2')")
    app.commit()
    assert app.execute("select v from t where id = ?", (cur.lastrowid,)).fetchone() == ("app-2",)
    assert app.execute("pragma integrity_check").fetchone() == ("ok",)


def test_explicit_ids_in_worlds_move_the_counter(db):
    db.sql("create table t(id integer primary key, v text)")
    db.fork("a")
    db.sql("insert into t(id, v) values (100, 'a')", branch="a")
    app = sqlite3.connect(db.database.path)
    cur = app.execute("insert into t(v) values ('app')")
    app.commit()
    assert cur.lastrowid > 100


def test_table_without_primary_key(db):
    db.sql("create table notes(body text, n int)")
    db.sql("insert into notes values ('a', 1), ('b', 2), ('b', 2)")
    db.fork("w")
    db.sql("update notes set n = 5 where body = 'b'", branch="w")
    db.sql("insert into notes values ('c', 3)", branch="w")
    db.sql("delete from notes where body = 'a'", branch="w")
    rows = db.query("select body, n from notes order by body", branch="w")
    assert rows == [{"body": "b", "n": 5}, {"body": "b", "n": 5}, {"body": "c", "n": 3}]
    assert db.query("select count(*) as c from notes")[0]["c"] == 3
    assert db.get("notes", 2, branch="w") == {"body": "b", "n": 5}
    db.put("notes", 2, {"body": "B", "n": 9}, branch="w")
    db.delete("notes", 3, branch="w")
    rows = db.query("select body, n from notes order by body", branch="w")
    assert rows == [{"body": "B", "n": 9}, {"body": "c", "n": 3}]


def test_text_and_composite_keys(db):
    db.sql("create table codes(code text primary key, label text not null)")
    db.sql("create table lines(order_id int, line int, qty int, primary key(order_id, line))")
    db.sql("insert into codes values ('EUR', 'euro'); insert into lines values (17, 3, 1)")
    db.fork("w")
    db.put("codes", "USD", {"label": "dollar"}, branch="w")
    assert db.get("codes", "USD", branch="w") == {"code": "USD", "label": "dollar"}
    assert db.get("codes", "USD") is None
    assert db.get("lines", "17,3", branch="w") == {"order_id": 17, "line": 3, "qty": 1}
    db.put("lines", "[17, 4]", {"qty": 2}, branch="w")
    db.sql("update lines set qty = 10 where order_id = 17 and line = 3", branch="w")
    rows = db.query("select * from lines order by line", branch="w")
    assert rows == [{"order_id": 17, "line": 3, "qty": 10}, {"order_id": 17, "line": 4, "qty": 2}]
    assert db.query("select qty from lines") == [{"qty": 1}]
    with pytest.raises(ChronosError, match="composite key"):
        db.get("lines", "17")
    with pytest.raises(ChronosError, match="composite key"):
        db.call("get", table="lines", id="1,2,3")


def test_schema_changes_by_any_client_are_followed(db):
    db.sql("create table t(id integer primary key, a text)")
    db.sql("insert into t(a) values ('x')")
    db.fork("w")
    app = sqlite3.connect(db.database.path)
    app.execute("create table fresh(id integer primary key, v text)")
    app.execute("alter table t add column b int default 7")
    app.commit()
    db.sql("insert into fresh(v) values ('in world')", branch="w")
    assert db.query("select * from t", branch="w") == [{"id": 1, "a": "x", "b": 7}]
    db.sql("update t set b = 8", branch="w")
    app.execute("alter table t rename to t2")
    app.execute("alter table t2 rename column a to aa")
    app.commit()
    assert db.query("select * from t2", branch="w") == [{"id": 1, "aa": "x", "b": 8}]
    app.execute("update t2 set aa = 'main'")  # history keeps following the renamed table
    app.commit()
    assert db.query("select aa from t2", branch="w") == [{"aa": "x"}]
    db.sql("alter table t2 drop column b")
    assert db.query("select * from t2") == [{"id": 1, "aa": "main"}]
    db.sql("drop table fresh")
    assert "fresh" not in db.database.tables()


def test_sqlite_rules_hold_in_worlds(db):
    db.sql(
        "create table u(id integer primary key, email text unique, name text not null, "
        "n int default 42, created text default 'now')"
    )
    db.sql("insert into u(email, name) values ('a@x', 'A')")
    db.fork("w")
    with pytest.raises(ChronosError, match="UNIQUE constraint failed: u.email"):
        db.sql("insert into u(email, name) values ('a@x', 'B')", branch="w")
    with pytest.raises(ChronosError, match="UNIQUE constraint failed: u.id"):
        db.sql("insert into u(id, email, name) values (1, 'z@x', 'B')", branch="w")
    with pytest.raises(ChronosError, match="NOT NULL constraint failed: u.name"):
        db.sql("insert into u(email) values ('b@x')", branch="w")
    with pytest.raises(ChronosError, match="datatype mismatch"):
        db.sql("insert into u(id, email, name) values ('abc', 'c@x', 'C')", branch="w")
    db.sql("insert into u(email, name) values ('b@x', 'B')", branch="w")
    assert db.query("select n, created from u where email = 'b@x'", branch="w") == [
        {"n": 42, "created": "now"}
    ]
    out = db.sql("insert or ignore into u(email, name) values ('a@x', 'dup')", branch="w")
    assert out.results[0].tag == "INSERT 0 0"
    db.sql("insert or replace into u(email, name) values ('a@x', 'R')", branch="w")
    assert db.query("select name from u where email = 'a@x'", branch="w") == [{"name": "R"}]
    with pytest.raises(ChronosError, match="UNIQUE constraint failed: u.email"):
        db.sql("update u set email = 'b@x' where name = 'R'", branch="w")
    db.sql("insert into u(id, email, name) values ('77', 'd@x', 'D')", branch="w")
    assert db.get("u", 77, branch="w")["name"] == "D"
    assert db.query("select count(*) as c from u") == [{"c": 1}]


def test_schema_changes_a_world_cannot_make_are_refused_clearly(shop):
    shop.fork("w")
    with pytest.raises(ChronosError, match="create the table with its columns, then INSERT"):
        shop.sql("create table copy as select * from users", branch="w")
    shop.sql("alter table users rename column name to full_name", branch="w")
    with pytest.raises(ChronosError, match="add the new column under another name"):
        shop.sql("alter table users add column name text", branch="w")
    assert shop.query("select full_name from users", branch="w") == [{"full_name": "Ada"}]
    assert shop.query("select name from users") == [{"name": "Ada"}]


def test_a_program_s_temp_objects_last_as_on_its_own_connection(shop):
    shop.fork("w")
    out = shop.sql(
        "create temp table scratch(a); insert into scratch values (1); "
        "select count(*) as c from scratch",
        branch="w",
    )
    assert out.results[-1].rows == [(1,)]
    assert shop.sql("select * from scratch", branch="w").results[-1].rows == [(1,)]
    with pytest.raises(ChronosError, match="no such table: scratch"):
        shop.sql("select * from scratch")  # (another branch: another connection)
    # a TEMP view of the user's outlives the world's views being made again (a schema change),
    # and stays TEMP: main never gets it
    shop.sql("create temp view twice as select a * 2 as b from scratch", branch="w")
    shop.sql("create index users_name on users(name)", branch="w")
    assert shop.sql("select b from twice", branch="w").results[-1].rows == [(2,)]
    assert shop.query("select name from sqlite_schema where name = 'twice'") == []
    shop.database.keep_temp = False  # as MCP has it: each call its own session
    shop.sql("create temp table other(a)", branch="w")
    with pytest.raises(ChronosError, match="no such table: other"):
        shop.sql("select * from other", branch="w")


def test_integer_ids_are_checked(db):
    db.sql("create table t(id integer primary key, v text)")
    with pytest.raises(ChronosError, match="'id' must be an integer for table t"):
        db.get("t", "x")


def test_insert_returning_on_a_world_sees_allocated_keys_and_defaults(db):
    db.sql("create table u(id integer primary key, name text, n int default 5)")
    db.sql("create table c(code text primary key, label text default 'x')")
    db.sql("create table lines(a int, b int, q int default 1, primary key(a, b))")
    db.sql("create table notes(body text, at text default 'now')")
    db.fork("w")
    out = db.sql("insert into u(name) values ('a'), ('b') returning id, name, n", branch="w")
    assert out.results[0].columns == ["id", "name", "n"]
    assert out.results[0].rows == [(1, "a", 5), (2, "b", 5)]
    out = db.sql("insert into c(code) values ($1) returning *", "EUR", branch="w")
    assert out.results[0].rows == [("EUR", "x")]
    out = db.sql("insert into lines(a, b) values ('17', 3) returning a + b as s, q", branch="w")
    assert out.results[0].rows == [(20, 1)]
    out = db.sql("insert into notes as nn(body) values ('hi') returning nn.body, nn.at", branch="w")
    assert out.results[0].rows == [("hi", "now")]
    assert db.database.world("w").version == 4
    assert db.query("select count(*) as c from u") == [{"c": 0}]


UPSERTS = [
    "insert into kv(k, v) values ('a', 10), ('b', 2) on conflict(k) do update "
    "set v = excluded.v + $1, hits = hits + 1 returning *",
    "insert into kv(k, v) values ('a', 5) on conflict do nothing",
    "insert into kv(k, v) values ('c', 5) on conflict (k) do nothing returning k",
    "insert into kv as x(k, v) values ('b', 5) on conflict(k) do update set v = x.v * 2 "
    "where x.v < 50",
    "insert into kv(k, v, tag) values ('d', 1, 't') on conflict(tag) do update set v = 99",
    "insert into kv(k, v, tag) values ('e', 1, 't') on conflict(tag) do update set v = v + 1",
]


def test_upsert_on_a_world_behaves_as_on_main(db):
    db.sql(
        "create table kv(k text primary key, v int not null, hits int default 0, tag text unique)"
    )
    db.sql("insert into kv(k, v) values ('a', 1)")
    db.fork("w")
    for stmt in UPSERTS:
        on_main = db.sql(stmt, 100).results[0]
        on_world = db.sql(stmt, 100, branch="w").results[0]
        assert (on_world.columns, on_world.rows, on_world.tag) == (
            on_main.columns,
            on_main.rows,
            on_main.tag,
        ), stmt
    everything = "select * from kv order by k"
    assert db.query(everything, branch="w") == db.query(everything)
    for bad, message in [
        ("insert into kv(k, v) values ('a', 1) on conflict(v) do nothing", "does not match any"),
        (
            "insert into kv(k, v) values ('z', null) on conflict(k) do update set v = 1",
            "NOT NULL constraint failed: kv.v",
        ),
    ]:
        with pytest.raises(ChronosError, match=message):
            db.sql(bad, branch="w")
    # the world's ordinary INSERT is back after a failed upsert
    with pytest.raises(ChronosError, match="UNIQUE constraint failed: kv.k"):
        db.sql("insert into kv(k, v) values ('a', 1)", branch="w")


def test_a_column_added_on_main_reads_its_default_in_changed_rows_too(db):
    db.sql("create table t(id integer primary key, a text)")
    db.sql("insert into t(a) values ('x'), ('y')")
    db.fork("w")
    db.sql("update t set a = 'changed' where id = 1", branch="w")
    db.sql("update t set a = 'main' where id = 2")
    app = sqlite3.connect(db.database.path)
    app.execute("alter table t add column tier text default 'free'")
    app.commit()
    app.close()
    rows = db.query("select id, a, tier from t order by id", branch="w")
    assert rows == [{"id": 1, "a": "changed", "tier": "free"}, {"id": 2, "a": "y", "tier": "free"}]


def test_schema_syncs_keep_one_counter_per_table(db):
    db.sql("create table t(id integer primary key, v text)")
    db.sql("insert into t(v) values ('a')")
    db.sql("create table u(x int)")
    db.sql("create view vv as select 1")
    rows = db.query("select name, seq from sqlite_sequence where name = 't'")
    assert rows == [{"name": "t", "seq": 1}]


def test_generated_columns_are_computed_in_world_rows(db):
    db.sql(
        "create table t(id integer primary key, a int, "
        "b int generated always as (a * 2) virtual, c text as ('x' || a) stored)"
    )
    db.sql("insert into t(a) values (1)")
    db.fork("w")
    db.sql("insert into t(a) values (5)", branch="w")
    db.sql("update t set a = 3 where id = 1", branch="w")
    rows = db.query("select * from t order by id", branch="w")
    assert rows == [{"id": 1, "a": 3, "b": 6, "c": "x3"}, {"id": 2, "a": 5, "b": 10, "c": "x5"}]
    assert db.query("select * from t") == [{"id": 1, "a": 1, "b": 2, "c": "x1"}]
