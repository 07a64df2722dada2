"""The one registry of operations that MCP, HTTP, the shell and the CLI all dispatch through.

An operation is defined once: its name, its JSON Schema (``schemas/<name>.json``, the MCP tool's
inputSchema verbatim), a handler taking validated arguments and a caller, its annotations, and
its text rendering. Nothing else validates arguments, checks rights or formats results.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from ..errors import BAD_ARGUMENT, TOO_BIG, ChronosError
from ..storage import events, faults
from ..storage.branchref import MAIN, BranchRef
from ..storage.db import Database
from . import agentcall, quickcheck, rights
from .args import BRANCH_KEYS, Args
from .caller import Caller
from .calllimits import limits_of

if TYPE_CHECKING:  # (imported when an argument first needs it: a slow import to start with)
    import jsonschema  # type: ignore[import-untyped]  # (no types-jsonschema)

INTERNAL = "XX000"  # a bug in chronos

_PACKAGE = Path(__file__).resolve().parents[1]  # chronos_lite/
SCHEMA_DIRS = (_PACKAGE.parent / "schemas", _PACKAGE / "schemas")  # a checkout, a wheel


class Reply:
    """What an operation returns: the text every front end shows, the same as data (``table``:
    (columns, rows) when the text is a table), and the engine's object (``value``: what the
    Python API's method returns). A reply made with ``render`` makes its text and data when
    first asked: the registry asks within the call, unless the caller wants the value alone."""

    __slots__ = ("_text", "_data", "_table", "_render", "value")

    def __init__(
        self,
        text: str = "",
        data: Any = None,
        table: tuple[list[str], list] | None = None,
        *,
        value: Any = None,
        render: Callable[[], Reply] | None = None,
    ) -> None:
        self._text, self._data, self._table = text, data, table
        self._render = render
        self.value = value

    def rendered(self) -> Reply:
        """The reply with its text and data made (a render runs once)."""
        if self._render is not None:
            made, self._render = self._render(), None
            self._text, self._data, self._table = made.text, made.data, made.table
        return self

    @property
    def text(self) -> str:
        return self.rendered()._text

    @property
    def data(self) -> Any:
        return self.rendered()._data

    @property
    def table(self) -> tuple[list[str], list] | None:
        return self.rendered()._table

    def __repr__(self) -> str:
        return f"Reply({self.text!r}, {self.data!r})"


Handler = Callable[[Database, Args, Caller], Reply]


def branch_of(args: dict[str, Any]) -> str:
    """The branch a call names; main when it names none."""
    return args.get("branch") or "main"


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
        """``schemas/<name>.json``, with each ``{"$ref": "shared/<file>.json", ...}`` in it
        written in place (the shared file's keys, then the referring object's own: its
        description), so that validation, the CLI and MCP all see one plain schema."""
        for folder in SCHEMA_DIRS:
            path = folder / f"{self.name}.json"
            if path.is_file():
                return self._inline_refs(json.loads(path.read_text()), folder)
        raise FileNotFoundError(f"schema for operation {self.name} not found")

    @cached_property
    def tool_schema(self) -> dict:
        """The schema MCP publishes as the tool's inputSchema: ``schema`` accepting exactly the
        same arguments, without what an agent pays for in every tools/list and doesn't need:
        ``$schema`` (MCP's default, 2020-12) and ``title`` (the tool's name) at its top,
        chronos' own ``x-`` keys (the CLI's and the error messages'), a ``minLength`` of 1
        beside a ``pattern`` that needs a character anyway, and, under a parameter marked
        ``"x-mcp-brief": true``, the descriptions its own description points elsewhere for."""
        return self._published(self.schema)

    @property
    def tool_annotations(self) -> dict[str, bool]:
        """``annotations`` as MCP publishes them: each hint that differs from MCP's default for
        it (a hint left out means the default: readOnlyHint false, destructiveHint true,
        idempotentHint false, openWorldHint true)."""
        return {k: v for k, v in self.annotations.items() if self.MCP_HINT_DEFAULTS[k] is not v}

    # MCP's default for each hint, which a tools/list entry leaves out
    MCP_HINT_DEFAULTS = {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }

    @staticmethod
    def _inline_refs(schema: Any, folder: Path) -> Any:
        """``schema`` with each object holding a ``$ref`` (a path under ``folder``, the schemas
        folder) replaced by that file's schema, the object's other keys kept over the file's."""
        if isinstance(schema, list):
            return [Operation._inline_refs(item, folder) for item in schema]
        if not isinstance(schema, dict):
            return schema
        out = {k: Operation._inline_refs(v, folder) for k, v in schema.items() if k != "$ref"}
        if "$ref" in schema:
            shared = json.loads((folder / schema["$ref"]).read_text())
            out = {**Operation._inline_refs(shared, folder), **out}
        return out

    @staticmethod
    def _published(schema: dict, top: bool = True, brief: bool = False) -> dict:
        """``tool_schema``'s work on one schema (``brief``: without its description)."""
        import re  # (only tools/list needs it)

        dropped = {"$schema", "title"} if top else set()
        if brief:
            dropped.add("description")
        pattern = schema.get("pattern")
        if schema.get("minLength") == 1 and pattern is not None and re.search(pattern, "") is None:
            dropped.add("minLength")  # (the pattern needs a character: the same values pass)
        inner = bool(schema.get("x-mcp-brief"))
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in dropped or key.startswith("x-"):
                continue
            if key == "properties":  # (a map of parameter names: each value a schema)
                value = {n: Operation._published(spec, False, inner) for n, spec in value.items()}
            elif key == "items" and isinstance(value, dict):
                value = Operation._published(value, False, inner)
            out[key] = value
        return out

    @cached_property
    def validator(self) -> jsonschema.protocols.Validator:
        import jsonschema  # (here: most calls pass the quick check, and the CLI starts faster)

        cls = jsonschema.validators.validator_for(self.schema)
        cls.check_schema(self.schema)
        return cls(self.schema)

    @cached_property
    def quick_check(self) -> Callable[[Any], bool] | None:
        """True only for arguments the schema surely accepts (jsonschema decides the rest)."""
        return quickcheck.compile_schema(self.schema)

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

    def validate(self, args: Any) -> Args:
        """Check arguments against the schema; fill defaults. Errors say how to fix the call."""
        if not isinstance(args, dict):
            raise ChronosError(f"{self.name} takes a JSON object of arguments")
        quick = self.quick_check
        errors = [] if quick is not None and quick(args) else list(self.validator.iter_errors(args))
        if errors:
            raise ChronosError(self._explain(min(errors, key=_error_order)), BAD_ARGUMENT)
        out = Args(args)
        for key in self._unspaced.intersection(args):
            # (Python's $ matches before a final newline: a name's spaces are checked here)
            value = args[key]
            ref = BranchRef.parse(value) if isinstance(value, str) else MAIN  # (@when: a time)
            if any(c.isspace() for c in ref.name):
                spec = self.properties[key]
                raise ChronosError(f"'{key}' must be {describe(spec)}, not {_show(value)}")
            if key in BRANCH_KEYS:
                out.refs[key] = ref
        check_characters(args)
        for key, default in self._defaults:
            if key not in out:
                out[key] = default
                out.defaulted.add(key)
        return out

    @cached_property
    def _unspaced(self) -> frozenset[str]:
        """The parameters whose values hold no spaces (names)."""
        return frozenset(key for key, spec in self.properties.items() if _no_spaces(spec))

    @cached_property
    def _defaults(self) -> tuple[tuple[str, Any], ...]:
        specs = self.properties.items()
        return tuple((key, spec["default"]) for key, spec in specs if "default" in spec)

    def _explain(self, error: jsonschema.ValidationError) -> str:
        if error.validator == "required":
            missing = next(p for p in error.validator_value if p not in error.instance)
            return f"'{missing}' is required: {describe(self.properties[missing])}"
        if error.validator == "additionalProperties" and error.absolute_path:
            top = str(error.absolute_path[0])  # (an object parameter's unknown key)
            known = error.schema.get("properties", {})
            extra = sorted(set(error.instance) - set(known))
            return f"unknown key '{extra[0]}' in '{top}': it takes {', '.join(known)}"
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
                ref = BranchRef.parse(error.instance)
                if ref.past:
                    raise ref.read_only()  # (a refusal, as everywhere: not a malformed value)
            if spec.get("type") == "string" and isinstance(error.instance, int | float):
                hint = f' (write it as a string: "{error.instance}")'
            if error.validator == "maximum" and "x-past-maximum" in spec:
                hint = f": {spec['x-past-maximum']}"  # (a cap of the spec's: what to do instead)
            if where and spec.get("type") == "array":  # (an item is wrong: say what an item is)
                spec = spec.get("items", {})
            elif where and spec.get("type") == "object" and "properties" in spec:
                spec = spec["properties"].get(str(path[1]), spec)  # (a key's value is wrong)
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
    if isinstance(kind, list) and "null" in kind and len(kind) == 2:  # (a value, or none)
        other = next(k for k in kind if k != "null")
        return f"{describe({**spec, 'type': other})}, or null"
    if isinstance(kind, list):  # (one of several types)
        said = [describe({**spec, "type": k}) for k in kind if k != "null"]
        return ", ".join(said[:-1]) + f" or {said[-1]}" + (", or null" if "null" in kind else "")
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
        if items.get("type") != "string":
            return "an array"
        one = describe(items).removeprefix("an ").removeprefix("a ")  # (one item's rule)
        return "an array of " + one.replace("string", "strings", 1)
    return "a valid value"


class Registry:
    """The operations, listed in the order ``index`` gives; an operation's module is imported
    the first time the operation is looked up (``get``, ``call``; listing them all imports
    all), so a command that runs one operation doesn't import the others."""

    def __init__(self) -> None:
        self._ops: dict[str, Operation] = {}
        self._modules: dict[str, str] = {}  # name -> the module that registers it, in order

    def add(self, op: Operation) -> Operation:
        self._ops[op.name] = op
        return op

    def index(self, modules: dict[str, str]) -> None:
        """The operations in the order they are listed (tools/list, help: the spec's, describe
        first), each with the module that registers it (imported when it is first needed)."""
        self._modules = dict(modules)

    def names(self) -> list[str]:
        """Every operation's name, in order, without importing their modules."""
        return [*self._modules, *(name for name in self._ops if name not in self._modules)]

    def _load(self, name: str) -> Operation | None:
        if name not in self._ops and name in self._modules:
            importlib.import_module(self._modules[name])  # (its @operation adds it)
            if name not in self._ops:
                raise ValueError(f"{self._modules[name]} registers no operation {name}")
        return self._ops.get(name)

    def __iter__(self):
        ops = [self._load(name) for name in self.names()]
        if set(self._ops) != set(self.names()):  # (a module registered one not indexed)
            raise ValueError(f"index every operation once ({sorted(self._ops)})")
        return iter(ops)

    def __contains__(self, name: str) -> bool:
        return name in self._modules or name in self._ops

    def get(self, name: str) -> Operation:
        op = self._load(name)
        if op is None:
            raise ChronosError(f"unknown operation '{name}'; operations: {', '.join(self.names())}")
        return op

    def reads_only(self, name: str) -> bool:
        """Whether the operation of that name only reads (False for no such operation)."""
        op = self._load(name)
        return op is not None and op.read_only

    def listed(self, caller: Caller) -> list[Operation]:
        """The operations a caller may use (what MCP's tools/list shows)."""
        return [op for op in self if rights.listed(op, caller)]

    def call(
        self, db: Database, name: str, args: Any, caller: Caller | None = None, render: bool = True
    ) -> Reply:
        """Run an operation for a caller: its handler on the arguments validated, once the
        caller's rights allow the call, bounded in time, on the file that is there; faults as
        their own errors; never a transaction left open. A named agent's call is counted and
        audited (``agentcall``). The reply is rendered within the call and the caller's
        budget; ``render=False``: the value alone is wanted (the Python API), its text and
        data are made only if asked for later."""
        op = self.get(name)
        caller = caller or Caller()
        valid = op.validate(args if args is not None else {})
        if caller.mode == "agent":
            reply = agentcall.run(
                db, op, args, valid, caller, lambda: self._run(db, op, valid, caller, render)
            )
        else:
            reply = self._run(db, op, valid, caller, render)
        return _within(reply, caller) if render else reply

    def _run(
        self,
        db: Database,
        op: Operation,
        valid: Args,
        caller: Caller,
        render: bool,
    ) -> Reply:
        acting = events.acting(caller.name, caller.run)  # (whom the events it records name)
        try:
            return self._run_as(db, op, valid, caller, render)
        finally:
            events.done(acting)

    def _run_as(
        self,
        db: Database,
        op: Operation,
        valid: Args,
        caller: Caller,
        render: bool,
    ) -> Reply:
        left_open = False
        bounded = limits_of(caller)
        began = db.bounds.begin(bounded)
        if not began:  # (within a call: an MCP request, or a statement of a sql call)
            db.bounds.narrow(bounded)
        try:
            db.check_file()
            # (what the caller gave is told apart: no branch isn't branch="main")
            rights.check(db, op, valid, caller, self.reads_only)
            result = op.handler(db, valid, caller)
            if render:  # (within the call: a render may read, under its bounds and faults)
                result.rendered()
            if not op.read_only:
                db.check_file()  # a write acknowledged is in the file that is there
        except OverflowError:  # a number SQLite can't hold, found as it was bound
            raise ChronosError(TOO_BIG) from None
        except apsw.Error as exc:
            fault = faults.describe(exc, db)
            if fault is None:
                raise
            raise fault from None
        finally:
            db.bounds.end(began)
            left_open = db.end_transactions()
        if left_open:  # a bug: what it did wasn't committed, so it must not be acknowledged
            raise ChronosError(
                f"internal error (a bug in chronos): {op.name} left a transaction open; it "
                f"was rolled back, nothing was changed",
                INTERNAL,
            )
        return result


REGISTRY = Registry()


def _within(reply: Reply, caller: Caller) -> Reply:
    """A reply longer than the caller's budget (a row of huge values from get, say) is cut:
    sql reads within the budget itself, this only catches what other operations return."""
    if caller.max_chars is None or len(reply.text) <= caller.max_chars:
        return reply
    keep = caller.max_chars - 300
    text = reply.text[:keep] + (
        f"…\n(cut: the reply is {len(reply.text):,} characters, more than a reply holds "
        f"({caller.max_chars:,}); ask for less: read long values in parts with the sql tool, "
        f"e.g. select substr(column, 1, 5000))"
    )
    return Reply(text, {"cut": True, "characters": len(reply.text), "text": text})


# Parameters that carry data: a NUL is a character of a value there (SQLite stores it), but not
# of SQL text or of a name.
DATA_PARAMETERS = {"record", "params", "meta", "rows"}


def check_characters(args: dict[str, Any]) -> None:
    """Text SQLite can't hold is refused before anything runs: a lone surrogate anywhere (from
    a JSON escape like \\ud800; UTF-8 can't carry it), a NUL in SQL text or a name."""
    for key, value in args.items():
        if type(value) is str and value.isascii():  # (most arguments: one test each)
            if "\x00" in value:
                _check_text(value, key, key in DATA_PARAMETERS)
        else:
            _check_value(value, key, key in DATA_PARAMETERS)


def _check_value(value: Any, where: str, data: bool) -> None:
    if isinstance(value, str):
        _check_text(value, where, data)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, f"{where} (a key)", False)
            _check_value(item, f"{where}[{_show(key)}]", data)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]", data)


def _check_text(text: str, where: str, data: bool) -> None:
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError as exc:
            raise ChronosError(
                f"'{where}' holds a lone surrogate ({text[exc.start]!a}) at character "
                f"{exc.start + 1}, which isn't Unicode text (UTF-8 and SQLite can't hold it): "
                f"send the character itself, or both halves of its surrogate pair",
                faults.BAD_CHARACTER,
            ) from None
    at = text.find("\x00")
    if at >= 0 and not data:
        if where == "sql":
            how = (
                "SQL text can't hold one: pass such a value as a parameter ($1 with params) or "
                "write it as char(0)"
            )
        elif where == "id":  # (a key's value may hold one: JSON spells it)
            how = (
                "write the id as a JSON array of the key's values, where \\u0000 is one: "
                '["a\\u0000b"]'
            )
        else:
            how = "names can't hold one: remove it"
        raise ChronosError(
            f"'{where}' holds a NUL character (\\u0000) at character {at + 1}; {how}",
            faults.BAD_CHARACTER,
        )


def operation(
    name: str, title: str, description: str, **hints: bool
) -> Callable[[Handler], Handler]:
    """Register a handler as an operation (its schema is ``schemas/<name>.json``)."""

    def wrap(handler: Handler) -> Handler:
        REGISTRY.add(Operation(name, title, description, handler, **hints))
        return handler

    return wrap
