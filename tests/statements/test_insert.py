"""The insert operation: loading CSV, TSV, JSON and NDJSON files into tables on main and worlds
(chronos_lite/loading.py), in-process and through the real `chronos` command."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import jsonschema
import pytest
from helpers import ROOT, run_cli

import chronos_lite
from chronos_lite import REGISTRY, ChronosError
from chronos_lite.cliargs import parse_operation_call
from chronos_lite.operations.registry import Caller
from chronos_lite.shell.session import Shell

USERS_CSV = "id,name,age,score\n1,Ada,36,1.5\n2,Bob,,2\n3,Cy,41,\n"
USERS_ROWS = [(1, "Ada", 36, 1.5), (2, "Bob", None, 2.0), (3, "Cy", 41, None)]


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def rows(db, sql: str, branch: str = "main") -> list[tuple]:
    return [tuple(r.values()) for r in db.query(sql, branch=branch)]


def columns(db, table: str) -> list[tuple]:
    """(name, declared type, pk position) of a table on main."""
    got = db.database.main.conn.execute(
        f"select name, lower(type), pk from pragma_table_info('{table}')"
    )
    return [tuple(r) for r in got]


def failure(db, **args) -> ChronosError:
    with pytest.raises(ChronosError) as err:
        db.call("insert", **args)
    return err.value


# --- a new table: columns, types, keys ---------------------------------------------------------


def test_csv_creates_the_table_with_detected_types(db, tmp_path):
    path = write(tmp_path, "users.csv", USERS_CSV)
    reply = db.call("insert", table="users", file=str(path), pk=["id"])
    made = "users (id integer primary key, name text, age integer, score real)"
    assert reply.text == f"created table {made} on main and inserted 3 rows"
    assert reply.data == {
        "table": "users",
        "branch": "main",
        "rows": 3,
        "created": True,
        "file": str(path),
        "format": "csv",
        "create": f"create table {made}",
    }
    assert columns(db, "users") == [
        ("id", "integer", 1),
        ("name", "text", 0),
        ("age", "integer", 0),
        ("score", "real", 0),
    ]
    assert rows(db, "select * from users order by id") == USERS_ROWS
    # empty fields: NULL in numeric columns; the types are SQLite's, not text
    kinds = rows(db, "select typeof(id), typeof(age), typeof(score) from users where id = 1")
    assert kinds == [("integer", "integer", "real")]


def test_without_pk_a_rowid_table_and_a_column_of_empty_fields_is_text(db, tmp_path):
    path = write(tmp_path, "notes.csv", "title,body,n\nhello,,1\nbye,,x\n")
    reply = db.call("insert", table="notes", file=str(path))
    assert reply.text == (
        "created table notes (title text, body text, n text) on main and inserted 2 rows"
    )
    assert columns(db, "notes") == [("title", "text", 0), ("body", "text", 0), ("n", "text", 0)]
    # a text column keeps an empty field as ''
    assert rows(db, "select rowid, * from notes") == [(1, "hello", "", "1"), (2, "bye", "", "x")]


def test_pk_text_and_composite(db, tmp_path):
    path = write(tmp_path, "tags.csv", "code,label\nred,Red\nblue,Blue\n")
    reply = db.call("insert", table="tags", file=str(path), pk=["code"])
    assert "tags (code text not null primary key, label text)" in reply.text
    assert db.get("tags", "red") == {"code": "red", "label": "Red"}
    path = write(tmp_path, "lines.csv", "order_id,line,qty\n17,1,2\n17,2,5\n18,1,1\n")
    reply = db.call("insert", table="lines", file=str(path), pk=["order_id", "line"])
    assert reply.text.startswith(
        "created table lines (order_id integer not null, line integer not null, qty integer, "
        "primary key (order_id, line))"
    )
    assert db.get("lines", "17,2") == {"order_id": 17, "line": 2, "qty": 5}


def test_names_sql_reserves_are_quoted(db, tmp_path):
    path = write(tmp_path, "o.csv", 'order,first name,"a""b"\n1,Ada,x\n')
    reply = db.call("insert", table="order", file=str(path))
    assert reply.data["create"] == (
        'create table "order" ("order" integer, "first name" text, "a""b" text)'
    )
    assert rows(db, 'select * from "order"') == [(1, "Ada", "x")]


def test_json_types_and_nested_values(db, tmp_path):
    data = [
        {"id": 1, "name": "Ada", "score": 1, "tags": ["a", "b"], "ok": True},
        {"id": 2, "name": "Bob", "score": 2.5, "meta": {"x": 1}, "ok": False},
        {"id": 3, "name": None},
    ]
    path = write(tmp_path, "people.json", json.dumps(data))
    reply = db.call("insert", table="people", file=str(path), pk=["id"])
    assert reply.data["create"] == (
        "create table people (id integer primary key, name text, score real, tags text, "
        "ok integer, meta text)"
    )
    assert rows(db, "select * from people order by id") == [
        (1, "Ada", 1.0, '["a", "b"]', 1, None),
        (2, "Bob", 2.5, None, 0, '{"x": 1}'),
        (3, None, None, None, None, None),
    ]


def test_pk_naming_a_column_the_file_hasnt(db, tmp_path):
    path = write(tmp_path, "users.csv", USERS_CSV)
    err = failure(db, table="users", file=str(path), pk=["uid"])
    assert err.message == (
        f"pk names 'uid', which {path} has no column for; its columns: id, name, age, score"
    )
    assert "users" not in db.database.tables()


# --- formats ------------------------------------------------------------------------------------

FORMS = {
    "csv": "id,name\n1,Ada\n2,Bob\n",
    "tsv": "id\tname\n1\tAda\n2\tBob\n",
    "json": '[{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob"}]',
    "ndjson": '{"id": 1, "name": "Ada"}\n\n{"id": 2, "name": "Bob"}\n',
}


@pytest.mark.parametrize("fmt", sorted(FORMS))
@pytest.mark.parametrize("name", ["named", "detected", "forced"])
def test_each_format(db, tmp_path, fmt, name):
    """Told by the file's name (users.tsv), by its contents (users.data), or by format."""
    suffix = {"named": f".{fmt}", "detected": ".data", "forced": ".txt"}[name]
    path = write(tmp_path, f"users{suffix}", FORMS[fmt])
    args = {"format": fmt} if name == "forced" else {}
    reply = db.call("insert", table="users", file=str(path), pk=["id"], **args)
    assert reply.data["format"] == fmt
    assert reply.text.endswith("and inserted 2 rows")
    assert columns(db, "users") == [("id", "integer", 1), ("name", "text", 0)]
    assert rows(db, "select * from users") == [(1, "Ada"), (2, "Bob")]


def test_a_json_file_of_one_object_a_line_is_ndjson_and_one_object_is_a_row(db, tmp_path):
    path = write(tmp_path, "a.json", '{"id": 1}\n{"id": 2}\n')
    assert db.call("insert", table="a", file=str(path)).data["format"] == "ndjson"
    path = write(tmp_path, "b.json", '{\n  "id": 1,\n  "name": "Ada"\n}\n')
    reply = db.call("insert", table="b", file=str(path))
    assert reply.data["format"] == "json" and reply.data["rows"] == 1


def test_detected_delimiter_bom_and_one_column(db, tmp_path):
    path = write(tmp_path, "semi.txt", "id;name\n1;Ada\n2;Bob\n")
    assert db.call("insert", table="semi", file=str(path)).data["rows"] == 2
    assert rows(db, "select * from semi") == [(1, "Ada"), (2, "Bob")]
    path = write(tmp_path, "bom.csv", "\ufeffid,name\n1,Ada\n".encode())
    db.call("insert", table="bom", file=str(path))
    assert [c[0] for c in columns(db, "bom")] == ["id", "name"]
    path = write(tmp_path, "emails", "email\nada@x.org\nbob@y.org\n")  # nothing to sniff
    assert db.call("insert", table="emails", file=str(path)).data["rows"] == 2


def test_encoding(db, tmp_path):
    path = write(tmp_path, "latin.csv", "id,name\n1,Jos\xe9\n".encode("latin-1"))
    err = failure(db, table="people", file=str(path))
    assert err.message == (
        f"row 1 of {path} isn't utf-8 text (byte 0xe9): give the file's encoding with "
        f"--encoding, e.g. latin-1"
    )
    db.call("insert", table="people", file=str(path), encoding="latin-1")
    assert rows(db, "select name from people") == [("José",)]
    path = write(tmp_path, "latin.json", '[{"id": 2, "name": "Ren\xe9e"}]'.encode("latin-1"))
    err = failure(db, table="people", file=str(path))
    assert err.message.startswith(f"{path} isn't utf-8 text (byte 0xe9)")
    db.call("insert", table="people", file=str(path), encoding="latin-1")
    assert rows(db, "select name from people order by id") == [("José",), ("Renée",)]
    err = failure(db, table="people", file=str(path), encoding="klingon")
    assert err.message.startswith("unknown encoding 'klingon'")


# --- an existing table --------------------------------------------------------------------------


def test_into_an_existing_table(shop, tmp_path):
    path = write(tmp_path, "more.csv", "name,email\nBob,bob@x.org\nCy,cy@x.org\n")
    reply = shop.call("insert", table="users", file=str(path))
    assert reply.text == "inserted 2 rows into users on main"
    assert reply.data == {
        "table": "users",
        "branch": "main",
        "rows": 2,
        "created": False,
        "file": str(path),
        "format": "csv",
    }
    assert rows(shop, "select * from users order by id") == [
        (1, "Ada", "ada@x.org"),
        (2, "Bob", "bob@x.org"),
        (3, "Cy", "cy@x.org"),
    ]


def test_a_column_the_table_doesnt_have(shop, tmp_path):
    path = write(tmp_path, "more.csv", "name,nickname\nBob,B\n")
    err = failure(shop, table="users", file=str(path))
    assert err.message == (
        f"row 1 of {path} has column 'nickname', which table users doesn't have; its columns: "
        f"id, name, email; nothing was inserted"
    )
    # a JSON row names its own columns: the error names the row that has it
    path = write(tmp_path, "more.ndjson", '{"name": "Bob"}\n{"name": "Cy", "age": 3}\n')
    err = failure(shop, table="users", file=str(path))
    assert err.message.startswith(f"row 2 of {path} has column 'age', which table users")
    assert err.data == {"row": 2, "file": str(path), "error": err.data["error"]}
    assert rows(shop, "select count(*) from users") == [(1,)]


def test_columns_match_without_regard_to_case(shop, tmp_path):
    path = write(tmp_path, "more.csv", "NAME,Email\nBob,bob@x.org\n")
    shop.call("insert", table="USERS", file=str(path))
    assert rows(shop, "select name, email from users where id = 2") == [("Bob", "bob@x.org")]


def test_a_json_row_leaving_a_column_out_gets_its_default(db, tmp_path):
    db.sql("create table t(id integer primary key, a text default 'dflt', b int)")
    path = write(tmp_path, "t.ndjson", '{"id": 1, "b": 1}\n{"id": 2, "a": "x"}\n{"id": 3}\n')
    assert db.call("insert", table="t", file=str(path)).data["rows"] == 3
    assert rows(db, "select * from t") == [(1, "dflt", 1), (2, "x", None), (3, "dflt", None)]


# --- one transaction: a bad row and nothing is inserted -----------------------------------------

BAD_MIDDLE = "name,email\nBob,bob@x.org\nCy,cy@x.org\nDup,ada@x.org\nDee,dee@x.org\n"


@pytest.mark.parametrize("branch", ["main", "task-1"])
def test_a_bad_row_in_the_middle_leaves_nothing_inserted(shop, tmp_path, branch):
    if branch != "main":
        shop.fork(branch)
    path = write(tmp_path, "more.csv", BAD_MIDDLE)
    before = rows(shop, "select * from users order by id", branch)
    events = len(shop.call("history", branch=branch).data["events"])
    err = failure(shop, table="users", file=str(path), branch=branch)
    assert err.message == (
        f"row 3 of {path}: UNIQUE constraint failed: users.email; nothing was inserted"
    )
    assert err.code == "23505"
    assert err.data == {
        "row": 3,
        "file": str(path),
        "error": "UNIQUE constraint failed: users.email",
    }
    assert rows(shop, "select * from users order by id", branch) == before
    assert len(shop.call("history", branch=branch).data["events"]) == events  # no event
    if branch != "main":
        assert shop.call("diff", branch=branch).data["count"] == 0


@pytest.mark.parametrize("branch", ["main", "task-1"])
def test_a_bad_row_leaves_no_new_table(db, tmp_path, branch):
    if branch != "main":
        db.fork(branch)
    path = write(tmp_path, "users.csv", "id,name\n1,Ada\n2,Bob\n2,Dup\n")
    err = failure(db, table="users", file=str(path), pk=["id"], branch=branch)
    assert err.message == (
        f"row 3 of {path}: UNIQUE constraint failed: users.id; nothing was inserted (nor table "
        f"users created)"
    )
    assert "users" not in db.database.tables_for(db.database.resolve(branch))
    path = write(tmp_path, "ok.csv", "id,name\n1,Ada\n")  # and it can be made after
    assert db.call("insert", table="users", file=str(path), branch=branch).data["created"]


def test_sqlite_rules_name_the_row(db, tmp_path):
    db.sql("create table t(id integer primary key, name text not null, n int check (n > 0))")
    db.fork("w")
    cases = [
        (
            '{"id": 1, "name": "a"}\n{"id": 2, "name": null}\n',
            "row 2",
            "NOT NULL constraint failed: t.name",
        ),
        (
            "id,name,n\nx,a,1\n",
            "row 1",
            "datatype mismatch (id is the INTEGER PRIMARY KEY: its values are integers)",
        ),
    ]
    for text, row, message in cases:
        path = write(tmp_path, "t.ndjson" if text.startswith("{") else "t.csv", text)
        for branch in ("main", "w"):
            err = failure(db, table="t", file=str(path), branch=branch)
            assert err.message.startswith(f"{row} of {path}: {message}"), (branch, err.message)
            assert err.message.endswith("; nothing was inserted")
    path = write(tmp_path, "t.csv", "id,name,n\n1,a,1\n2,b,1\n3,c,-1\n")
    err = failure(db, table="t", file=str(path))  # (a world doesn't hold CHECK rules)
    assert err.message == f"row 3 of {path}: CHECK constraint failed: n > 0; nothing was inserted"
    assert err.code == "23514"  # (the SQLSTATE of the rule)  # (not null; the SQLSTATE of the rule)
    assert rows(db, "select count(*) from t") == [(0,)]
    path = write(tmp_path, "big.json", '[{"id": 1, "name": "a", "n": 99999999999999999999}]')
    err = failure(db, table="t", file=str(path))
    assert err.message.startswith(f"row 1 of {path}: a number is too large for SQLite")


# --- errors of the file -------------------------------------------------------------------------


def test_file_errors(shop, tmp_path):
    missing = tmp_path / "nope.csv"
    err = failure(shop, table="users", file=str(missing))
    assert (err.message, err.code) == (f"no file {missing}", "P0002")
    err = failure(shop, table="users", file=str(tmp_path))
    assert err.message == f"{tmp_path} is a folder, not a file"
    path = write(tmp_path, "bad.json", '[{"name": "Bob"}, {"name": ]')
    err = failure(shop, table="users", file=str(path))
    assert err.message == (
        f"{path} isn't valid JSON: line 1: Expecting value (column 28); give its format with "
        f"--format if it is another"
    )
    path = write(tmp_path, "bad.ndjson", '{"name": "Bob"}\n{"name": "Cy"\n')
    err = failure(shop, table="users", file=str(path))
    assert err.message.startswith(f"{path} isn't valid NDJSON: row 2: Expecting ',' delimiter")
    path = write(tmp_path, "nums.json", "[1, 2]")
    err = failure(shop, table="users", file=str(path))
    assert err.message.startswith(f"row 1 of {path} is a number, not an object")
    path = write(tmp_path, "scalar.json", '"hello"')
    err = failure(shop, table="users", file=str(path), format="json")
    assert err.message.startswith(f"{path}: JSON must be a list or a dictionary")
    path = write(tmp_path, "extra.csv", "name,email\nBob,bob@x.org\nCy,cy@x.org,oops\n")
    err = failure(shop, table="users", file=str(path))
    assert err.message == (
        f"row 2 of {path} has more values than its header names columns (the extra ones: ['oops'])"
    )
    assert rows(shop, "select count(*) from users") == [(1,)]


def test_an_empty_file(shop, tmp_path):
    for name, text in [("empty.csv", ""), ("blank.csv", "\n  \n"), ("none.json", "[]")]:
        path = write(tmp_path, name, text)
        reply = shop.call("insert", table="users", file=str(path))
        assert reply.text == f"inserted 0 rows into users on main ({path} holds no rows)"
        assert reply.data["rows"] == 0 and not reply.data["created"]
        err = failure(shop, table="fresh", file=str(path))
        assert err.message == (
            f"{path} holds no rows, so there are no columns to create table fresh from: create "
            f"it first (sql 'create table ...'), or give a file with rows"
        )
    path = write(tmp_path, "header.csv", "name,email\n")  # a header alone: no rows either
    assert shop.call("insert", table="users", file=str(path)).data["rows"] == 0
    assert len(shop.call("history", branch="main").data["events"]) == 2  # (the two sql calls)
    assert "fresh" not in shop.database.tables()


def test_table_names_chronos_and_sqlite_keep(db, tmp_path):
    path = write(tmp_path, "x.csv", "a\n1\n")
    assert failure(db, table="_chronos_x", file=str(path)).code == "42501"
    err = failure(db, table="sqlite_x", file=str(path))
    assert "reserved for SQLite" in err.message


# --- upsert -------------------------------------------------------------------------------------


@pytest.mark.parametrize("branch", ["main", "task-1"])
def test_upsert_inserts_or_updates_by_primary_key(shop, tmp_path, branch):
    if branch != "main":
        shop.fork(branch)
    path = write(tmp_path, "up.ndjson", '{"id": 1, "name": "Ada L."}\n{"id": 5, "name": "Eve"}\n')
    reply = shop.call("insert", table="users", file=str(path), upsert=True, branch=branch)
    assert reply.text == f"upserted 2 rows into users on {branch} (1 inserted, 1 updated)"
    assert reply.data["inserted"] == 1 and reply.data["updated"] == 1
    # the update changes the file's columns only: email stays
    assert rows(shop, "select * from users order by id", branch) == [
        (1, "Ada L.", "ada@x.org"),
        (5, "Eve", None),
    ]
    err = failure(shop, table="users", file=str(path), branch=branch)  # without: the key is taken
    assert err.message.startswith(f"row 1 of {path}: UNIQUE constraint failed: users.id")
    if branch != "main":
        diff = shop.call("diff", branch=branch).text
        assert '~ users/1  name: "Ada" -> "Ada L."' in diff and "+ users/5" in diff
        assert rows(shop, "select * from users") == [(1, "Ada", "ada@x.org")]
        # the world's own INSERT trigger is back: a plain insert refuses a taken key
        with pytest.raises(ChronosError, match="UNIQUE constraint failed: users.id"):
            shop.sql("insert into users(id, name) values (5, 'x')", branch=branch)


def test_upsert_by_a_unique_column_and_a_new_table(shop, tmp_path):
    path = write(tmp_path, "up.csv", "email,name\nada@x.org,Ada K.\nbo@x.org,Bo\n")
    reply = shop.call("insert", table="users", file=str(path), upsert=True, pk=["email"])
    assert reply.text == "upserted 2 rows into users on main (1 inserted, 1 updated)"
    assert rows(shop, "select name, email from users order by id") == [
        ("Ada K.", "ada@x.org"),
        ("Bo", "bo@x.org"),
    ]
    path = write(tmp_path, "kv.csv", "k,v\na,1\nb,2\na,3\n")  # a key twice: the last one wins
    reply = shop.call("insert", table="kv", file=str(path), upsert=True, pk=["k"])
    assert reply.text.endswith("and upserted 3 rows (2 inserted, 1 updated)")
    assert rows(shop, "select * from kv order by k") == [("a", 3), ("b", 2)]


def test_upsert_errors(shop, tmp_path):
    path = write(tmp_path, "up.csv", "name\nBob\n")
    err = failure(shop, table="users", file=str(path), upsert=True)
    assert err.message == (
        f"row 1 of {path} has no id, the key upsert matches rows by; nothing was inserted"
    )
    shop.sql("create table notes(body text)")
    err = failure(shop, table="notes", file=str(path), upsert=True)
    assert err.message.startswith("upsert matches rows by primary key, and table notes has none")
    err = failure(shop, table="fresh", file=str(path), upsert=True)
    assert err.message.startswith(
        "upsert matches rows by primary key, and table fresh doesn't exist yet: give its key "
        "with pk"
    )
    err = failure(shop, table="users", file=str(path), upsert=True, pk=["name"])
    assert err.message == (
        "table users exists, and its primary key is id: pk (name) is the key of a table insert "
        "creates, and with upsert the key rows are matched by (the table's primary key, or "
        "columns it holds UNIQUE)"
    )
    err = failure(shop, table="users", file=str(path), pk=["email"])  # (only upsert takes it)
    assert err.message.startswith("table users exists, and its primary key is id: pk (email)")
    err = failure(shop, table="users", file=str(path), pk=["nope"])
    assert err.message == "table users has no column 'nope'; its columns: id, name, email"


# --- worlds: history, diff, merge ---------------------------------------------------------------


def test_into_a_world_then_diff_and_merge(shop, tmp_path):
    shop.fork("task-1")
    path = write(tmp_path, "more.csv", "name,email\nBob,bob@x.org\nCy,cy@x.org\n")
    reply = shop.call("insert", table="users", file=str(path), branch="task-1")
    assert reply.text == "inserted 2 rows into users on task-1"
    assert rows(shop, "select count(*) from users") == [(1,)]  # main doesn't see them
    diff = shop.call("diff", branch="task-1")
    assert diff.data["count"] == 2
    assert '+ users/2 {"id": 2, "name": "Bob", "email": "bob@x.org"}' in diff.text
    assert '+ users/3 {"id": 3, "name": "Cy", "email": "cy@x.org"}' in diff.text
    history = shop.call("history", branch="task-1").data["events"]
    assert history[0]["event"] == "write" and history[0]["rows"] == 2
    assert history[0]["detail"]["insert"] == "users"
    assert shop.call("merge", branch="task-1").text == "merged 2 changes from task-1 into main"
    assert rows(shop, "select id, name from users order by id") == [
        (1, "Ada"),
        (2, "Bob"),
        (3, "Cy"),
    ]


def test_a_table_made_on_a_world_is_its_schema_change(db, tmp_path):
    db.fork("task-1")
    path = write(tmp_path, "users.csv", USERS_CSV)
    reply = db.call("insert", table="users", file=str(path), pk=["id"], branch="task-1")
    assert reply.text == (
        "created table users (id integer primary key, name text, age integer, score real) on "
        "task-1 and inserted 3 rows"
    )
    assert "users" not in db.database.tables()
    assert rows(db, "select * from users order by id", "task-1") == USERS_ROWS
    diff = db.call("diff", branch="task-1")
    assert diff.data["schema"] == [
        {
            "table": "users",
            "kind": "create",
            "sql": 'CREATE TABLE "users" (id integer primary key, name text, age integer, '
            "score real)",
        }
    ]
    assert diff.data["count"] == 4  # the table and its rows
    assert db.call("history", branch="task-1").data["events"][0]["event"] == "schema"
    db.call("merge", branch="task-1")
    assert rows(db, "select * from users order by id") == USERS_ROWS
    assert columns(db, "users")[0] == ("id", "integer", 1)


def test_a_world_row_history_and_undo(shop, tmp_path):
    """The rows a load writes are the caller's: undo_agent takes them back."""
    shop.fork("w")
    bot = Caller(name="bot")
    path = write(tmp_path, "more.csv", "name,email\nBob,bob@x.org\n")
    shop.call("insert", caller=bot, table="users", file=str(path))
    shop.call("insert", caller=bot, table="users", file=str(path), branch="w")
    done = shop.call("undo_agent", agent="bot", since="-1 minute")
    assert done.data["rows"] == 2 and done.data["branches"] == ["main", "w"]
    assert rows(shop, "select count(*) from users") == [(1,)]
    assert rows(shop, "select count(*) from users", "w") == [(1,)]


# --- rights, front ends -------------------------------------------------------------------------


def test_not_an_mcp_tool_and_safe_mode_writes_only_its_own_worlds(shop, tmp_path):
    op = REGISTRY.get("insert")
    assert not op.mcp and op.annotations["destructiveHint"]
    agent = Caller(name="mcp", mode="safe")
    assert op not in REGISTRY.listed(agent)
    path = write(tmp_path, "more.csv", "name,email\nBob,bob@x.org\n")
    with pytest.raises(ChronosError) as err:
        shop.call("insert", caller=agent, table="users", file=str(path))
    assert err.value.code == "42501"
    shop.call("fork", caller=agent, name="mine")
    assert shop.call("insert", caller=agent, table="users", file=str(path), branch="mine").data
    with pytest.raises(ChronosError, match="can only be read"):
        shop.call("insert", table="users", file=str(path), branch="main@-1 second")


def test_the_schema():
    schema = json.loads((ROOT / "schemas" / "insert.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["table", "file"] and schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "table",
        "file",
        "pk",
        "upsert",
        "format",
        "encoding",
        "branch",
    }
    args, shown = parse_operation_call(
        REGISTRY.get("insert"), ["users", "u.csv", "--pk", "a,b", "--upsert", "-b", "w", "--json"]
    )
    assert args == {"table": "users", "file": "u.csv", "pk": ["a", "b"], "upsert": True}.__or__(
        {"branch": "w"}
    )
    assert shown == "json"
    args, shown = parse_operation_call(REGISTRY.get("insert"), ["users", "u.csv", "--pk", "id"])
    assert args["pk"] == ["id"] and shown is None  # (none asked for: the front end's own)


def test_python_method(db, tmp_path):
    path = write(tmp_path, "users.csv", USERS_CSV)
    done = db.insert("users", path, pk="id")
    assert (done.rows, done.table, done.branch, done.format) == (3, "users", "main", "csv")
    assert done.created == (
        "create table users (id integer primary key, name text, age integer, score real)"
    )
    db.fork("w")
    more = write(tmp_path, "more.json", '[{"id": 1, "name": "Ada L."}]')
    done = db.insert("users", more, upsert=True, branch="w")
    assert (done.rows, done.inserted, done.updated) == (1, 0, 1)
    assert db.get("users", 1, branch="w")["name"] == "Ada L."


def test_the_shell_runs_it(shop, tmp_path):
    path = write(tmp_path, "more.csv", "name,email\nBob,bob@x.org\n")
    out, err = StringIO(), StringIO()
    shell = Shell(shop.database, out=out, err=err, interactive=False)
    shell.run_input(f"\\insert users {path}")
    assert out.getvalue().strip() == "inserted 1 row into users on main"
    assert err.getvalue() == ""


def test_the_cli(tmp_path):
    shop = tmp_path / "shop"
    run_cli("init", shop)
    users = write(tmp_path, "users.csv", USERS_CSV)
    out = run_cli(shop, "insert", "users", users, "--pk", "id").stdout
    assert out == (
        "created table users (id integer primary key, name text, age integer, score real) on "
        "main and inserted 3 rows\n"
    )
    run_cli(shop, "fork", "task-1")
    more = write(tmp_path, "more.ndjson", '{"id": 4, "name": "Dee"}\n{"id": 1, "age": 37}\n')
    out = run_cli(shop, "insert", "users", more, "--upsert", "-b", "task-1").stdout
    assert out == "upserted 2 rows into users on task-1 (1 inserted, 1 updated)\n"
    data = json.loads(
        run_cli(
            shop,
            "insert",
            "users",
            write(tmp_path, "u.tsv", "id\tname\n5\tEve\n"),
            "-b",
            "task-1",
            "--json",
        ).stdout
    )
    assert data == {
        "table": "users",
        "branch": "task-1",
        "rows": 1,
        "created": False,
        "file": str(tmp_path / "u.tsv"),
        "format": "tsv",
    }
    diff = run_cli(shop, "diff", "task-1").stdout
    assert diff.startswith("3 changes on task-1 (users: 0 deleted, 1 updated, 2 inserted)")
    assert run_cli(shop, "merge", "task-1").stdout == "merged 3 changes from task-1 into main\n"
    out = run_cli(shop, "sql", "select id, name, age from users order by id", "--json").stdout
    assert json.loads(out)["results"][0]["rows"] == [
        [1, "Ada", 37],
        [2, "Bob", None],
        [3, "Cy", 41],
        [4, "Dee", None],
        [5, "Eve", None],
    ]
    bad = write(tmp_path, "bad.csv", "id,name\n6,F\n1,dup\n")
    proc = run_cli(shop, "insert", "users", bad, check=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (
        f"chronos: row 2 of {bad}: UNIQUE constraint failed: users.id; nothing was inserted\n"
    )
    proc = run_cli(shop, "insert", "users", check=False)
    assert proc.stderr == "chronos: 'file' is required: a non-empty string\n"
    assert re.search(r"\n  insert +Load a file into a table\n", run_cli(shop, "help").stdout)
    assert "--upsert, --no-upsert" in run_cli(shop, "help", "insert").stdout
    proc = run_cli(shop, "sql", "select count(*) from users", "--json")
    assert json.loads(proc.stdout)["results"][0]["rows"] == [[5]]


def test_relative_paths_are_the_callers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("users.csv").write_text(USERS_CSV)
    db = chronos_lite.init("shop")
    try:
        assert db.call("insert", table="users", file="users.csv").data["file"] == "users.csv"
    finally:
        db.close()


def test_a_time_limit_holds_while_the_file_is_read(db, tmp_path):
    path = write(tmp_path, "big.csv", "id,name\n" + "".join(f"{i},n{i}\n" for i in range(30_000)))
    with pytest.raises(ChronosError) as err:
        db.call("insert", caller=Caller(max_query_ms=1), table="big", file=str(path))
    assert err.value.code == "57014"
    assert err.value.message.startswith("canceling statement due to statement timeout")
    assert "big" not in db.database.tables()
    assert db.call("insert", table="big", file=str(path)).data["rows"] == 30_000
