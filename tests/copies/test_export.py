"""export: a branch written as a plain SQLite file. An adopted app's file comes back out with
exactly its schema objects (WITHOUT ROWID, STRICT, generated columns, AUTOINCREMENT, an index,
a view, a trigger, sqlite-utils' FTS5 table) and nothing of chronos; main, a world and
``main@<moment>`` each with their own rows; rowids, sqlite_sequence, user_version kept; read in
one transaction while a writer goes on; a refusal, a failure or a dead export leaves nothing
at the destination; the file adopted again hashes as the branch it came from."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import sqlite_utils
from helpers import file_dump, run_cli

import chronos_lite
from chronos_lite import Caller, ChronosError
from chronos_lite.copies import export as exporting

APP = """
create table authors(id integer primary key autoincrement, name text not null default 'x'
    check (length(name) > 0));
create table books(isbn text primary key, title text, author_id integer references authors(id),
    price real default 1.5) without rowid;
create table items(id integer primary key autoincrement, qty integer, price real,
    total real generated always as (qty * price) stored, half real as (price / 2)) strict;
create table loose(a, b);
create table tagged(tag text primary key, n integer);
create table log(msg text);
create table docs(id integer primary key autoincrement, title text, body text);
create index books_title on books(title);
create view cheap as select isbn, title from books where price < 10;
create trigger books_ai after insert on books begin
    insert into log(msg) values ('added ' || new.title);
end;
pragma user_version = 7;
pragma application_id = 1234;
"""


def make_app(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(APP)
    conn.execute("insert into authors(name) values ('Ann'), ('Bob'), ('Cy')")
    conn.execute("delete from authors where id = 3")  # (sqlite_sequence stays at 3)
    conn.execute("insert into books values ('1', 'Cheap', 1, 5), ('2', 'Dear', 2, 50)")
    conn.execute("insert into items(qty, price) values (2, 3.0)")
    conn.execute("insert into loose values (1, 'x'), (2, 'y'), (3, x'00ff')")
    conn.execute("delete from loose where a = 1")  # (rowids 2 and 3 left)
    conn.execute("insert into tagged values ('a', 1), ('b', 2), ('c', 3)")
    conn.execute("delete from tagged where tag = 'a'")
    conn.execute("insert into docs(title, body) values ('green tea', 'hot'), ('coffee', 'dark')")
    conn.commit()
    conn.close()
    sqlite_utils.Database(path)["docs"].enable_fts(["title", "body"], create_triggers=True)


@pytest.fixture
def app(tmp_path):
    """An app's file adopted as main (every integer key AUTOINCREMENT already: its CREATE
    TABLE text is kept as written), and the file itself."""
    original = tmp_path / "app.db"
    make_app(original)
    db = chronos_lite.init(tmp_path / "shop", from_file=original)
    yield db, original
    db.close()


def opened(path: Path) -> sqlite3.Connection:
    """The file as any tool reads it: Python's sqlite3, read-only."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def schema(path: Path) -> list[tuple]:
    with opened(path) as conn:
        return sorted(conn.execute("select type, name, tbl_name, sql from sqlite_master"))


def rows(path: Path, sql: str) -> list[tuple]:
    conn = opened(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_main_comes_out_as_the_apps_own_file(app, tmp_path):
    db, original = app
    out = tmp_path / "out.db"
    reply = db.call("export", to=str(out))
    assert reply.text.startswith(f"exported main to {out}: 8 tables, ")
    assert "checked: integrity ok" in reply.text
    assert schema(out) == schema(original)  # (exactly the app's objects, nothing of chronos)
    for sql in (
        "select rowid, * from loose",
        "select rowid, * from tagged",
        "select * from authors",
        "select * from books",
        "select * from items",
        "select * from log",
        "select * from cheap",
        "select * from sqlite_sequence order by name",
        "select rowid, title from docs_fts where docs_fts match 'tea'",
        "pragma user_version",
        "pragma application_id",
    ):
        assert rows(out, sql) == rows(original, sql), sql
    assert rows(out, "select * from sqlite_sequence where name = 'authors'") == [("authors", 3)]
    assert rows(out, "pragma integrity_check") == [("ok",)]
    assert rows(out, "pragma journal_mode") == [("delete",)]  # (no WAL, no -wal file to carry)
    assert reply.data["to"] == str(out) and reply.data["bytes"] == out.stat().st_size
    assert reply.data["rows"] == sum(t["rows"] for t in reply.data["tables"])
    assert {"table": "loose", "rows": 2} in reply.data["tables"]
    assert reply.data["foreign_key_violations"] == [] and reply.data["left_out"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "out.db", "shop"]


def test_the_files_triggers_and_index_work_as_the_apps(app, tmp_path):
    db, _original = app
    out = tmp_path / "out.db"
    db.export(out)
    conn = sqlite3.connect(out)
    conn.execute("insert into books values ('3', 'New', 1, 2)")  # (its trigger fires now)
    conn.execute("insert into docs(title, body) values ('oolong', 'tea too')")
    conn.execute("insert into authors(name) values ('Di')")
    assert conn.execute("select msg from log").fetchall() == [("added Cheap",), ("added Dear",)] + [
        ("added New",)
    ]
    assert conn.execute("select title from docs_fts where docs_fts match 'tea'").fetchall() == [
        ("green tea",),
        ("oolong",),
    ]
    assert conn.execute("select max(id) from authors").fetchone() == (4,)  # (3 isn't used again)
    plan = conn.execute("explain query plan select * from books where title = 'New'").fetchall()
    assert "books_title" in str(plan)
    conn.close()


def test_a_world_and_main_as_it_was(app, tmp_path):
    db, original = app
    time.sleep(0.05)
    then = datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
    time.sleep(0.05)
    db.sql("update authors set name = 'Ann B.' where id = 1")
    db.fork("w")
    db.sql(
        "insert into loose values (9, 'world'); update tagged set n = 20 where tag = 'b'; "
        "insert into tagged values ('d', 4); insert into docs(title, body) values ('w doc', "
        "'matcha tea'); alter table items add column note text; create table extra(id integer "
        "primary key, v)",
        branch="w",
    )
    db.sql("insert into extra(v) values ('only here')", branch="w")
    main, world, past = (tmp_path / n for n in ("main.db", "w.db", "past.db"))
    db.export(main)
    reply = db.call("export", to=str(world), branch="w")
    assert reply.text.startswith(f"exported w to {world}: 9 tables, ")
    said = db.call("export", to=str(past), branch=f"main@{then}").text
    assert said.startswith(f"exported main as it was at {then} to {past}: 8 tables")

    assert rows(past, "select name from authors") == [("Ann",), ("Bob",)]  # (before the update)
    assert rows(main, "select name from authors") == [("Ann B.",), ("Bob",)]
    assert rows(world, "select name from authors") == [("Ann B.",), ("Bob",)]  # (forked after)
    assert schema(past) == schema(original) == schema(main)
    # the world's changes are in its file, and not in main's
    assert rows(world, "select rowid, * from loose") == [(2, 2, "y"), (3, 3, b"\x00\xff")] + [
        (4, 9, "world")
    ]
    assert rows(main, "select rowid, * from loose") == [(2, 2, "y"), (3, 3, b"\x00\xff")]
    assert rows(world, "select rowid, * from tagged") == [(2, "b", 20), (3, "c", 3), (4, "d", 4)]
    assert rows(main, "select rowid, * from tagged") == [(2, "b", 2), (3, "c", 3)]
    assert rows(world, "select * from extra") == [(1, "only here")]
    assert rows(main, "select name from sqlite_master where name = 'extra'") == []
    assert "note text" in rows(world, "select sql from sqlite_master where name = 'items'")[0][0]
    match = "select title from docs_fts where docs_fts match 'tea'"
    assert rows(world, match) == [("green tea",), ("w doc",)]
    assert rows(main, match) == [("green tea",)]
    assert rows(world, "pragma integrity_check") == [("ok",)]
    assert db.get("tagged", "b")["n"] == 2  # (the export changed nothing)


def test_read_in_one_transaction_while_a_writer_goes_on(app, tmp_path, monkeypatch):
    """Rows another client commits while the export runs aren't in the file: every table is
    read as it was when the export's read transaction began. (The writer is another process:
    two SQLite libraries in one process don't see each other's locks.)"""
    db, _original = app
    copy = exporting._Reader.copy
    written: list[str] = []
    write = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); "
        "c.execute(\"insert into loose values (7, 'late')\"); "
        "c.execute(\"insert into authors(name) values ('Late')\"); c.commit()"
    )

    def copy_then_write(self, out, name, on_main=False):
        done = copy(self, out, name, on_main)
        if not written:  # (after the first table: another client writes to two of them)
            run = [sys.executable, "-c", write, str(db.database.path)]
            subprocess.run(run, check=True, timeout=60)
            written.append(name)
        return done

    monkeypatch.setattr(exporting._Reader, "copy", copy_then_write)
    out = tmp_path / "out.db"
    db.export(out)
    assert written == ["authors"]
    assert rows(out, "select count(*) from loose") == [(2,)]
    assert rows(out, "select count(*) from authors") == [(2,)]
    assert db.sql("select count(*) from loose").results[-1].rows == [(3,)]


def test_refusals_change_nothing_and_say_how_to_fix_the_call(app, tmp_path):
    db, _original = app
    out = tmp_path / "out.db"
    db.export(out)
    before, dump = out.read_bytes(), file_dump(tmp_path / "shop")
    cases = [
        ({"to": str(out)}, "exists already: give a new file name, or replace it (--replace"),
        ({"to": str(tmp_path)}, "is a folder: give the path of the file to write"),
        ({"to": str(tmp_path / "x.db"), "branch": "nope"}, "no branch 'nope'; branches: main"),
        ({"to": str(tmp_path / "x.db"), "branch": "nope@-1 minute"}, "no branch 'nope'"),
        ({"to": str(tmp_path / "shop" / "x.db")}, "can't go into the database's own folder"),
    ]
    (tmp_path / "notes.txt").write_text("not a database")
    cases.append(({"to": str(tmp_path / "notes.txt"), "replace": True}, "isn't an SQLite file"))
    in_use = tmp_path / "in-use.db"  # (an app's WAL beside it: SQLite would apply it to ours)
    conn = sqlite3.connect(in_use)
    conn.execute("pragma journal_mode = wal")
    conn.execute("create table t(x)")
    conn.commit()
    said = "in-use.db-wal is beside"
    cases.append(({"to": str(in_use), "replace": True}, said))
    for args, said in cases:
        with pytest.raises(ChronosError) as err:
            db.call("export", **args)
        assert said in err.value.message, (args, err.value.message)
    conn.close()
    assert out.read_bytes() == before and file_dump(tmp_path / "shop") == dump
    names = ["app.db", "in-use.db", "notes.txt", "out.db", "shop"]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    assert (tmp_path / "notes.txt").read_text() == "not a database"
    db.sql("insert into loose values (5, 'new')")
    db.export(out, replace=True)  # (replace: the new file, whole)
    assert rows(out, "select count(*) from loose") == [(3,)]


@pytest.mark.parametrize("fault", [ChronosError("disk trouble"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_export_leaves_nothing(app, tmp_path, monkeypatch, fault):
    db, _original = app
    out = tmp_path / "out.db"
    db.export(out)
    before = out.read_bytes()

    def broken(*_args):
        raise fault

    monkeypatch.setattr(exporting, "_sequences", broken)  # (half way: the rows written)
    for to, replace in ((tmp_path / "new.db", False), (out, True)):
        with pytest.raises(type(fault)):
            db.export(to, replace=replace)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "out.db", "shop"]
    assert db.sql("select count(*) from loose").results[-1].rows == [(2,)]  # (it works on)


def test_a_dead_exports_leftover_is_cleared(app, tmp_path):
    db, _original = app
    dead = tmp_path / ".out.db.exporting-999999999"
    dead.write_bytes(b"SQLite format 3\x00half")
    (tmp_path / ".out.db.exporting-999999999-journal").write_bytes(b"x")
    db.export(tmp_path / "out.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "out.db", "shop"]


def test_the_cli(app, tmp_path):
    db, original = app
    db.fork("task-1")
    db.sql("delete from loose", branch="task-1")
    shop = tmp_path / "shop"
    done = run_cli(shop, "export", tmp_path / "main.db")
    assert done.stdout.startswith(f"exported main to {tmp_path / 'main.db'}: 8 tables, ")
    assert re.search(r"\n loose +\| +2\n", done.stdout)  # (a table of tables and rows)
    run_cli(shop, "export", tmp_path / "t1.db", "-b", "task-1")
    run_cli(shop, "export", tmp_path / "t1b.db", "task-1")  # (the branch as an argument too)
    assert rows(tmp_path / "t1.db", "select count(*) from loose") == [(0,)]
    assert rows(tmp_path / "t1b.db", "select count(*) from loose") == [(0,)]
    assert schema(tmp_path / "main.db") == schema(original)
    again = run_cli(shop, "export", tmp_path / "main.db", check=False)
    assert again.returncode == 1 and "exists already" in again.stderr and not again.stdout
    replaced = run_cli(shop, "export", tmp_path / "main.db", "task-1", "--replace", "--json")
    assert '"branch": "task-1"' in replaced.stdout
    assert rows(tmp_path / "main.db", "select count(*) from loose") == [(0,)]


def test_the_shell_has_it(app, tmp_path):
    out = tmp_path / "s.db"
    done = run_cli(tmp_path / "shop", "-c", f"\\export {out}")
    assert f"exported main to {out}" in done.stdout
    assert rows(out, "select count(*) from books") == [(2,)]


def test_only_a_person_exports(app, tmp_path):
    db, _original = app
    db.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
    with pytest.raises(ChronosError) as err:
        db.call("export", db.as_agent("bot"), to=str(tmp_path / "x.db"))
    assert "admin" in err.value.message
    with pytest.raises(ChronosError) as err:
        db.call("export", Caller(mode="safe"), to=str(tmp_path / "x.db"))
    assert "safe mode" in err.value.message
    assert not (tmp_path / "x.db").exists()


def test_other_virtual_tables_come_out_as_main_has_them(db, tmp_path):
    """A contentless FTS5 table and an R*Tree keep no rows a world copies: every branch reads
    them as main has them, and so does its file (their index, as SQLite keeps it)."""
    db.sql("create virtual table words using fts5(body, content='')")
    db.sql("insert into words(rowid, body) values (5, 'alpha beta'), (6, 'gamma')")
    db.sql("create virtual table boxes using rtree(id, x0, x1)")
    db.sql("insert into boxes values (1, 0, 10), (2, 5, 6)")
    db.sql("create table notes(k text primary key, v)")
    db.sql("insert into notes values ('a', 1), ('b', 2)")
    db.fork("w")
    db.sql("insert into notes values ('c', 3); delete from notes where k = 'a'", branch="w")
    for branch in ("main", "w"):
        out = tmp_path / f"{branch}.db"
        assert db.export(out, branch=branch)["left_out"] == []
        assert rows(out, "select rowid from words where words match 'beta'") == [(5,)]
        assert rows(out, "select * from boxes where x1 < 7") == [(2, 5.0, 6.0)]
    assert rows(tmp_path / "main.db", "select rowid, * from notes") == [(1, "a", 1), (2, "b", 2)]
    # (main's rows keep main's rowid; a row only the world has takes the next one)
    assert rows(tmp_path / "w.db", "select rowid, * from notes") == [(2, "b", 2), (3, "c", 3)]


def test_a_file_adopted_again_hashes_as_the_branch_it_came_from(app, tmp_path):
    """The way back in: a branch's file, adopted by `init --from`, holds the same tables and
    rows (its content hash is the branch's)."""
    db, _original = app
    db.fork("w")
    db.sql("update loose set b = 'z' where a = 2; insert into tagged values ('e', 5)", branch="w")
    for branch in ("main", "w"):
        out = tmp_path / f"{branch}.db"
        db.export(out, branch=branch)
        with chronos_lite.init(tmp_path / f"again-{branch}", from_file=out) as again:
            assert again.hash().hash == db.hash(branch).hash, branch


def test_rows_whose_parent_is_missing_are_named_not_refused(tmp_path):
    """An app that wrote with foreign keys off left a child without its parent: the file is
    the branch as it is, and the reply names the rows foreign_key_check finds."""
    original = tmp_path / "app.db"
    conn = sqlite3.connect(original)
    conn.executescript(
        "create table parents(id integer primary key autoincrement);"
        "create table kids(id integer primary key autoincrement, parent integer "
        "references parents(id));"
        "insert into parents default values; insert into kids(parent) values (1), (7);"
    )
    conn.commit()
    conn.close()
    with chronos_lite.init(tmp_path / "shop", from_file=original) as db:
        reply = db.call("export", to=str(tmp_path / "out.db"))
    assert reply.data["foreign_key_violations"] == [
        {"table": "kids", "rowid": 2, "parent": "parents"}
    ]
    assert "foreign_key_check found rows whose parent is missing (as on main): kids row 2" in (
        reply.text
    )
    assert rows(tmp_path / "out.db", "select * from kids") == [(1, 1), (2, 7)]


def test_an_export_killed_half_way_leaves_nothing_at_the_destination(app, tmp_path):
    """SIGKILL while the file is being made: nothing at the destination, the database as it
    was, and the next export clears the dead one's hidden file."""
    db, _original = app
    out = tmp_path / "out.db"
    script = (
        "import sys, time, chronos_lite\n"
        "from chronos_lite.copies import export\n"
        "def stuck(*_a):\n"
        "    print('stuck', flush=True)\n"
        "    time.sleep(60)\n"
        "export._sequences = stuck\n"
        "chronos_lite.open(sys.argv[1]).export(sys.argv[2])\n"
    )
    run = [sys.executable, "-c", script, str(tmp_path / "shop"), str(out)]
    with subprocess.Popen(run, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == "stuck\n"
            made = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.db.")]
            assert made == [f".out.db.exporting-{child.pid}"]
        finally:
            child.kill()
            child.wait(timeout=30)
    assert not out.exists()
    assert db.sql("select count(*) from loose").results[-1].rows == [(2,)]
    db.export(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "out.db", "shop"]
