"""Schema changes made on a world (CREATE TABLE, ADD COLUMN, DROP TABLE) merge as schema changes."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

import chronos_lite
from chronos_lite import ChronosError


def _internal_tables(db) -> list[str]:
    rows = db.query("select name from sqlite_schema where name glob '_chronos_wt_*'")
    return [r["name"] for r in rows]


def test_a_table_created_on_a_world_merges_with_its_rows(shop):
    shop.fork("w")
    shop.sql(
        "create table notes(id integer primary key, body text not null, user_id int); "
        "insert into notes(body, user_id) values ('hi', 1), ('yo', 1)",
        branch="w",
    )
    assert [r["body"] for r in shop.query("select body from notes order by id", branch="w")] == [
        "hi",
        "yo",
    ]
    with pytest.raises(ChronosError, match="no such table: notes"):
        shop.sql("select * from notes")  # main doesn't have it
    d = shop.call("diff", branch="w")
    assert d.text.splitlines()[:2] == [
        "3 changes on w (schema: created notes; notes: 0 deleted, 0 updated, 2 inserted)",
        '+ CREATE TABLE "notes"(id integer primary key, body text not null, user_id int)',
    ]
    assert shop.call("merge", branch="w").text == "merged 3 changes from w into main"
    assert shop.query("select id, body from notes order by id") == [
        {"id": 1, "body": "hi"},
        {"id": 2, "body": "yo"},
    ]
    assert _internal_tables(shop) == []
    # Now main's own: versioned like any table, its ids go on past the world's.
    shop.fork("v")
    shop.sql("update notes set body = 'hello' where id = 1")
    assert shop.query("select body from notes where id = 1", branch="v") == [{"body": "hi"}]
    out = shop.sql("insert into notes(body) values ('new') returning id", branch="v")
    assert out.results[0].rows == [(3,)]


def test_world_ids_of_a_created_table_never_collide_after_a_partial_merge(shop):
    shop.fork("w")
    shop.sql("create table t(id integer primary key, v)", branch="w")
    shop.sql("insert into t(v) values ('a'), ('b')", branch="w")
    shop.call("merge", branch="w", only_tables=["t"])
    assert shop.query("select v from t order by id") == [{"v": "a"}, {"v": "b"}]
    shop.sql("insert into t(v) values ('c')", branch="w")
    shop.sql("insert into t(v) values ('main')")
    ids = shop.query("select id from t", branch="w") + shop.query("select id from t")
    assert len({r["id"] for r in ids}) == 4  # 1, 2 shared; the world's and main's new ones differ


def test_add_column_on_a_world(shop):
    shop.sql("insert into users(name, email) values ('Bob', 'bob@x.org')")
    shop.fork("w")
    shop.sql("alter table users add column age int default 7", branch="w")
    shop.sql("update users set age = 36 where name = 'Ada'", branch="w")
    assert shop.query("select name, age from users order by id", branch="w") == [
        {"name": "Ada", "age": 36},
        {"name": "Bob", "age": 7},
    ]
    assert "age" not in shop.query("select * from users limit 1")[0]
    with pytest.raises(ChronosError, match="duplicate column name: age"):
        shop.sql("alter table users add column age text", branch="w")
    with pytest.raises(ChronosError, match="NOT NULL"):
        shop.sql("alter table users add column nick text not null", branch="w")
    shop.call("merge", branch="w")
    assert shop.query("select name, age from users order by id") == [
        {"name": "Ada", "age": 36},
        {"name": "Bob", "age": 7},
    ]
    shop.sql("update users set age = 37 where name = 'Ada'")  # history follows the new column
    shop.fork("v")
    assert shop.query("select age from users where name = 'Ada'", branch="v") == [{"age": 37}]


def test_drop_table_on_a_world(shop):
    shop.sql("create table logs(id integer primary key, msg text)")
    shop.sql("insert into logs(msg) values ('x')")
    shop.fork("w")
    shop.sql("drop table logs", branch="w")
    with pytest.raises(ChronosError, match="no such table: logs"):
        shop.sql("select * from logs", branch="w")
    assert shop.query("select count(*) as n from logs") == [{"n": 1}]
    shop.sql("drop table if exists logs", branch="w")  # already gone there: nothing to do
    shop.call("merge", branch="w")
    assert "logs" not in shop.database.tables()


def test_dropping_a_table_main_changed_since_conflicts(shop):
    shop.sql("create table logs(id integer primary key, msg text)")
    shop.fork("w")
    shop.sql("drop table logs", branch="w")
    shop.sql("insert into logs(msg) values ('late')")
    with pytest.raises(ChronosError, match="main changed rows of logs since the fork") as err:
        shop.call("merge", branch="w")
    assert err.value.code == "40001"
    assert shop.query("select msg from logs") == [{"msg": "late"}]
    assert "conflict" in shop.call("merge_preview", branch="w").text


def test_schema_conflicts_refuse_the_merge_and_change_nothing(shop):
    shop.fork("w")
    shop.sql("create table notes(a); insert into notes values (1)", branch="w")
    shop.sql("alter table users add column age int", branch="w")
    shop.sql("create table notes(b)")
    shop.sql("alter table users add column age text")
    with pytest.raises(ChronosError) as err:
        shop.call("merge", branch="w")
    assert "main has a table named notes too" in err.value.message
    assert "main has a column age in users too" in err.value.message
    assert [r["table"] for r in err.value.data] == ["notes", "users"]
    assert shop.query("select count(*) as n from notes") == [{"n": 0}]
    assert shop.query("select a from notes", branch="w") == [{"a": 1}]


def test_world_schema_statements_behave_like_sqlite(shop):
    shop.fork("w")
    with pytest.raises(ChronosError, match="table users already exists"):
        shop.sql("create table users(x)", branch="w")
    assert shop.sql("create table if not exists users(x)", branch="w").results[0].tag == (
        "CREATE TABLE"
    )
    with pytest.raises(ChronosError, match="AS SELECT"):
        shop.sql("create table c as select * from users", branch="w")
    with pytest.raises(ChronosError, match="syntax error"):
        shop.sql("create table bad(a,)", branch="w")
    with pytest.raises(ChronosError, match="no such table: nope"):
        shop.sql("alter table nope add column x", branch="w")
    with pytest.raises(ChronosError, match="statement 2 of 2 failed"):
        shop.sql("create table gone(a); insert into missing values (1)", branch="w")
    with pytest.raises(ChronosError, match="no such table: gone"):
        shop.sql("select * from gone", branch="w")
    assert _internal_tables(shop) == []
    with pytest.raises(ChronosError, match="chronos' own tables"):
        shop.sql("drop table _chronos_worlds", branch="w")


def test_discarding_a_world_removes_the_tables_it_created(shop):
    shop.fork("w")
    shop.sql("create table t(a); insert into t values (1)", branch="w")
    assert len(_internal_tables(shop)) == 1
    shop.call("discard", branch="w")
    assert _internal_tables(shop) == []
    shop.fork("w2")
    with pytest.raises(ChronosError, match="no such table: t"):
        shop.sql("select * from t", branch="w2")


def test_a_table_dropped_where_it_was_created_is_gone(shop):
    shop.fork("w")
    shop.sql("create table t(a); insert into t values (1); drop table t", branch="w")
    assert _internal_tables(shop) == []
    assert shop.call("diff", branch="w").text == "0 changes on w"


def test_nested_worlds_see_their_parents_schema_as_at_their_fork(shop):
    shop.fork("p")
    shop.sql("create table t(id integer primary key, v); insert into t(v) values ('p')", branch="p")
    shop.fork("c", source="p")
    shop.fork("early", source="p")
    shop.sql("insert into t(v) values ('c')", branch="c")
    shop.sql("create table u(x); insert into u values (1)", branch="c")
    assert shop.query("select v from t order by id", branch="c") == [{"v": "p"}, {"v": "c"}]
    shop.call("merge", branch="c")  # into p: u is p's now
    assert shop.query("select x from u", branch="p") == [{"x": 1}]
    with pytest.raises(ChronosError, match="no such table: u"):
        shop.sql("select * from u", branch="early")  # forked before p got u
    shop.call("discard", branch="early")
    shop.call("merge", branch="p")
    assert shop.query("select v from t order by id") == [{"v": "p"}, {"v": "c"}]
    assert shop.query("select x from u") == [{"x": 1}]


def test_rebase_keeps_the_worlds_schema_changes(shop):
    shop.fork("w")
    shop.sql("create table t(a); insert into t values (1)", branch="w")
    shop.sql("alter table users add column age int default 0", branch="w")
    shop.sql("insert into users(name, email) values ('Bob', 'bob@x.org')")
    assert shop.call("rebase", branch="w").text == "REBASE 1"
    assert shop.query("select name, age from users order by id", branch="w") == [
        {"name": "Ada", "age": 0},
        {"name": "Bob", "age": 0},
    ]
    assert shop.query("select a from t", branch="w") == [{"a": 1}]
    shop.sql("create table t(b)")
    with pytest.raises(ChronosError, match="main has a table named t too"):
        shop.call("rebase", branch="w")


def test_rows_of_a_created_table_through_get_put_delete(shop):
    shop.fork("w")
    shop.sql("create table kv(k text primary key, v)", branch="w")
    shop.call("put", table="kv", id="a", record={"v": 1}, branch="w")
    assert shop.call("get", table="kv", id="a", branch="w").data["row"] == {"k": "a", "v": 1}
    shop.call("delete", table="kv", id="a", branch="w")
    with pytest.raises(ChronosError, match="no row kv/a"):
        shop.call("get", table="kv", id="a", branch="w")


def test_into_another_branch_refuses_schema_changes(shop):
    shop.fork("w")
    shop.fork("other")
    shop.sql("create table t(a)", branch="w")
    with pytest.raises(ChronosError, match="schema changes merge into its parent"):
        shop.call("merge", branch="w", into="other")


def test_schema_changes_through_the_cli(tmp_path):
    folder = tmp_path / "shop"
    run_cli("init", folder)
    run_cli(folder, "sql", "create table users(id integer primary key, name text)")
    run_cli(folder, "fork", "w")
    run_cli(folder, "sql", "-b", "w", "create table notes(id integer primary key, body text)")
    run_cli(folder, "sql", "-b", "w", "insert into notes(body) values ('hi')")
    out = run_cli(folder, "diff", "w", "--as-sql").stdout
    assert 'CREATE TABLE "notes"(id integer primary key, body text);' in out
    assert 'INSERT INTO "notes"("id", "body") VALUES (1, \'hi\');' in out
    data = json.loads(run_cli(folder, "diff", "w", "--json").stdout)
    assert data["schema"] == [
        {
            "table": "notes",
            "kind": "create",
            "sql": 'CREATE TABLE "notes"(id integer primary key, body text)',
        }
    ]
    assert run_cli(folder, "merge", "w").stdout.strip() == "merged 2 changes from w into main"
    with chronos_lite.open(folder) as db:
        assert db.query("select body from notes") == [{"body": "hi"}]


def test_rows_of_a_table_the_target_lacks_conflict_instead_of_failing(shop):
    shop.sql("create table logs(id integer primary key, msg text)")
    shop.fork("p")
    shop.sql("create table notes(id integer primary key, body text)", branch="p")
    shop.fork("c", source="p")
    shop.fork("sib", source="p")
    shop.sql("insert into notes(body) values ('x'); insert into logs(msg) values ('c')", branch="c")
    shop.sql("drop table logs", branch="sib")
    for into in ("sib", None):
        if into is None:
            shop.sql("drop table logs", branch="p")
        with pytest.raises(ChronosError, match="has no table logs") as err:
            shop.call("merge", branch="c", **({"into": into} if into else {}))
        assert err.value.code == "40001"
    preview = shop.call("merge_preview", branch="c", into="sib").text
    assert "conflict" in preview
    shop.call("merge", branch="c", resolve="theirs")  # leaves the rows of logs out
    assert shop.query("select body from notes", branch="p") == [{"body": "x"}]


def test_schema_changes_move_the_version_and_dropped_rows_count_as_deletes(shop):
    shop.sql("create table logs(id integer primary key, msg text)")
    shop.sql("insert into logs(msg) values ('a'), ('b')")
    shop.fork("w")
    before = shop.database.world("w").version
    shop.sql("drop table logs", branch="w")
    assert shop.database.world("w").version == before + 1
    with pytest.raises(ChronosError, match="is at version"):
        shop.call("merge", branch="w", version=before)
    assert "It deletes 2 rows (confirm_deletes=2)" in shop.call("merge_preview", branch="w").text
    with pytest.raises(ChronosError, match="confirm_deletes is 0, but merging w deletes 2 rows"):
        shop.call("merge", branch="w", confirm_deletes=0)
    shop.call("merge", branch="w", confirm_deletes=2)
    assert "logs" not in shop.database.tables()


def test_diff_to_names_tables_whose_columns_differ(shop):
    shop.fork("w")
    shop.sql(
        "alter table users add column plan text; alter table users add column x int", branch="w"
    )
    assert shop.call("diff", branch="w").text.startswith(
        "2 changes on w (schema: added 2 columns to users)"
    )
    text = shop.call("diff", branch="w", to="main").text
    assert "(one side lacks it, or its columns differ): users" in text


def test_indexes_views_and_triggers_made_on_a_world_act_there_and_merge(shop):
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x.org')")
    shop.fork("w")
    with pytest.raises(ChronosError, match=r"UNIQUE constraint failed: users\.name") as exc:
        shop.sql(
            "insert into users(name) values ('Ada'); create unique index un on users(name)",
            branch="w",
        )  # the world's rows break it already: nothing is made
    assert exc.value.code == "23505"
    shop.sql(
        "create unique index un on users(name) where name <> 'x'; "
        "create view names as select upper(name) as n from users; "
        "create table log(what text); "
        "create trigger users_ai after insert on users begin "
        "insert into log values (new.name); end",
        branch="w",
    )
    with pytest.raises(ChronosError, match=r"UNIQUE constraint failed: users\.name"):
        shop.sql("insert into users(name) values ('Bo')", branch="w")
    shop.sql("insert into users(name) values ('x'), ('x'), ('Cy')", branch="w")  # (partial)
    assert shop.query("select n from names order by n", branch="w")[-1] == {"n": "X"}
    assert shop.query("select what from log", branch="w") == [
        {"what": "x"},
        {"what": "x"},
        {"what": "Cy"},
    ]
    lines = shop.call("diff", branch="w").text.splitlines()
    assert lines[1:5] == [
        "+ CREATE UNIQUE INDEX un on users(name) where name <> 'x'",
        "+ CREATE VIEW names as select upper(name) as n from users",
        '+ CREATE TABLE "log"(what text)',
        "+ CREATE TRIGGER users_ai after insert on users begin "
        "insert into log values (new.name); end",
    ]
    with pytest.raises(ChronosError, match="no such table: names"):
        shop.sql("select * from names")  # main doesn't have them yet
    shop.call("merge", branch="w")
    assert shop.query("select count(*) as c from log") == [{"c": 3}]  # (not fired again)
    shop.sql("insert into users(name) values ('Di')")  # the trigger is main's now
    assert shop.query("select what from log order by rowid desc limit 1") == [{"what": "Di"}]
    with pytest.raises(ChronosError, match=r"UNIQUE constraint failed: users\.name"):
        shop.sql("insert into users(name) values ('Di')")
    assert shop.query("select n from names where n = 'DI'") == [{"n": "DI"}]


def test_a_unique_index_main_s_rows_break_refuses_the_merge(shop):
    shop.fork("w")
    shop.sql("create unique index un on users(name)", branch="w")
    shop.sql("insert into users(name) values ('Ada')")  # main: a second Ada since the fork
    with pytest.raises(ChronosError, match=r"UNIQUE constraint failed: users\.name") as exc:
        shop.merge("w")
    assert exc.value.code == "23505"
    assert shop.query("select name from sqlite_schema where name = 'un'") == []


def test_drops_and_renames_on_a_world(shop):
    shop.sql("create index users_name on users(name); create view v as select name from users")
    shop.fork("w")
    for stmt, message in (
        ("alter table users drop column name", "error in index users_name after drop column"),
        ("alter table users drop column email", 'cannot drop UNIQUE column: "email"'),
        ("alter table users drop column id", "cannot drop PRIMARY KEY column"),
        ("drop index nope", "no such index: nope"),
    ):
        with pytest.raises(ChronosError, match=message):
            shop.sql(stmt, branch="w")
    shop.sql("drop index users_name", branch="w")
    with pytest.raises(ChronosError, match="error in view v after drop column"):
        shop.sql("alter table users drop column name", branch="w")
    shop.sql(
        "drop view v; alter table users drop column name; alter table users rename to people",
        branch="w",
    )
    assert shop.query("select * from people", branch="w") == [{"id": 1, "email": "ada@x.org"}]
    with pytest.raises(ChronosError, match="no such table: users"):
        shop.sql("select * from users", branch="w")
    with pytest.raises(ChronosError, match="no such table: v"):
        shop.sql("select * from v", branch="w")
    assert shop.query("select * from users") == [{"id": 1, "name": "Ada", "email": "ada@x.org"}]
    shop.merge("w")
    assert shop.query("select * from people") == [{"id": 1, "email": "ada@x.org"}]
    assert shop.query("select name from sqlite_schema where name in ('v', 'users_name')") == []
    shop.sql("insert into people(email) values ('bo@x.org')")  # versioned under its new name
    n = shop.query("select id from _chronos_tables where name = 'people' and dropped = 0")
    assert shop.query(f"select count(*) as c from _chronos_h_{n[0]['id']}")[0]["c"] > 0


def test_dropping_what_a_world_made_itself_leaves_no_change(shop):
    shop.fork("w")
    shop.sql("create index i on users(name); create view v as select 1 as one", branch="w")
    shop.sql("drop index i; drop view v", branch="w")
    assert shop.call("diff", branch="w").text == "0 changes on w"
    assert shop.query("select count(*) as c from _chronos_schema") == [{"c": 0}]


def test_a_name_main_took_since_the_fork_conflicts(shop):
    shop.fork("w")
    shop.sql("create index i on users(name)", branch="w")
    shop.sql("create view i as select 1")
    with pytest.raises(ChronosError, match="main has a view named i too") as exc:
        shop.merge("w")
    assert exc.value.code == "40001"


def test_a_check_a_world_adds_with_a_column_holds_there(tmp_path):
    db = chronos_lite.init(tmp_path / "db")
    db.sql("create table t(id integer primary key, a)")
    db.fork("w")
    db.sql("alter table t add column q int check (q >= 0)", branch="w")
    with pytest.raises(ChronosError, match=r"CHECK constraint failed: q >= 0") as err:
        db.sql("insert into t(a, q) values (1, -5)", branch="w")
    assert err.value.code == "23514"
    db.sql("insert into t(a, q) values (1, 5)", branch="w")
    assert db.query("select a, q from t", branch="w") == [{"a": 1, "q": 5}]
    db.close()


def test_a_world_whose_schema_no_longer_fits_mains_says_so_and_can_be_discarded(db):
    """A world renamed a column to a name main then added: opening it is a clear conflict (no
    raw SQLite error), nothing changes, and the world can still be discarded."""
    db.sql("create table items(id integer primary key, qty int, note text)")
    db.sql("insert into items values (1, 5, 'n')")
    db.call("fork", name="w1")
    db.sql("alter table items rename column note to extra", branch="w1")
    db.call("fork", name="w2")
    db.sql("alter table items add column extra text", branch="w2")
    db.call("merge", branch="w2")
    with pytest.raises(ChronosError) as info:
        db.query("select * from items", branch="w1")
    assert info.value.code == "40001"
    assert "w1 can't be opened: its schema changes no longer fit main's" in str(info.value)
    assert "duplicate column name: extra" in str(info.value)
    assert db.query("select * from items") == [{"id": 1, "qty": 5, "note": "n", "extra": None}]
    db.call("discard", branch="w1")
    assert [w.name for w in db.database.worlds()] == []


def test_a_merged_drop_column_then_add_column_is_no_rename(db):
    """A world drops qty and adds extra in its last place: merged, main's history keeps qty's
    values (no rename of qty to extra, which clashed with the extra the world's shadow tables
    had: 'duplicate column name'), and later merges of extra work. Found by the trust fuzz."""
    db.sql("create table items(id integer primary key, name text, qty int)")
    db.sql("insert into items values (1, 'a', 1), (2, 'b', 2)")
    db.sql("update items set qty = 3 where id = 1")  # (history keeps the row with qty 1)
    db.call("fork", name="b")
    db.sql("alter table items drop column qty", branch="b")
    db.sql("alter table items add column extra int", branch="b")
    db.call("merge", branch="b")
    db.sql("update items set extra = 5 where id = 1")
    db.call("fork", name="c")
    db.sql("update items set extra = extra + 1 where id = 1", branch="c")
    assert db.call("merge", branch="c").text == "merged 1 change from c into main"
    assert db.query("select * from items order by id") == [
        {"id": 1, "name": "a", "extra": 6},
        {"id": 2, "name": "b", "extra": None},
    ]
    (n,) = db.database.main.conn.execute(
        "select id from _chronos_tables where name = 'items'"
    ).fetchone()
    kept = [r[1] for r in db.database.main.conn.execute(f"pragma table_info(_chronos_h_{n})")]
    assert "qty" in kept and "extra" in kept
    assert db.database.main.conn.execute(
        f"select count(*) from _chronos_h_{n} where qty = 1"
    ).fetchone()[0]


def test_a_read_after_main_dropped_a_column_names_the_columns_it_returns(db):
    """A statement cached on a world's connection, prepared again by SQLite after main dropped
    a column, is shown under its new columns (apsw kept the old names when they were read
    before its first step: a row of 3 values under 4 names). Found by the trust fuzz."""
    db.sql("create table items(id integer primary key, name text, qty int)")
    db.sql("insert into items values (1, 'a', 1)")
    db.call("fork", name="w1")
    assert db.call("sql", branch="w1", sql="select * from items").data["results"][0]["columns"] == [
        "id",
        "name",
        "qty",
    ]
    db.call("fork", name="d")
    db.sql("alter table items drop column name", branch="d")
    db.call("merge", branch="d")
    db.call("rebase", branch="w1")
    (r,) = db.call("sql", branch="w1", sql="select * from items").data["results"]
    assert (r["columns"], r["rows"]) == (["id", "qty"], [[1, 1]])
    (r,) = db.call("sql", branch="w1", sql="select * from items where id = 9").data["results"]
    assert (r["columns"], r["rows"]) == (["id", "qty"], [])
