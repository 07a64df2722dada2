"""The one registry of operations that MCP, HTTP, the shell and the CLI all dispatch through.

An operation is defined once: its name, its JSON Schema (``schemas/<name>.json``, the MCP tool's
inputSchema verbatim), a handler taking validated arguments and a caller, its annotations, and
its text rendering. Nothing else validates arguments, checks rights or formats results.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import jsonschema

from . import rights
from .errors import BAD_ARGUMENT, TOO_BIG, ChronosError

_HERE = Path(__file__).resolve().parent
SCHEMA_DIRS = (_HERE.parent / "schemas", _HERE / "schemas")


@dataclass
class Caller:
    """Who acts: the database's own user (mode ``owner``), or an agent in safe mode (``safe``),
    which writes only on the worlds it forked (their ids, kept as long as the process)."""

    name: str = "owner"
    mode: str = "owner"
    own_worlds: set[str] = field(default_factory=set)
    max_rows: int | None = None  # rows a result may hold (MCP: 1000); None: all
    run: str | None = None  # the caller's run id (agents, later), kept with what it writes

    def own_world_names(self, db: Any) -> list[str]:
        return [w.name for w in db.worlds() if w.wid in self.own_worlds]


@dataclass
class Reply:
    """What an operation returns: the text every front end shows, and the same as data."""

    text: str
    data: Any = None
    table: tuple[list[str], list] | None = None  # (columns, rows) when the text is a table


Handler = Callable[[Any, dict[str, Any], Caller], Reply]


@dataclass
class Operation:
    name: str
    title: str
    description: str
    handler: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    mcp: bool = True  # a tool over MCP (settings are the CLI's only)

    @cached_property
    def schema(self) -> dict:
        for folder in SCHEMA_DIRS:
            path = folder / f"{self.name}.json"
            if path.is_file():
                return json.loads(path.read_text())
        raise FileNotFoundError(f"schema for operation {self.name} not found")

    @cached_property
    def validator(self) -> jsonschema.protocols.Validator:
        cls = jsonschema.validators.validator_for(self.schema)
        cls.check_schema(self.schema)
        return cls(self.schema)

    @property
    def properties(self) -> dict[str, dict]:
        return self.schema.get("properties", {})

    @property
    def required(self) -> list[str]:
        return list(self.schema.get("required", []))

    @property
    def annotations(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": False,
        }

    def validate(self, args: Any) -> dict[str, Any]:
        """Check arguments against the schema; fill defaults. Errors say how to fix the call."""
        if not isinstance(args, dict):
            raise ChronosError(f"{self.name} takes a JSON object of arguments")
        errors = list(self.validator.iter_errors(args))
        if errors:
            raise ChronosError(self._explain(min(errors, key=_error_order)), BAD_ARGUMENT)
        for key, value in args.items():  # Python's $ matches before a final newline: check here
            spec = self.properties.get(key, {})
            name = value.split("@", 1)[0] if isinstance(value, str) else ""  # name@when: a time
            if _no_spaces(spec) and any(c.isspace() for c in name):
                raise ChronosError(f"'{key}' must be {describe(spec)}, not {_show(value)}")
        out = dict(args)
        for key, spec in self.properties.items():
            if key not in out and "default" in spec:
                out[key] = spec["default"]
        return out

    def _explain(self, error: jsonschema.ValidationError) -> str:
        if error.validator == "required":
            missing = next(p for p in error.validator_value if p not in error.instance)
            return f"'{missing}' is required: {describe(self.properties[missing])}"
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(self.properties))
            takes = ", ".join(self.properties) or "no parameters"
            return f"unknown parameter '{extra[0]}': {self.name} takes {takes}"
        path = [p for p in error.absolute_path]
        if path:
            top = str(path[0])
            spec = self.properties.get(top, {})
            where = "".join(f"[{p!r}]" for p in path[1:])
            hint = ""
            pattern = spec.get("pattern", "")
            if top == "branch" and isinstance(error.instance, str) and "@" not in pattern:
                if "@" in error.instance:
                    return (
                        f"'{error.instance}' is a branch as it was at a moment (name@when), "
                        f"which can only be read: give the branch's name to {self.name} on it"
                    )
            if spec.get("type") == "string" and isinstance(error.instance, int | float):
                hint = f' (write it as a string: "{error.instance}")'
            return f"'{top}'{where} must be {describe(spec)}, not {_show(error.instance)}{hint}"
        return error.message


def _no_spaces(spec: dict) -> bool:
    pattern = spec.get("pattern", "")
    return pattern.startswith("^\\S") or pattern.startswith("^[^\\s@]")


def _error_order(error: jsonschema.ValidationError) -> tuple:
    # Report a missing or unknown parameter before a bad value: it is usually the real mistake.
    rank = {"required": 0, "additionalProperties": 1}.get(error.validator, 2)
    return (rank, list(error.absolute_path))


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def describe(spec: dict) -> str:
    """A parameter's rule in words, from its schema."""
    kind = spec.get("type")
    if kind == "string":
        pattern = spec.get("pattern", "")
        if _no_spaces(spec):
            text = "a non-empty string without spaces"
            return text + (" (name or name@when)" if "@" in pattern else "")
        if pattern.startswith("^[A-Za-z0-9]"):
            return "a name of letters, digits, '_', '-', '.' and ':'"
        if "enum" in spec:
            return " or ".join(repr(v) for v in spec["enum"])
        return "a non-empty string" if spec.get("minLength") else "a string"
    if kind == "boolean":
        return "true or false"
    if kind == "integer":
        low, high = spec.get("minimum"), spec.get("maximum")
        if low is not None and high is not None:
            return f"an integer from {low} to {high}"
        return "an integer" + (f" of at least {low}" if low is not None else "")
    if kind == "object":
        return "a JSON object"
    if kind == "array":
        items = spec.get("items", {})
        return "an array" + (f" of {describe(items)}s" if items.get("type") == "string" else "")
    return "a valid value"


class Registry:
    def __init__(self) -> None:
        self._ops: dict[str, Operation] = {}

    def add(self, op: Operation) -> Operation:
        self._ops[op.name] = op
        return op

    def __iter__(self):
        return iter(self._ops.values())

    def __contains__(self, name: str) -> bool:
        return name in self._ops

    def get(self, name: str) -> Operation:
        try:
            return self._ops[name]
        except KeyError:
            raise ChronosError(
                f"unknown operation '{name}'; operations: {', '.join(self._ops)}"
            ) from None

    def listed(self, caller: Caller) -> list[Operation]:
        """The operations a caller may use (what MCP's tools/list shows)."""
        return [op for op in self if rights.listed(op, caller)]

    def call(self, db: Any, name: str, args: Any, caller: Caller | None = None) -> Reply:
        op = self.get(name)
        caller = caller or Caller()
        valid = op.validate(args if args is not None else {})
        rights.check(db, op, args or {}, caller)  # as given: no branch is not branch="main"
        before = (db.caller_name, db.caller_run)  # who acts, for the events it records
        db.caller_name, db.caller_run = caller.name, caller.run
        try:
            return op.handler(db, valid, caller)
        except OverflowError:  # a number SQLite can't hold, found as it was bound
            raise ChronosError(TOO_BIG) from None
        finally:
            db.caller_name, db.caller_run = before


REGISTRY = Registry()


def operation(
    name: str, title: str, description: str, **hints: bool
) -> Callable[[Handler], Handler]:
    """Register a handler as an operation (its schema is ``schemas/<name>.json``)."""

    def wrap(handler: Handler) -> Handler:
        REGISTRY.add(Operation(name, title, description, handler, **hints))
        return handler

    return wrap
