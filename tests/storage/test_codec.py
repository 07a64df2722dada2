"""Row ids and ``table/id`` (storage/codec.py): what is printed reads back as the same row,
whatever the key's values and the table's name; and the Python API takes any name SQLite does."""

from __future__ import annotations

import math

import apsw
import hypothesis.strategies as st
import pytest
from hypothesis import given
from strategies import example_settings

from chronos_lite import ChronosError
from chronos_lite.sqltext import quote_ident
from chronos_lite.storage.codec import (
    Key,
    find_in,
    format_id,
    key_text,
    parse_id,
    split_key,
    table_text,
)
from chronos_lite.storage.schema.catalog import table_info

# One table per kind of key and column type; the values each column may hold are stored by
# SQLite itself, so a key is typed as SQLite keeps it.
TABLES = {
    "i": "create table i(id integer primary key, v)",
    "r": "create table r(v)",
    "s_text": "create table s_text(k text primary key, v)",
    "s_any": "create table s_any(k primary key, v) without rowid",
    "s_int": "create table s_int(k int primary key, v)",
    "s_real": "create table s_real(k real primary key, v)",
    "s_num": "create table s_num(k numeric primary key, v)",
    "c_mixed": "create table c_mixed(a, b text, c, primary key (a, b, c))",
    "c_int": "create table c_int(a int, b int, primary key (a, b))",
}

texts = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"))
tricky_texts = st.sampled_from(
    ["", " ", "a,b", "[x", "[1]", '"q"', "7", "007", "1.5", "-3", "1e3", "Infinity", "a/b", "\n"]
)
values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 2**53 + 1, -(2**63), 2**63 - 1]),
    st.floats(allow_nan=False),
    texts,
    tricky_texts,
    st.binary(max_size=8),
)


@pytest.fixture(scope="module")
def conn():
    c = apsw.Connection(":memory:")
    for sql in TABLES.values():
        c.execute(sql)
    return c


def stored_key(conn, name: str, key_values: list) -> tuple | None:
    """Insert a row with these key values; the key as SQLite stored it (None: refused)."""
    t = table_info(conn, name)
    cols = ["rowid"] if t.key_kind == "rowid" else [quote_ident(c) for c in t.pk]
    try:
        conn.execute("savepoint s")
        conn.execute(
            f"insert into {quote_ident(name)}({', '.join(cols)}) values "
            f"({', '.join('?' for _ in cols)})",
            key_values,
        )
        rowid = conn.last_insert_rowid()
        got = conn.execute(
            f"select {', '.join(cols)} from {quote_ident(name)} where rowid = ?"
            if t.key_kind != "composite" and not t.without_rowid
            else f"select {', '.join(cols)} from {quote_ident(name)} where "
            + " and ".join(f"{c} is ?" for c in cols),
            [rowid] if t.key_kind != "composite" and not t.without_rowid else key_values,
        ).fetchone()
        return tuple(got) if got else None
    except (apsw.Error, OverflowError, TypeError):
        return None
    finally:
        conn.execute("rollback to s")
        conn.execute("release s")


def same(a, b) -> bool:
    return len(a) == len(b) and all(
        type(x) is type(y) and (x == y or (isinstance(x, float) and math.isnan(x) and y != y))
        for x, y in zip(a, b)
    )


@example_settings(400, fixture=True)
@given(st.sampled_from(sorted(TABLES)), st.data())
def test_every_printed_id_reads_back_as_the_same_key(conn, name, data):
    t = table_info(conn, name)
    width = len(t.pk) if t.pk else 1
    key = stored_key(conn, name, data.draw(st.lists(values, min_size=width, max_size=width)))
    if key is None or any(v is None for v in key):
        return  # (SQLite refused it, or a NULL in a key: not a row's id)
    spelled = format_id(t, key)
    assert same(parse_id(t, spelled), key), spelled


@pytest.mark.parametrize(
    ("name", "key", "spelled"),
    [
        ("i", (7,), "7"),
        ("i", (-(2**63),), "-9223372036854775808"),
        ("r", (3,), "3"),
        ("s_text", ("red",), "red"),
        ("s_text", ("",), '[""]'),
        ("s_text", ("7",), "7"),  # (a TEXT key: 7 is text there)
        ("s_text", ("[x",), '["[x"]'),
        ("s_text", (" x",), '[" x"]'),
        ("s_text", ("a\nb",), '["a\\nb"]'),
        ("s_text", ("a,b",), "a,b"),  # (one value: its commas are its own)
        ("s_text", ("a/b",), "a/b"),
        ("s_any", (7,), "7"),
        ("s_any", ("7",), '["7"]'),  # (no type: 7 would read as the integer)
        ("s_any", ("12e4",), "12e4"),  # (no type: only integers read as numbers)
        ("s_any", (b"\x00\xff",), '[{"$blob":"00ff"}]'),
        ("s_any", (1.5,), "[1.5]"),
        ("s_real", (1.5,), "1.5"),
        ("s_real", (math.inf,), "[Infinity]"),
        ("s_int", (7,), "7"),
        ("s_num", ("abc",), "abc"),
        ("c_int", (17, 3), "17,3"),
        ("c_mixed", (17, "3", "x"), "17,3,x"),  # (b is TEXT: 3 reads as text there)
        ("c_mixed", ("17", "3", "x"), '["17","3","x"]'),
        ("c_mixed", ("a,b", "c", 3), '["a,b","c",3]'),
        ("c_mixed", (1, "", 2), '[1,"",2]'),
    ],
)
def test_the_spelling_of_an_id(conn, name, key, spelled):
    t = table_info(conn, name)
    assert format_id(t, key) == spelled
    assert same(parse_id(t, spelled), key)


def test_the_common_spellings_keep_working(conn):
    assert parse_id(table_info(conn, "c_int"), "17,3") == [17, 3]
    assert parse_id(table_info(conn, "c_int"), "[17,3]") == [17, 3]
    assert parse_id(table_info(conn, "i"), "7") == [7]
    assert parse_id(table_info(conn, "s_text"), "") == [""]  # (the empty text, as before)


@pytest.mark.parametrize(
    ("name", "spelled", "words"),
    [
        ("i", "x", "'id' must be an integer for table i (its key is id INTEGER PRIMARY KEY"),
        ("i", " 7", "must be an integer"),
        ("i", '["7"]', "must be an integer"),
        ("r", "1.5", "it has no primary key: an id is its rowid"),
        ("c_int", "17", "it has a composite key (a, b), and an id is its 2 values in key order"),
        ("c_int", "[17,3", "starts with '[', so it must be a JSON array of the key's 2 values"),
        ("c_int", "[[1],2]", "a key's values are numbers, strings, null or"),
        ("s_any", '[{"$blob":"zz"}]', "holds a blob as hex digits, two a byte"),
    ],
)
def test_a_wrong_id_says_how_to_spell_one(conn, name, spelled, words):
    with pytest.raises(ChronosError) as info:
        parse_id(table_info(conn, name), spelled)
    assert words in info.value.message
    assert info.value.code == "22023"


ODD_NAMES = ["a", "a/b", "a/b/c", "my table", '"q"', 'x"/y', " pad ", "select", "ü🙂", "t\nn"]


def test_table_slash_id_reads_back_whatever_the_tables_are_called():
    tables = {name: (i, name) for i, name in enumerate(ODD_NAMES)}

    def find(name: str):
        return name if name in tables else None

    for name in ODD_NAMES:
        for ident in ["7", "b/7", "b", '["x"]', "", "/"]:
            spelled = key_text(name, ident)
            assert split_key(spelled, find, "key") == (name, ident), spelled
    assert table_text("a") == "a" and table_text("a/b") == '"a/b"'
    assert table_text(" pad ") == '" pad "' and table_text('"q"') == '"\\"q\\""'
    # written by hand: the first / after a table's name (a/b/7: table a, id b/7)
    assert split_key("a/b/7", find, "key") == ("a", "b/7")
    assert split_key("my table/7", find, "key") == ("my table", "7")
    only_ab = {"a/b": (0, "a/b")}.get
    assert split_key("a/b/7", lambda n: (only_ab(n) or (None, None))[1], "key") == ("a/b", "7")


@pytest.mark.parametrize(
    ("spelled", "code", "words"),
    [
        ("users", "22023", "must be spelled table/id, e.g. users/7"),
        ('"users/7', "22023", "its table must be a JSON string followed by /id"),
        ('"users"7', "22023", "its table must be a JSON string followed by /id"),
        ('"nope"/7', "P0002", 'no table "nope"'),
        ("nope/7", "P0002", "names no table"),
    ],
)
def test_a_wrong_table_slash_id_says_how_to_spell_one(spelled, code, words):
    find = find_in({"users": (1, "t")})  # type: ignore[dict-item]
    with pytest.raises(ChronosError) as info:
        split_key(spelled, find, "only_keys entry")
    assert words in info.value.message and info.value.code == code


def test_keys_sort_as_sqlite_sorts_them():
    keys = [Key(("b",)), Key((b"\x00",)), Key((2,)), Key((1.5,)), Key((None,)), Key(("a",))]
    assert sorted(keys) == [(None,), (1.5,), (2,), ("a",), ("b",), (b"\x00",)]
    assert Key((1, "x")) == (1, "x") and hash(Key((1, "x"))) == hash((1, "x"))
