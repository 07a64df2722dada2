"""Values JSON can't hold keep their type through the registry and the CLI: a BLOB, the
infinities and integers past 2^53 read by get (as render.json_value spells them) come back from
put and a merge's rows as they were; what put makes of other JSON; what it refuses.

MCP's run of the same is test_mcp_values.py; names and row ids are test_names.py."""

from __future__ import annotations

import json
import math

import pytest
from helpers import run_cli

from chronos_lite import ChronosError


def test_values_come_back_from_put_as_they_were_read(db):
    db.sql("create table v(id integer primary key, b blob, r real, t text, n int, u)")
    db.sql(
        "insert into v values (1, x'00ff', 9e999, 'Infinity', 9223372036854775807, -9e999), "
        "(2, x'', -9e999, '{\"$blob\": \"00\"}', -9223372036854775808, 9007199254740993)"
    )
    before = db.query("select *, typeof(b), typeof(r), typeof(t), typeof(u) from v order by id")
    db.fork("w")
    for ident in ("1", "2"):
        row = db.call("get", table="v", id=ident).data["row"]
        json.dumps(row, allow_nan=False)  # strict JSON
        db.call("put", table="v", id=ident, record=row, branch="w")
    after = "select *, typeof(b), typeof(r), typeof(t), typeof(u) from v order by id"
    assert db.query(after, branch="w") == before
    assert db.call("get", table="v", id="1").data["row"] == {
        "id": 1,
        "b": {"$blob": "00ff"},
        "r": "Infinity",
        "t": "Infinity",
        "n": 9223372036854775807,
        "u": "-Infinity",
    }
    assert db.diff("w").changes == []  # written back as they were: no change


def test_what_put_makes_of_json_values(db):
    db.sql("create table v(id integer primary key, b blob, r real, t text, u)")
    record = {"b": {"$blob": "00FF"}, "r": "-Infinity", "t": {"$blob": "00", "x": 1}, "u": "NaN"}
    db.put("v", 1, record)
    db.put("v", 2, {"b": '{"$blob": "00"}', "r": float("nan"), "t": [1, {"a": None}]})
    assert db.query("select b, r, t, u, typeof(u) as tu from v order by id") == [
        {
            "b": b"\x00\xff",
            "r": -math.inf,
            "t": '{"$blob": "00", "x": 1}',
            "u": "NaN",
            "tu": "text",
        },
        {"b": '{"$blob": "00"}', "r": None, "t": '[1, {"a": null}]', "u": None, "tu": "null"},
    ]


@pytest.mark.parametrize(
    ("record", "words"),
    [
        ({"b": {"$blob": "0g"}}, '\'record\'["b"]: {"$blob": ...} holds a blob as hex digits'),
        ({"b": {"$blob": "abc"}}, "two a byte"),
        ({"b": 2**63}, "too large for SQLite: integers are 64-bit"),
    ],
)
def test_a_value_put_cannot_read_is_refused_and_changes_nothing(db, record, words):
    db.sql("create table v(id integer primary key, b blob)")
    with pytest.raises(ChronosError) as info:
        db.put("v", 1, record)
    assert words in info.value.message
    assert db.query("select count(*) as n from v") == [{"n": 0}]


def test_rows_given_by_hand_take_the_same_json_values(db):
    db.sql("create table v(id integer primary key, b blob, r real)")
    db.sql("insert into v values (1, x'00', 1.0)")
    db.fork("w")
    db.sql("update v set r = 2.0 where id = 1", branch="w")
    db.sql("update v set r = 3.0 where id = 1")
    by_hand = {"v/1": {"b": {"$blob": "beef"}, "r": "Infinity"}}
    with pytest.raises(ChronosError, match=r'rows\["v/1"\]\["b"\]: \{"\$blob": \.\.\.\} holds'):
        db.merge("w", rows={"v/1": {"b": {"$blob": "xyz"}}})
    db.merge("w", rows=by_hand)
    assert db.query("select b, r from v") == [{"b": b"\xbe\xef", "r": float("inf")}]


def test_the_command_line_round_trips_values(db):
    db.sql("create table v(id integer primary key, b blob, r real, n int)")
    db.sql("insert into v values (1, x'00ff', 9e999, 9007199254740993)")
    folder = db.folder
    db.close()
    row = json.loads(run_cli(folder, "get", "v", "1", "--json").stdout)["row"]
    assert row == {"id": 1, "b": {"$blob": "00ff"}, "r": "Infinity", "n": 9007199254740993}
    run_cli(folder, "put", "v", "2", json.dumps(row | {"id": 2, "n": 2**63 - 1}))
    out = run_cli(folder, "sql", "select b, typeof(b), r, typeof(r), n from v", "--json")
    assert json.loads(out.stdout)["results"][0]["rows"] == [
        [{"$blob": "00ff"}, "blob", "Infinity", "real", 9007199254740993],
        [{"$blob": "00ff"}, "blob", "Infinity", "real", 2**63 - 1],
    ]
    bad = run_cli(folder, "put", "v", "3", '{"b": {"$blob": "xyz"}}', "--json", check=False)
    assert bad.returncode == 1 and "holds a blob as hex digits" in bad.stderr
    assert json.loads(bad.stdout)["code"] == "22023"
    csv = run_cli(folder, "-c", "select b, r from v where id = 1", "--csv").stdout
    assert csv.splitlines() == ["b,r", "\\x00ff,Infinity"]
