"""ALTER TABLE ... RENAME COLUMN on a world: what it does there is what it does on main (the
column's rules, indexes, triggers, views, checks and generated columns follow it), the world's
rows keep their values under the new name, and a merge renames the column on main."""

from __future__ import annotations

import time

import pytest
from differential import same_then_merged
from helpers import run_cli
from mcp_lines import Server

import chronos_lite
from chronos_lite import ChronosError

SHAPES = {
    "integer key": "create table t(id integer primary key, a text, b int)",
    "no key": "create table t(a text, b int)",
    "text key": "create table t(id text primary key, a text, b int)",
    "composite key": "create table t(id int, k text, a text, b int, primary key (id, k))",
    "without rowid": "create table t(id text primary key, a text, b int) without rowid",
}
ROWS = {
    "integer key": "insert into t values (1, 'x', 10), (2, 'y', 20), (3, 'z', 30)",
    "no key": "insert into t values ('x', 10), ('y', 20), ('z', 30)",
    "text key": "insert into t values ('1', 'x', 10), ('2', 'y', 20), ('3', 'z', 30)",
    "composite key": "insert into t values (1, 'p', 'x', 10), (2, 'q', 'y', 20), (3, 'r', 'z', 30)",
    "without rowid": "insert into t values ('1', 'x', 10), ('2', 'y', 20), ('3', 'z', 30)",
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_renamed_column_reads_and_writes_on_a_world_as_on_main(tmp_path, shape):
    key = "id, k, " if shape == "composite key" else "id, " if "key" in shape else ""
    given = "7, 's', " if shape == "composite key" else "'7', " if key else ""
    if shape == "integer key":
        given = "7, "
    statements = [
        "update t set b = b + 1 where a = 'x'",  # a row changed before the rename
        "alter table t rename column a to label",
        "select * from t order by b",
        "select a from t",  # (gone under its old name)
        "update t set label = 'yy' where label = 'y'",
        f"insert into t({key}label, b) values ({given}'new', 70)",
        "delete from t where label = 'z'",
        "select label, b from t where label >= 'n' order by label",
        "alter table t rename b to amount",  # (COLUMN is optional)
        "update t set amount = amount * 2",
        "select * from t order by amount",
        "alter table t rename column nope to other",
        "alter table t rename column label to amount",
    ]
    same_then_merged(tmp_path, SHAPES[shape], ROWS[shape], statements)


def test_a_renamed_key_column_keeps_its_rows_and_their_ids(tmp_path):
    same_then_merged(
        tmp_path,
        SHAPES["integer key"],
        ROWS["integer key"],
        [
            "update t set a = 'x2' where id = 1",
            "alter table t rename column id to item_id",
            "select * from t order by item_id",
            "update t set b = 0 where item_id = 2",
            "insert into t(a, b) values ('new', 1)",
            "insert into t(item_id, a) values (2, 'clash')",
            "insert or replace into t(item_id, a, b) values (3, 'replaced', 3)",
            "update t set item_id = 30 where item_id = 3",
            "insert into t(item_id, a) values (40, 'u') on conflict(item_id) do update set a = 'v'",
            "insert into t(item_id, a) values (40, 'u') on conflict(item_id) do update set a = 'v'",
            "select rowid, item_id, a, b from t order by item_id",
            "delete from t where item_id = 2",
        ],
    )


def test_what_names_the_column_follows_it(tmp_path):
    """Its index, a UNIQUE rule, a CHECK, a generated column, a trigger, a view and a foreign
    key of another table all name the new column on the world, as SQLite rewrites them on
    main."""
    schema = (
        "create table t(id integer primary key, a text unique, b int check (b >= 0), "
        "c int generated always as (b * 2)); "
        "create index t_b on t(b); "
        "create table child(id integer primary key, t_a text references t(a)); "
        "create table log(msg text); "
        "create trigger t_log after update of b on t when new.b > 5 "
        "begin insert into log values (new.a || ':' || new.b); end; "
        "create view big as select a, b from t where b > 10"
    )
    same_then_merged(
        tmp_path,
        schema,
        "insert into t(a, b) values ('x', 10), ('y', 20); insert into child(t_a) values ('x')",
        [
            "pragma foreign_keys",
            "alter table t rename column b to qty",
            "select * from t order by id",
            "select * from big",
            "update t set qty = 7 where a = 'x'",
            "update t set qty = -1 where a = 'x'",
            "select * from log",
            "insert into t(a, qty) values ('x', 3)",
            "alter table t rename column a to name",
            "select * from child",
            "insert into child(t_a) values ('nobody')",
            "update t set name = 'x3' where name = 'x'",
            "select name, qty, c from t order by id",
            "select * from big",
            "create index t_name_qty on t(name, qty)",
            "select name from t where qty > 0 order by name",
        ],
    )


def test_a_world_renames_back_and_renames_a_column_it_added(tmp_path):
    same_then_merged(
        tmp_path,
        SHAPES["integer key"],
        ROWS["integer key"],
        [
            "alter table t rename column a to tmp",
            "update t set tmp = 'w' where id = 1",
            "alter table t rename column tmp to a",
            "select * from t order by id",
            "alter table t add column note text default 'n'",
            "update t set note = 'set' where id = 2",
            "alter table t rename column note to remark",
            "select * from t order by id",
            "alter table t rename column a to b",
            "alter table t drop column b",
            "alter table t rename column a to b",
            "select * from t order by id",
            "alter table t drop column remark",
            "alter table t add column remark text default 'again'",  # (not the old values)
            "select * from t order by id",
        ],
    )


@pytest.fixture
def db(tmp_path):
    d = chronos_lite.init(tmp_path / "db")
    d.sql(SHAPES["integer key"])
    d.sql(ROWS["integer key"])
    yield d
    d.close()


def test_a_column_stored_under_a_renamed_name_is_not_taken_again(db):
    db.fork("w")
    db.sql("alter table t rename column a to label", branch="w")
    with pytest.raises(ChronosError, match="still stored under the old name") as err:
        db.sql("alter table t add column a text", branch="w")
    assert err.value.code == "42501"
    db.sql("alter table t add column a2 text", branch="w")
    assert [r["name"] for r in db.query("select name from pragma_table_info('t')", branch="w")] == [
        "id",
        "label",
        "b",
        "a2",
    ]


def test_a_rename_conflicts_with_what_main_did_to_the_column_since(db):
    db.fork("w")
    db.fork("v")
    db.sql("alter table t rename column a to label", branch="w")
    db.sql("alter table t rename column a to title", branch="v")
    db.sql("update t set label = 'mine' where id = 1", branch="w")
    db.merge("w")
    assert db.query("select label from t where id = 1") == [{"label": "mine"}]
    with pytest.raises(ChronosError, match="has no column a in t") as err:
        db.merge("v")
    assert err.value.code == "40001"
    # v reads main's rename since (its own names a column main no longer has), and main's
    # rows as they were at its fork
    assert db.query("select * from t where id = 1", branch="v") == [
        {"id": 1, "label": "x", "b": 10}
    ]
    db.fork("u")
    db.sql("alter table t rename column label to note", branch="u")
    db.sql("alter table t add column note text")
    with pytest.raises(ChronosError, match="has a column note in t too"):
        db.merge("u")


def test_a_child_world_reads_its_parents_rename_and_merges_through_it(db):
    db.fork("w")
    db.sql("alter table t rename column a to label", branch="w")
    db.sql("update t set label = 'w' where id = 1", branch="w")
    db.fork("c", source="w")
    assert db.query("select label from t where id = 1", branch="c") == [{"label": "w"}]
    db.sql("update t set label = 'c' where id = 2", branch="c")
    db.sql("alter table t rename column label to name", branch="c")
    db.sql("insert into t(name, b) values ('new', 4)", branch="c")
    db.merge("c")  # into w
    assert db.query("select id, name from t order by id", branch="w") == [
        {"id": 1, "name": "w"},
        {"id": 2, "name": "c"},
        {"id": 3, "name": "z"},
        {"id": 4, "name": "new"},
    ]
    db.merge("w")
    assert db.query("select id, name, b from t order by id") == [
        {"id": 1, "name": "w", "b": 10},
        {"id": 2, "name": "c", "b": 20},
        {"id": 3, "name": "z", "b": 30},
        {"id": 4, "name": "new", "b": 4},
    ]
    # main's history follows the storage's new name: main as it was reads its rows
    assert db.query("select name from t where id = 1", branch="main@-1 hour") == []


def test_the_past_of_a_world_reads_through_its_rename(db):
    db.fork("w")
    db.sql("update t set a = 'before' where id = 1", branch="w")
    # (history is stamped to the millisecond: a moment in the same millisecond as a write may
    # fall either side of it, so the moment is taken apart from both writes)
    time.sleep(0.005)
    then = db.query("select strftime('%Y-%m-%d %H:%M:%f', 'now') as t")[0]["t"]
    time.sleep(0.005)
    db.sql("alter table t rename column a to label", branch="w")
    db.sql("update t set label = 'after' where id = 1", branch="w")
    assert db.query("select label from t where id = 1", branch=f"w@{then}") == [{"label": "before"}]
    assert db.query(f"select label from t as of '{then}' where id = 1", branch="w") == [
        {"label": "before"}
    ]
    d = db.call("diff", branch="w")
    assert d.text.splitlines()[:3] == [
        "2 changes on w (schema: renamed column a to label of t; t: 0 deleted, 1 updated, "
        "0 inserted)",
        '~ ALTER TABLE "t" rename column a to label',
        '~ t/1  label: "x" -> "after"',
    ]
    db.call("restore", branch="w", at=then)
    assert db.query("select label from t where id = 1", branch="w") == [{"label": "before"}]
    db.sql("update t set b = 0 where id = 2")
    db.call("rebase", branch="w")
    assert db.query("select label, b from t order by id", branch="w") == [
        {"label": "before", "b": 10},
        {"label": "y", "b": 0},
        {"label": "z", "b": 30},
    ]


def test_rename_column_through_the_cli(tmp_path):
    folder = str(tmp_path / "p")
    assert run_cli("init", folder).returncode == 0
    run_cli(
        folder,
        "sql",
        "create table t(id integer primary key, name text); insert into t(name) values ('a')",
    )
    assert run_cli(folder, "fork", "w").returncode == 0
    out = run_cli(folder, "sql", "-b", "w", "alter table t rename column name to label")
    assert out.stdout.strip() == "ALTER TABLE"
    out = run_cli(folder, "sql", "-b", "w", "update t set label = 'b'; select * from t")
    assert "label" in out.stdout and " b" in out.stdout
    out = run_cli(folder, "diff", "w")
    assert '~ ALTER TABLE "t" rename column name to label' in out.stdout
    assert run_cli(folder, "merge", "w").returncode == 0
    out = run_cli(folder, "sql", "select label from t")
    assert out.stdout.splitlines()[2].strip() == "b"


@pytest.mark.parametrize("shape", ["text key", "composite key", "without rowid"])
def test_a_renamed_key_column_of_any_key_shape(tmp_path, shape):
    given = "(9, 's', 'n', 1)" if shape == "composite key" else "('9', 'n', 1)"
    same_then_merged(
        tmp_path,
        SHAPES[shape],
        ROWS[shape],
        [
            "update t set a = 'x2' where id = 1",
            "alter table t rename column id to code",
            "select * from t order by code",
            "update t set b = 0 where code = 2",
            f"insert into t values {given}",
            f"insert into t values {given}",
            "update t set code = 30 where code = 3",
            "delete from t where code = 2",
            "select * from t order by code",
        ],
    )


def test_a_column_dropped_and_added_again_starts_from_its_default(tmp_path):
    same_then_merged(
        tmp_path,
        SHAPES["integer key"],
        ROWS["integer key"],
        [
            "update t set b = 99 where id = 1",
            "alter table t drop column b",
            "alter table t add column b int default 7",
            "select * from t order by id",
            "update t set b = 8 where id = 2",
            "select * from t order by id",
        ],
    )


def test_a_column_of_a_table_the_world_created_renames_and_merges(db):
    db.fork("w")
    db.sql("create table notes(id integer primary key, body text)", branch="w")
    db.sql("insert into notes(body) values ('hi'), ('yo')", branch="w")
    db.sql("alter table notes rename column body to text", branch="w")
    db.sql("update notes set text = 'hey' where id = 1", branch="w")
    db.merge("w")
    assert db.query("select * from notes order by id") == [
        {"id": 1, "text": "hey"},
        {"id": 2, "text": "yo"},
    ]
    db.fork("v")
    db.sql("update notes set text = 'main' where id = 2")  # (versioned under the new name)
    assert db.query("select text from notes where id = 2", branch="v") == [{"text": "yo"}]


def test_rename_column_and_count_over_mcp_in_safe_mode(db):
    """An agent renames a column on its own world and counts its rows, through the real
    `chronos mcp` process; main is untouched until a person merges."""
    db.fork("outside")
    folder = db.folder
    db.close()
    server = Server(folder)
    try:
        server.initialize()
        assert server.call("fork", {"name": "mine"})["isError"] is False
        sqls = [
            "alter table t rename column a to label",
            "update t set label = 'agent' where id = 1",
            "delete from t where id = 3",
        ]
        for sql in sqls:
            assert server.call("sql", {"sql": sql, "branch": "mine"})["isError"] is False, sql
        got = server.call("sql", {"sql": "select count(*) from t", "branch": "mine"})
        assert got["structuredContent"]["results"][0]["rows"] == [[2]]
        got = server.call("sql", {"sql": "select label from t where id = 1", "branch": "mine"})
        assert got["structuredContent"]["results"][0]["rows"] == [["agent"]]
        refused = server.call("sql", {"sql": sqls[0], "branch": "outside"})
        assert refused["isError"] is True and "safe mode" in refused["content"][0]["text"]
        diff = server.call("diff", {"branch": "mine"})["content"][0]["text"]
        assert 'ALTER TABLE "t" rename column a to label' in diff
    finally:
        assert server.close() == 0
    with chronos_lite.open(folder) as again:
        assert again.query("select * from t where id = 1") == [{"id": 1, "a": "x", "b": 10}]


def test_a_child_forked_before_its_parent_renamed_a_column_is_told_to_rebase(db):
    """The parent world renamed a column after the child forked; the child's merge is refused
    as a conflict that says to rebase (no raw 'no such column'), and after the rebase it
    merges. Found by the trust fuzz."""
    db.fork("w")
    db.fork("c", source="w")
    db.sql("alter table t rename column a to label", branch="w")
    db.sql("update t set b = 99 where id = 1", branch="c")
    with pytest.raises(ChronosError) as info:
        db.merge("c")
    assert info.value.code == "40001"
    assert "rebase c first (REBASE WORLD c), then merge" in str(info.value)
    assert db.query("select b from t where id = 1", branch="w") == [{"b": 10}]
    db.rebase("c")
    db.merge("c")
    assert db.query("select label, b from t where id = 1", branch="w")[0]["b"] == 99
