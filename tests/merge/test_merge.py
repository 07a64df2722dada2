"""Diff, merge, merge preview and rebase through the CLI and the Python API."""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers import run_cli

import chronos_lite
from chronos_lite import ChronosError


def names(db, branch="main"):
    return {r["id"]: r["name"] for r in db.query("select id, name from users", branch=branch)}


def test_the_spec_example_session_through_the_cli(tmp_path):
    db = tmp_path / "mydb"
    run_cli("init", db)
    run_cli(db, "sql", "create table users(id integer primary key, name text)")
    run_cli(db, "sql", "insert into users(name) values ('Ada')")
    run_cli(db, "fork", "task-1", "--meta", '{"task": "fix names"}')
    out = run_cli(db, "put", "users", "1", '{"name": "Ada L."}', "-b", "task-1").stdout
    assert out.strip() == "replaced users/1 on task-1"
    out = run_cli(db, "diff", "task-1").stdout
    assert out == (
        "1 change on task-1 (users: 0 deleted, 1 updated, 0 inserted)\n"
        '~ users/1  name: "Ada" -> "Ada L."\n'
    )
    out = run_cli(db, "merge-preview", "task-1").stdout
    assert "| apply" in out and "users | 1" in out.replace("  ", " ")
    assert run_cli(db, "merge", "task-1").stdout.strip() == "merged 1 change from task-1 into main"
    assert "Ada L." in run_cli(db, "sql", "select name from users").stdout
    assert "task-1" not in run_cli(db, "branches").stdout


@pytest.fixture
def team(shop):
    shop.sql("insert into users(name, email) values ('Bob', 'bob@x'), ('Cy', 'cy@x')")
    shop.fork("w")
    return shop


def test_diff_lists_deletes_first_and_pages(team):
    team.sql(
        "delete from users where id = 3; update users set name = 'Ada L.' where id = 1; "
        "insert into users(name, email) values ('Dee', 'dee@x')",
        branch="w",
    )
    text = team.call("diff", branch="w").text.splitlines()
    assert text[0] == "3 changes on w (users: 1 deleted, 1 updated, 1 inserted)"
    assert text[1] == '- DELETE users/3 {"id": 3, "name": "Cy", "email": "cy@x"}'
    assert text[2] == '~ users/1  name: "Ada" -> "Ada L."'
    assert text[3] == '+ users/4 {"id": 4, "name": "Dee", "email": "dee@x"}'
    page = team.call("diff", branch="w", limit=1, offset=1).text.splitlines()
    assert page[1].startswith("~ users/1")
    assert page[2] == "(showing changes 2-2 of 3; call diff again with offset=2 for the next ones)"
    assert team.call("diff", branch="w", count=True).text == text[0]


def test_diff_as_sql_reproduces_the_change_on_the_base(team):
    team.sql(
        "delete from users where id = 3; update users set name = 'O''Neil' where id = 1; "
        "insert into users(name, email) values ('Dee', 'dee@x')",
        branch="w",
    )
    script = team.call("diff", branch="w", as_sql=True).text
    team.fork("replay")
    team.sql(script, branch="replay")
    assert team.diff("w", to="replay").changes == []


def test_diff_to_another_branch(team):
    team.fork("v")
    team.sql("update users set name = 'W' where id = 1", branch="w")
    team.sql("update users set name = 'V' where id = 2", branch="v")
    d = team.diff("w", to="v")
    assert sorted(c.id for c in d.changes) == ["1", "2"]


def test_merge_applies_rows_the_parent_did_not_change(team):
    team.sql("update users set name = 'Ada L.' where id = 1", branch="w")
    team.sql("update users set name = 'Bobby' where id = 2")
    team.merge("w")
    assert names(team) == {1: "Ada L.", 2: "Bobby", 3: "Cy"}
    assert team.database.worlds() == []


@pytest.mark.parametrize("theirs", ["Ada M.", "Ada L."])  # a change to the same value conflicts
def test_rows_both_changed_conflict_and_nothing_merges(team, theirs):
    team.sql(
        "update users set name = 'Ada L.' where id = 1; update users set name = 'B2' where id = 2",
        branch="w",
    )
    team.sql("update users set name = $1 where id = 1", theirs)
    with pytest.raises(ChronosError) as err:
        team.merge("w")
    assert err.value.code == "40001"
    assert "resolve" in err.value.message and "merge_preview" in err.value.message
    assert err.value.data[0]["id"] == "1" and err.value.data[0]["base"]["name"] == "Ada"
    assert names(team) == {1: theirs, 2: "Bob", 3: "Cy"}
    assert [w.name for w in team.database.worlds()] == ["w"]


def test_resolve_ours_and_theirs(team):
    team.fork("w2")
    for world in ("w", "w2"):
        team.sql("update users set name = $1 where id = 1", world, branch=world)
    team.sql("update users set name = 'main' where id = 1")
    team.merge("w", resolve="theirs")
    assert names(team)[1] == "main"
    team.merge("w2", resolve="ours")
    assert names(team)[1] == "w2"


def test_by_columns_combines_and_rows_settle_by_hand(team):
    team.sql(
        "update users set name = 'Ada L.' where id = 1; "
        "update users set email = 'b2@x' where id = 2",
        branch="w",
    )
    team.sql(
        "update users set email = 'ada@new' where id = 1; "
        "update users set email = 'b3@x' where id = 2"
    )
    with pytest.raises(ChronosError, match="both changed email"):
        team.merge("w", by_columns=True)
    team.merge("w", by_columns=True, rows={"users/2": {"email": "by@hand"}})
    rows = team.query("select id, name, email from users order by id")
    assert rows[0] == {"id": 1, "name": "Ada L.", "email": "ada@new"}
    assert rows[1] == {"id": 2, "name": "Bob", "email": "by@hand"}


def test_unique_violation_only_the_combination_causes_is_refused(team):
    team.sql("insert into users(name, email) values ('Zed', 'z@x')", branch="w")
    team.sql("insert into users(name, email) values ('Zoe', 'z@x')")
    with pytest.raises(ChronosError) as err:
        team.merge("w")
    assert err.value.code == "23505"
    assert "users.email" in err.value.message and "users/" in err.value.message
    assert len(team.query("select * from users")) == 4


def test_foreign_key_violation_only_the_combination_causes_is_refused(db):
    db.sql(
        "create table lists(id integer primary key, title text); "
        "create table leads(id integer primary key, list integer references lists(id))"
    )
    db.sql("insert into lists(title) values ('a')")
    db.fork("w")
    db.sql("insert into leads(list) values (1)", branch="w")
    db.sql("delete from lists where id = 1")
    with pytest.raises(ChronosError) as err:
        db.merge("w")
    assert err.value.code == "23503"
    assert db.query("select count(*) as n from leads") == [{"n": 0}]


def test_partial_merges_leave_the_world_open(team):
    team.sql(
        "update users set name = 'A' where id = 1; update users set name = 'B' where id = 2",
        branch="w",
    )
    p = team.merge("w", only_keys=["users/1"])
    assert p.partial and names(team)[1] == "A" and names(team)[2] == "Bob"
    assert [c.id for c in team.diff("w").changes] == ["2"]
    team.sql("update users set name = 'A2' where id = 1", branch="w")
    team.merge("w")  # users/1 merged before is not a conflict now
    assert names(team) == {1: "A2", 2: "B", 3: "Cy"}


def test_only_tables_and_into_another_branch(team):
    team.sql("create table notes(id integer primary key, body text)")
    team.fork("x")
    team.fork("target")
    team.sql(
        "insert into notes(body) values ('n'); update users set name = 'X' where id = 1", branch="x"
    )
    team.merge("x", only_tables=["notes"], into="target")
    assert team.query("select body from notes", branch="target") == [{"body": "n"}]
    assert names(team, "target")[1] == "Ada"
    assert "x" in [w.name for w in team.database.worlds()]


def test_merging_a_nested_world_goes_into_its_parent(team):
    team.fork("child", "w")
    team.sql("update users set name = 'kid' where id = 1", branch="child")
    team.merge("child")
    assert names(team, "w")[1] == "kid" and names(team)[1] == "Ada"
    team.merge("w")
    assert names(team)[1] == "kid"


def test_version_target_and_confirm_deletes(team):
    team.sql("delete from users where id = 3", branch="w")
    preview = team.call("merge_preview", branch="w")
    version, target = preview.data["version"], preview.data["target"]
    assert preview.data["deletes"] == 1
    team.sql("update users set name = 'again' where id = 1", branch="w")
    with pytest.raises(ChronosError, match=f"not {version}"):
        team.call("merge", branch="w", version=version)
    team.sql("update users set name = 'main moved' where id = 2")
    with pytest.raises(ChronosError, match="changed since the preview"):
        team.call("merge", branch="w", target=target)
    with pytest.raises(ChronosError, match="deletes 1 row"):
        team.call("merge", branch="w", confirm_deletes=0)
    team.call("merge", branch="w", confirm_deletes=1)
    assert 3 not in names(team)


def test_merge_preview_rows_and_pages(team):
    team.sql("delete from users where id = 3; update users set name = 'A' where id = 1", branch="w")
    team.sql("update users set name = 'M' where id = 1")
    reply = team.call("merge_preview", branch="w", limit=1)
    lines = reply.text.splitlines()
    assert lines[0].split("|")[:3] == [" table ", " id ", " outcome "]
    assert "summary" in lines[2] and "1 deleted, 1 updated, 0 inserted" in lines[2]
    assert "DELETE: the merge deletes this row" in lines[3]
    assert "call merge_preview again with offset=1" in reply.text
    second = team.call("merge_preview", branch="w", offset=1, version=reply.data["version"])
    assert "conflict" in second.text
    assert reply.data["conflicts"] == 1


def test_the_previews_text_shows_the_fields_that_differ_and_the_data_whole_rows(team):
    team.sql(
        "update users set name = 'W' where id = 1; update users set name = 'Bo' where id = 2",
        branch="w",
    )
    team.sql(
        "update users set name = 'M' where id = 1; delete from users where id = 3", branch="main"
    )
    team.sql("insert into users(name, email) values ('Di', 'di@x')", branch="w")
    reply = team.call("merge_preview", branch="w")
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[4:]]
        for line in reply.text.splitlines()[2:]
        if line.count("|") == 7 and "summary" not in line
    }
    assert rows["1"] == [
        '{"name": "Ada"}',
        '{"name": "W"}',
        '{"name": "M"}',
        "",
    ]
    assert rows["2"] == ['{"name": "Bob"}', '{"name": "Bo"}', "same as base", "same as ours"]
    assert rows["4"] == [
        "(none)",
        '{"id": 4, "name": "Di", "email": "di@x"}',
        "(none)",
        "same as ours",
    ]
    whole = {r["id"]: r for r in reply.data["rows"]}
    assert whole["2"]["ours"] == {"id": 2, "name": "Bo", "email": "bob@x"}


def test_rebase_takes_in_the_parent_and_keeps_the_world(team):
    team.sql("update users set name = 'W' where id = 1", branch="w")
    team.sql(
        "update users set name = 'M' where id = 2; insert into users(name, email) "
        "values ('New', 'new@x')"
    )
    assert team.call("rebase", branch="w").text == "REBASE 2"
    assert names(team, "w") == {1: "W", 2: "M", 3: "Cy", 4: "New"}
    team.sql("update users set name = 'M1' where id = 1")
    with pytest.raises(ChronosError, match="rebasing w onto main: 1 conflict"):
        team.rebase("w")
    assert names(team, "w")[1] == "W"
    team.rebase("w", resolve="ours")
    team.merge("w")
    assert names(team)[1] == "W"


def test_merge_through_the_cli_with_options(tmp_path):
    db = tmp_path / "db"
    run_cli("init", db)
    run_cli(db, "sql", "create table users(id integer primary key, name text)")
    run_cli(db, "sql", "insert into users(name) values ('a'), ('b')")
    run_cli(db, "fork", "t")
    run_cli(db, "sql", "-b", "t", "update users set name = 'T' where id in (1, 2)")
    run_cli(db, "sql", "update users set name = 'M' where id = 2")
    proc = run_cli(db, "merge", "t", check=False)
    assert proc.returncode == 1 and "1 conflict" in proc.stderr
    out = run_cli(db, "merge", "t", "--rows", '{"users/2": "ours"}', "--json").stdout
    assert json.loads(out)["merged"] == 2
    app = sqlite3.connect(db / "chronos.db")
    assert app.execute("select name from users order by id").fetchall() == [("T",), ("T",)]
    app.close()
    reopened = chronos_lite.open(db)
    assert reopened.database.worlds() == []
    reopened.close()


def test_system_tables_in_sql(team):
    team.sql("update users set name = 'W' where id = 1; delete from users where id = 3", branch="w")
    team.sql("update users set name = 'M' where id = 1")
    rows = team.query("select table_name, id, diff_type, fields from chronos_diff('w')")
    assert rows == [
        {"table_name": "users", "id": "3", "diff_type": "removed", "fields": "[]"},
        {"table_name": "users", "id": "1", "diff_type": "modified", "fields": '["name"]'},
    ]
    conflicts = team.query(
        "select id, json_extract(theirs, '$.name') as theirs from chronos_conflicts('w')",
        branch="w",
    )
    assert conflicts == [{"id": "1", "theirs": "M"}]
    assert team.query("select name, parent from chronos_worlds") == [
        {"name": "w", "parent": "main"}
    ]


def test_an_interrupted_merge_is_flagged_until_confirmed(team):
    team.sql("update users set name = 'W' where id = 1", branch="w")
    # what a merge leaves behind when its process dies before its commit
    team.database.main.conn.execute("update _chronos_worlds set merging = 1.0 where name = 'w'")
    with pytest.raises(ChronosError, match="was interrupted.*confirm=true"):
        team.call("merge", branch="w")
    assert names(team)[1] == "Ada"
    team.call("merge", branch="w", confirm=True)
    assert names(team)[1] == "W"


def test_rows_of_a_keyless_table_merge_without_taking_an_unrelated_rowid(db):
    db.sql("create table notes(body text)")
    db.sql("insert into notes values ('kept')")
    db.fork("w")
    db.sql("insert into notes values ('from w')", branch="w")
    db.sql("insert into notes values ('from main')")  # takes the next rowid in main
    db.merge("w")
    bodies = sorted(r["body"] for r in db.query("select body from notes"))
    assert bodies == ["from main", "from w", "kept"]


def test_cli_json_gives_conflicts_as_data(tmp_path):
    db = tmp_path / "db"
    run_cli("init", db)
    run_cli(db, "sql", "create table t(id integer primary key, v text)")
    run_cli(db, "sql", "insert into t(v) values ('a')")
    run_cli(db, "fork", "w")
    run_cli(db, "sql", "-b", "w", "update t set v = 'w'")
    run_cli(db, "sql", "update t set v = 'm'")
    proc = run_cli(db, "merge", "w", "--json", check=False)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)
    assert error["code"] == "40001" and error["data"][0]["theirs"] == {"id": 1, "v": "m"}
    preview = json.loads(run_cli(db, "merge-preview", "w", "--json").stdout)
    assert preview["rows"][0]["base"] == {"id": 1, "v": "a"}
    assert preview["rows"][0]["outcome"] == "conflict"


def test_rebase_counts_only_the_parents_rows(team):
    team.sql(
        "update users set name = 'W2' where id = 2; update users set name = 'W1' where id = 1",
        branch="w",
    )
    team.merge("w", only_keys=["users/2"])
    team.sql("update users set name = 'M3' where id = 3")
    assert team.rebase("w") == 1  # users/3; users/2 came from w itself


def test_branches_counts_changes_as_diff_does(team):
    team.sql("insert into users(name, email) values ('tmp', 'tmp@x')", branch="w")
    team.sql("delete from users where email = 'tmp@x'", branch="w")  # inserted, then gone
    team.sql("update users set name = 'W' where id = 1", branch="w")
    listing = team.call("branches").data["branches"]
    assert [b.get("changes") for b in listing] == [None, 1]
