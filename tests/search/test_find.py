"""find: a table's rows by exact filters on any branch, counted, a page in key order."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

import chronos_lite
from chronos_lite import ChronosError


@pytest.fixture
def db(tmp_path):
    with chronos_lite.init(tmp_path / "db") as db:
        db.sql(
            "create table products(id integer primary key, name text, category text, "
            "price real, code blob); create table notes(body text)"
        )
        db.sql(
            "insert into products(name, category, price, code) values ('green', 'tea', 3, "
            "x'01'), ('black', 'tea', 4, null), ('mocha', 'coffee', 5, null), "
            "('white', 'Tea', 6, null); insert into notes values ('a'), ('b'), ('a')"
        )
        yield db


def ids(found) -> list:
    return [row["id"] for row in found.rows]


def test_filters_all_match_in_key_order_and_are_counted(db):
    found = db.find("products", {"category": "tea"})
    assert (found.matches, ids(found)) == (2, [1, 2])
    assert ids(db.find("products", {"category": "tea", "price": 4})) == [2]
    assert ids(db.find("products", {"price": "5"})) == [3]  # (as SQLite compares a REAL)
    assert ids(db.find("products", {"code": None})) == [2, 3, 4]
    assert ids(db.find("products", {"code": {"$blob": "01"}})) == [1]
    assert db.find("products").matches == 4
    assert ids(db.find("PRODUCTS", {"CATEGORY": "tea"})) == [1, 2]  # (names as SQLite's)
    notes = db.find("notes", {"body": "a"})  # (a table without a key: by rowid)
    assert (notes.matches, notes.rows) == (2, [{"body": "a"}, {"body": "a"}])


def test_a_page_says_which_rows_it_shows(db):
    reply = db.call("find", table="products", limit=2, offset=1)
    assert reply.text.splitlines()[0] == "4 matches; rows 2-3 shown (the next: offset=3)"
    assert reply.data["matches"] == 4 and [r["id"] for r in reply.data["rows"]] == [2, 3]
    assert db.call("find", table="products", offset=3).text.startswith("4 matches; row 4 shown")
    assert db.call("find", table="products", offset=9).text == "4 matches; none past offset 9"
    assert db.call("find", table="products", where={"name": "x"}).text == "0 matches"
    one = db.call("find", table="products", where={"id": 3}).text
    assert one.startswith("1 match\n") and "mocha" in one


def test_a_world_finds_its_own_rows_and_a_past_finds_the_rows_then(db):
    db.fork("w")
    moment = datetime.fromtimestamp(time.time(), UTC).isoformat()
    time.sleep(0.05)
    db.sql(
        "update products set category = 'tea' where id = 3; delete from products where id = 1; "
        "insert into products(name, category, price) values ('oolong', 'tea', 7)",
        branch="w",
    )
    assert ids(db.find("products", {"category": "tea"}, branch="w")) == [2, 3, 5]
    assert ids(db.find("products", {"category": "tea"})) == [1, 2]  # (main as it was)
    assert ids(db.find("products", {"category": "tea"}, branch=f"w@{moment}")) == [1, 2]
    db.sql("delete from products where id = 2")
    assert ids(db.find("products", {"category": "tea"}, branch=f"main@{moment}")) == [1, 2]


@pytest.mark.parametrize(
    "args, message",
    [
        ({"where": {"colour": "red"}}, "table products has no field 'colour' to find by"),
        ({"where": {"price": "cheap"}}, "price holds numbers \\(REAL\\): give a number"),
        ({"where": {"name": ["a", "b"]}}, "takes one value .* not a list; to match one of"),
        ({"where": {"name": {"a": 1}}}, "not an object"),
        (
            {"limit": 1001},
            "from 1 to 1000, not 1001: find gives at most 1000 rows a call; read "
            "further with the sql tool",
        ),
        ({"offset": 100_001}, "find pages to offset 100000; read further with the sql tool"),
        ({"limit": 0}, "'limit' must be an integer from 1 to 1000, not 0"),
        ({"where": "tea"}, "'where' must be a JSON object"),
    ],
)
def test_bad_input_is_refused_saying_how_to_fix_it(db, args, message):
    with pytest.raises(ChronosError, match=message):
        db.call("find", table="products", **args)


def test_an_unknown_table_or_branch_is_refused(db):
    with pytest.raises(ChronosError, match="no table"):
        db.find("nothing")
    with pytest.raises(ChronosError, match="no branch"):
        db.find("products", branch="nowhere")
