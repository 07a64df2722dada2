"""The issue's walk-through, through the real `chronos` command."""

from __future__ import annotations

import json
import sqlite3

from helpers import run_cli


def test_issue_walkthrough(tmp_path):
    shop = tmp_path / "shop"
    assert run_cli("init", shop).stdout.strip() == f"created chronos database {shop}"
    create = (
        "create table users(id integer primary key autoincrement, name text, email text unique)"
    )
    assert run_cli(shop, "sql", create).stdout.strip() == "CREATE TABLE"
    out = run_cli(shop, "sql", "insert into users(name, email) values ('Ada', 'ada@x.org')")
    assert out.stdout.strip() == "INSERT 0 1"
    out = run_cli(shop, "fork", "task-1", "--meta", '{"task": "fix names"}').stdout.strip()
    assert out.startswith("created branch task-1 (world id w")
    assert out.endswith(") from main; pass --branch task-1 to work on it")
    wid = out.split("world id ")[1].split(")")[0]
    assert len(wid) == 17 and int(wid[1:], 16) >= 0
    out = run_cli(shop, "sql", "-b", "task-1", "update users set name = 'Ada L.' where id = 1")
    assert out.stdout.strip() == "UPDATE 1"
    assert run_cli(shop, "sql", "select name from users").stdout == " name\n------\n Ada\n(1 row)\n"
    out = run_cli(shop, "sql", "-b", "task-1", "select name from users").stdout
    assert out == " name\n--------\n Ada L.\n(1 row)\n"
    listing = run_cli(shop, "branches").stdout
    assert "task-1" in listing and wid in listing and '{"task": "fix names"}' in listing
    assert run_cli(shop, "discard", "task-1").stdout.strip() == (
        f"discarded branch task-1 (world id {wid})"
    )
    assert "task-1" not in run_cli(shop, "branches").stdout


def test_init_from_existing_sqlite_file(tmp_path):
    source = tmp_path / "existing.sqlite"
    plain = sqlite3.connect(source)
    plain.execute("create table items(id integer primary key, label text)")
    plain.executemany("insert into items(label) values (?)", [("a",), ("b",)])
    plain.commit()
    plain.close()
    copy = tmp_path / "copy"
    out = run_cli("init", copy, "--from", source).stdout
    assert "(1 table: items)" in out
    assert "(2 rows)" in run_cli(copy, "sql", "select * from items").stdout
    run_cli(copy, "fork", "w")
    run_cli(copy, "sql", "-b", "w", "delete from items")
    assert "(2 rows)" in run_cli(copy, "sql", "select * from items").stdout
    assert "(0 rows)" in run_cli(copy, "sql", "-b", "w", "select * from items").stdout


def test_options_before_or_after_positionals_and_dashed_names(tmp_path, shop):
    folder = shop.folder
    shop.close()
    run_cli(folder, "fork", "--meta", '{"a": 1}', "t1")
    out = run_cli(folder, "set-meta", "t1", '{"b": 2, "a": null}').stdout.strip()
    assert out == 't1: {"b": 2}'
    out = run_cli(folder, "sql", "select count(*) as n from users", "--branch", "t1").stdout
    assert "(1 row)" in out
    out = run_cli(folder, "get", "-b", "t1", "users", "1").stdout
    assert out.strip() == 'users/1 {"id": 1, "name": "Ada", "email": "ada@x.org"}'
    out = run_cli(folder, "put", "users", "7", '{"name": "Bo", "email": "bo@x"}', "-b", "t1")
    assert out.stdout.strip() == "created users/7 on t1"
    assert (
        run_cli(folder, "delete", "users", "7", "-b", "t1").stdout.strip()
        == "deleted users/7 on t1"
    )
    data = json.loads(run_cli(folder, "get", "users", "1", "--json").stdout)
    assert data["row"] == {"id": 1, "name": "Ada", "email": "ada@x.org"}


def test_errors_are_one_line_nonzero_and_change_nothing(tmp_path, shop):
    folder = shop.folder
    shop.close()
    cases = [
        (("get", "users"), "'id' is required: a string"),
        (("get", "users", "9"), "no row users/9 on main"),
        (("get", "nope", "1"), "no table 'nope'; tables: users"),
        (("sql", "select * from users", "-b", "ghost"), "no branch 'ghost'; branches: main"),
        (("frobnicate",), "unknown operation 'frobnicate'"),
        (("discard", "main"), "main is the database itself, not a world"),
        (("fork", "main"), "'main' is taken"),
        (("fork", "x", "--meta", "[1]"), "'meta' must be a JSON object"),
        (
            (
                "sql",
                "insert into users(name, email) values ('B', 'b@x'); "
                "insert into users(name, email) values ('C', 'ada@x.org')",
            ),
            "statement 2 of 2 failed (nothing was changed): UNIQUE constraint failed: users.email",
        ),
    ]
    for args, message in cases:
        proc = run_cli(folder, *args, check=False)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert proc.stderr.startswith("chronos: "), proc.stderr
        assert message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    out = run_cli(folder, "sql", "select count(*) as n from users").stdout
    assert out.split("\n")[2].strip() == "1"


def test_not_a_database_and_help(tmp_path):
    proc = run_cli(tmp_path / "nothing", "branches", check=False)
    assert proc.returncode == 1
    assert "is not a chronos database" in proc.stderr and "chronos init" in proc.stderr
    assert "operations:" in run_cli("--help").stdout
    assert "set-meta" in run_cli(tmp_path, "help").stdout
    assert "--cascade" in run_cli(tmp_path, "help", "discard").stdout
    # each name its own column, the longest too; -V is the version, as --version
    names = [
        line.split()[0]
        for line in run_cli("--help").stdout.split("operations:")[1].split("\n")
        if line.strip()
    ]
    assert "check-merge-policy" in names and "set-merge-policy" in names
    assert run_cli("-V").stdout == run_cli("--version").stdout != ""
    # init (and mcp, serve) after the folder: the line that works, nothing created
    proc = run_cli(tmp_path / "new", "init", "--from", "my app.db", check=False)
    assert proc.returncode == 1
    assert "init comes before the folder: chronos init" in proc.stderr
    assert proc.stderr.rstrip().endswith("new --from 'my app.db'")
    assert not (tmp_path / "new").exists()


def test_sql_from_stdin_and_params(tmp_path, shop):
    folder = shop.folder
    shop.close()
    out = run_cli(
        folder, "sql", "-", "--params", '["Ada"]', stdin="select id from users where name = $1"
    )
    assert "(1 row)" in out.stdout


def test_stdlib_sqlite3_in_the_same_process_keeps_its_writes(tmp_path):
    import chronos_lite

    folder = tmp_path / "mix"
    db = chronos_lite.init(folder)
    db.sql("create table t(id integer primary key, v text)")
    db.close()
    plain = sqlite3.connect(folder / "chronos.db")
    plain.execute("insert into t(v) values ('first')")
    plain.commit()
    db = chronos_lite.open(folder)
    db.sql("insert into t(v) values ('via chronos')")
    db.close()  # our last connection closing must not delete the WAL under the stdlib's
    plain.execute("insert into t(v) values ('second')")
    plain.commit()
    plain.close()
    out = run_cli(folder, "sql", "select v from t order by id").stdout
    assert "first" in out and "via chronos" in out and "second" in out


def test_user_errors_never_show_internals(tmp_path, shop):
    folder = shop.folder
    shop.close()
    for args, message in [
        (("sql", "select $1"), "give their values in 'params'"),
        (("get", "users", "1", "-b", "main@yesterday"), "isn't a moment"),
    ]:
        proc = run_cli(folder, *args, check=False)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    proc = run_cli("init", "/proc/nope/x", check=False)
    assert proc.returncode == 1 and "could not create" in proc.stderr, proc.stderr


def test_worlds_counters_and_schema_through_the_cli(tmp_path):
    db = tmp_path / "db"
    run_cli("init", db)
    run_cli(db, "sql", "create table t(id integer primary key, v text)")
    run_cli(db, "sql", "insert into t(v) values ('main')")
    run_cli(db, "fork", "a")
    run_cli(db, "fork", "a1", "--from", "a")
    run_cli(db, "sql", "-b", "a", "insert into t(v) values ('a')")
    run_cli(db, "sql", "-b", "a1", "insert into t(v) values ('a1')")
    app = sqlite3.connect(db / "chronos.db")
    app.execute("insert into t(v) values ('app')")
    app.execute("create table notes(body text)")
    app.commit()
    app.close()
    ids = {}
    for branch in ("main", "a", "a1"):
        data = json.loads(run_cli(db, "sql", "-b", branch, "select id, v from t", "--json").stdout)
        for row_id, v in data["results"][0]["rows"]:
            ids.setdefault(row_id, set()).add(v)
    assert len(ids) == 4 and all(len(v) == 1 for v in ids.values()), ids
    run_cli(db, "sql", "-b", "a1", "insert into notes values ('seen in a world')")
    assert "(0 rows)" in run_cli(db, "sql", "select * from notes").stdout
    proc = run_cli(db, "discard", "a", check=False)
    assert proc.returncode == 1 and "(a1)" in proc.stderr
    out = run_cli(db, "discard", "a", "--cascade").stdout
    assert out.startswith("discarded branches a1 (world id w") and ", a (world id w" in out


def test_json_output_is_strict_json_for_the_infinities(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    chronos = Path(sys.executable).with_name("chronos")
    subprocess.run([chronos, "init", tmp_path / "p"], check=True, capture_output=True)
    out = subprocess.run(
        [chronos, tmp_path / "p", "sql", "select 1e999 as big, -1e999 as small", "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout

    def refuse(name: str) -> None:
        raise ValueError(f"{name} isn't JSON")

    data = json.loads(out, parse_constant=refuse)
    assert data["results"][0]["rows"] == [["Infinity", "-Infinity"]]


def test_describe_and_audit_take_their_subject_as_a_positional(shop):
    """``describe users`` as ``\\d users`` reads (not only ``--table users``); ``audit bot``;
    a positional's help says what it is, not only its type."""
    folder = shop.folder
    shop.close()
    assert (
        run_cli(folder, "describe", "users").stdout
        == run_cli(folder, "describe", "--table", "users").stdout
    )
    assert run_cli(folder, "describe", "users").stdout.startswith("users: ")
    assert (
        run_cli(folder, "audit", "nobody", "--json").stdout
        == run_cli(folder, "audit", "--agent", "nobody", "--json").stdout
    )
    assert "TABLE                 One table" in run_cli(folder, "help", "describe").stdout
