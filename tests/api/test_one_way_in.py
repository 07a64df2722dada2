"""One way in: the Python API's methods go through the registry's checks (the schema's
validation, the rights, faults as their errors), and the quick check in front of jsonschema
never lets through what jsonschema would refuse."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import example_settings

import chronos_lite
from chronos_lite import REGISTRY, ChronosError


@pytest.fixture
def db(tmp_path):
    with chronos_lite.init(tmp_path / "shop") as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("insert into users(name) values ('Ada')")
        yield db


def refusal(call) -> str:
    with pytest.raises(ChronosError) as info:
        call()
    return info.value.message


def test_the_api_refuses_what_the_tools_refuse_with_the_same_words(db):
    assert refusal(lambda: db.fork("has space")) == refusal(
        lambda: db.call("fork", name="has space")
    )
    assert refusal(lambda: db.fork("x", meta="notes")) == refusal(
        lambda: db.call("fork", name="x", meta="notes")
    )
    assert refusal(lambda: db.discard("no such")) == refusal(
        lambda: db.call("discard", branch="no such")
    )
    assert not db.database.worlds()  # nothing was forked by the refused calls


WRITES_ON = {
    "api put": lambda db, b: db.put("users", 1, {"name": "x"}, branch=b),
    "api sql": lambda db, b: db.sql("update users set name = 'x'", branch=b),
    "api discard": lambda db, b: db.discard(b),
    "sql": lambda db, b: db.call("sql", sql="delete from users", branch=b),
    "put": lambda db, b: db.call("put", table="users", id="1", record={}, branch=b),
    "delete": lambda db, b: db.call("delete", table="users", id="1", branch=b),
    "discard": lambda db, b: db.call("discard", branch=b),
    "set_meta": lambda db, b: db.call("set_meta", branch=b, meta={}),
}


@pytest.mark.parametrize("then", ["main@-1 second", "main@-1second"])  # (a space: the schema's)
@pytest.mark.parametrize("write", WRITES_ON, ids=list(WRITES_ON))
def test_a_branch_as_it_was_is_refused_in_one_spelling_everywhere(db, write, then):
    with pytest.raises(ChronosError) as info:
        WRITES_ON[write](db, then)
    assert (info.value.code, info.value.message) == (
        "42501",
        f"{then} is a branch as it was at a moment: it can only be read (SELECT); write on the "
        f"branch itself (main)",
    )


def test_the_api_checks_the_file_like_every_front_end(db, tmp_path):
    (tmp_path / "shop" / "chronos.db").rename(tmp_path / "elsewhere.db")
    assert "was deleted while chronos had it open" in refusal(lambda: db.get("users", 1))


ARGUMENT = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.sampled_from(["", " ", "main", "a b", "w@-1 minute", "@x", "x\n", "fail", "ours", "7"]),
    st.text(max_size=5),
    st.lists(st.sampled_from(["", "a", "a b", 1]), max_size=2),
    st.dictionaries(st.sampled_from(["a", "name"]), st.integers(), max_size=1),
    st.dictionaries(  # (an object of named keys, as a merge policy's rules)
        st.sampled_from(["max_rows", "max_age", "tables", "reviewer", "schema", "x"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-2, 2),
            st.sampled_from(["1h", "", "a b"]),
            st.lists(st.sampled_from(["a", "", 1]), max_size=2),
        ),
        max_size=3,
    ),
)


@example_settings(300)
@given(data=st.data())
def test_the_quick_check_never_accepts_what_jsonschema_refuses(data):
    op = data.draw(st.sampled_from([op for op in REGISTRY if op.quick_check is not None]))
    keys = [*op.properties, "unknown"]
    args = {key: data.draw(ARGUMENT) for key in op.required}  # (calls that may pass, mostly)
    args |= data.draw(st.dictionaries(st.sampled_from(keys), ARGUMENT, max_size=3))
    if op.quick_check(args):
        assert not list(jsonschema.validators.validator_for(op.schema)(op.schema).iter_errors(args))


def test_every_schema_gets_the_quick_check():
    assert [op.name for op in REGISTRY if op.quick_check is None] == []
