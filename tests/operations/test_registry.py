"""The operation registry: schemas as the spec's parameter tables, validation messages, CLI."""

from __future__ import annotations

import json

import jsonschema
import pytest
from helpers import ROOT

from chronos_lite import REGISTRY, ChronosError
from chronos_lite.cliargs import parse_operation_call

SCHEMAS = ROOT / "schemas"

# The spec's parameter tables: name -> (type, required, default); default None = no default.
SPEC = {
    # UNDO AGENT's arguments (the statement's; not a tool of the spec's table)
    "undo_agent": {
        "agent": ("string", True, None),
        "since": ("string", True, None),
        "run": ("string", False, None),
    },
    "config": {"setting": ("string", True, None), "value": ("string", False, None)},
    "history": {"branch": ("string", True, None), "limit": ("integer", False, 30)},
    "undo_merge": {"branch": ("string", True, None), "skip_changed": ("boolean", False, False)},
    "restore": {"branch": ("string", True, None), "at": ("string", True, None)},
    "checkpoint": {"branch": ("string", True, None), "name": ("string", True, None)},
    "rollback": {"branch": ("string", True, None), "checkpoint": ("string", True, None)},
    "describe": {"table": ("string", False, None), "branch": ("string", False, "main")},
    "find": {
        "table": ("string", True, None),
        "where": ("object", False, None),
        "text": ("string", False, None),
        "vector": ("array", False, None),
        "vector_field": ("string", False, None),
        "limit": ("integer", False, 20),
        "offset": ("integer", False, 0),
        "ef": ("integer", False, 0),
        "branch": ("string", False, "main"),
    },
    "sql": {
        "sql": ("string", True, None),
        # the spec's array, or (issue 30) an object for named parameters, as sqlite3 binds
        "params": (["array", "object"], False, None),
        "branch": ("string", False, "main"),
    },
    "get": {
        "table": ("string", True, None),
        "id": ("string", True, None),
        "branch": ("string", False, "main"),
    },
    "put": {
        "table": ("string", True, None),
        "id": ("string", True, None),
        "record": ("object", True, None),
        "branch": ("string", False, "main"),
    },
    "delete": {
        "table": ("string", True, None),
        "id": ("string", True, None),
        "branch": ("string", False, "main"),
    },
    "fork": {
        "name": ("string", True, None),
        "from": ("string", False, "main"),
        "meta": ("object", False, None),
    },
    "set_meta": {"branch": ("string", True, None), "meta": ("object", True, None)},
    "branches": {},
    "discard": {"branch": ("string", True, None), "cascade": ("boolean", False, False)},
    # diff also takes count (the issue names it; the spec's text describes it)
    "diff": {
        "branch": ("string", True, None),
        "to": ("string", False, None),
        "as_sql": ("boolean", False, False),
        "readers": ("boolean", False, False),
        "count": ("boolean", False, False),
        "limit": ("integer", False, 20),
        "offset": ("integer", False, 0),
    },
    "merge": {
        "branch": ("string", True, None),
        "into": ("string", False, None),
        "only_tables": ("array", False, None),
        "only_keys": ("array", False, None),
        "by_columns": ("boolean", False, False),
        "rows": ("object", False, None),
        "resolve": ("string", False, "fail"),
        "confirm": ("boolean", False, False),
        "version": ("integer", False, None),
        "target": ("integer", False, None),
        "confirm_deletes": ("integer", False, None),
    },
    "merge_preview": {
        "branch": ("string", True, None),
        "into": ("string", False, None),
        "only_tables": ("array", False, None),
        "only_keys": ("array", False, None),
        "by_columns": ("boolean", False, False),
        "resolve": ("string", False, "fail"),
        "rows": ("object", False, None),
        "limit": ("integer", False, 20),
        "offset": ("integer", False, 0),
        "version": ("integer", False, None),
    },
    "rebase": {
        "branch": ("string", True, None),
        "by_columns": ("boolean", False, False),
        "rows": ("object", False, None),
        "resolve": ("string", False, "fail"),
        "version": ("integer", False, None),
    },
}


@pytest.mark.parametrize("name", sorted(SPEC))
def test_schema_matches_the_spec_table(name):
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert not {"oneOf", "anyOf", "allOf", "not"} & set(schema)
    assert schema["additionalProperties"] is False
    props = schema.get("properties", {})
    assert set(props) == set(SPEC[name])
    for prop, (kind, required, default) in SPEC[name].items():
        assert props[prop]["type"] == kind
        assert (prop in schema.get("required", [])) == required
        assert props[prop].get("default") == default
        assert props[prop]["description"]


def test_every_schema_file_is_an_operation():
    assert {p.stem for p in SCHEMAS.glob("*.json")} == {op.name for op in REGISTRY}


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("get", {"table": "users"}, "'id' is required: a string"),
        ("get", {"table": "users", "id": 5}, "'id' must be a string, not 5"),
        ("get", {"table": "", "id": "1"}, "'table' must be a non-empty string, not \"\""),
        ("get", {"table": "a b", "id": 1}, "'id' must be a string, not 1"),
        (
            "get",
            {"table": "t", "id": "1", "x": 1},
            "unknown parameter 'x': get takes table, id, branch",
        ),
        ("discard", {"branch": "b", "cascade": "yes"}, "'cascade' must be true or false"),
        ("put", {"table": "t", "id": "1", "record": []}, "'record' must be a JSON object"),
        ("sql", {"sql": "select 1", "params": 5}, "'params' must be an array or a JSON object"),
        ("branches", {"x": 1}, "unknown parameter 'x': branches takes no parameters"),
        ("fork", {}, "'name' is required"),
    ],
)
def test_validation_says_how_to_fix_the_call(shop, name, args, message):
    with pytest.raises(ChronosError) as err:
        REGISTRY.call(shop.database, name, args)
    assert err.value.code == "22023"
    assert message in err.value.message


def test_annotations_and_descriptions():
    for op in REGISTRY:
        assert set(op.annotations) == {
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        }
        assert op.title and op.description
    assert REGISTRY.get("get").annotations["readOnlyHint"] is True
    assert REGISTRY.get("discard").annotations["destructiveHint"] is True


def test_cli_builds_arguments_from_the_schema():
    args, shown = parse_operation_call(REGISTRY.get("discard"), ["--cascade", "task-1", "--json"])
    assert args == {"branch": "task-1", "cascade": True} and shown == "json"
    args, _ = parse_operation_call(REGISTRY.get("sql"), ["-b", "w", "select $1", "--params", "[1]"])
    assert args == {"sql": "select $1", "branch": "w", "params": [1]}
    args, _ = parse_operation_call(REGISTRY.get("discard"), ["x", "--no-cascade"])
    assert args == {"branch": "x", "cascade": False}
    with pytest.raises(ChronosError, match="written as JSON"):
        parse_operation_call(REGISTRY.get("fork"), ["x", "--meta", "{oops"])


def test_an_array_parameter_is_described_in_plain_words():
    with pytest.raises(ChronosError) as info:
        REGISTRY.get("merge").validate({"branch": "w", "only_tables": [""]})
    assert info.value.message == "'only_tables'[0] must be a non-empty string, not \"\""
    with pytest.raises(ChronosError) as info:
        REGISTRY.get("merge").validate({"branch": "w", "only_tables": "users"})
    assert info.value.message.startswith("'only_tables' must be an array of non-empty strings, not")
    with pytest.raises(ChronosError) as info:
        REGISTRY.get("merge").validate({"branch": "w", "into": "a b"})
    assert info.value.message == "'into' must be a non-empty string without spaces, not \"a b\""
