"""`chronos init --from` says what adopting a file changed in the app's schema, and why (issue
25): AUTOINCREMENT on integer primary keys (and a table PRIMARY KEY clause moved onto its
column for it), nothing else; a file it changes nothing in gets no such line."""

from __future__ import annotations

import sqlite3

from helpers import run_cli


def _app(path, script: str) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()


def test_init_from_names_the_tables_it_made_autoincrement(tmp_path):
    _app(
        tmp_path / "app.db",
        "create table a(id integer primary key, v text);"
        "create table b(k text primary key);"
        "create table c(id integer, v text, constraint pk primary key(id));"
        "create table d(id integer primary key autoincrement);"
        "insert into a(v) values ('x')",
    )
    out = run_cli("init", tmp_path / "shop", "--from", tmp_path / "app.db").stdout
    lines = out.splitlines()
    assert lines[0].endswith("(4 tables: a, b, c, d)")
    assert "made the integer primary key of a, c AUTOINCREMENT" in lines[1]
    assert "but the PRIMARY KEY clause of c, now on its column" in lines[1]
    schema = dict(
        sqlite3.connect(tmp_path / "shop" / "chronos.db")
        .execute("select name, sql from sqlite_schema where name in ('a', 'b', 'd')")
        .fetchall()
    )
    assert schema["b"] == "CREATE TABLE b(k text primary key)"  # (as it was)
    assert "AUTOINCREMENT" in schema["a"]


def test_a_file_it_changes_nothing_in_gets_one_line(tmp_path):
    _app(tmp_path / "app.db", "create table b(k text primary key, v int)")
    out = run_cli("init", tmp_path / "shop", "--from", tmp_path / "app.db").stdout
    assert out.splitlines() == [f"created chronos database {tmp_path / 'shop'} from "
                                f"{tmp_path / 'app.db'} (1 table: b)"]  # fmt: skip
