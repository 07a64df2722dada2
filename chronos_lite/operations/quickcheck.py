"""A quick yes to a call's arguments, before jsonschema: every call is checked against its
operation's schema, and jsonschema takes ~30 µs for it, as long as a warm get. The schemas are
flat (a parameter: a type, a pattern, a length, bounds, an enum), so a plain check answers
"surely valid" for the usual call; anything else (a wrong value, a keyword it doesn't know) goes
to jsonschema, which decides and explains. It never accepts what jsonschema would refuse."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,  # (not a bool: jsonschema's too)
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}
_KNOWN = {"type", "description", "default", "minLength", "pattern", "minimum", "maximum"}
_KNOWN |= {"enum", "items", "minItems", "maxItems", "maxLength"}
_KNOWN |= {"x-past-maximum"}  # (what to do instead past a maximum: the registry's message)
_TOP = {"$schema", "title", "type", "properties", "additionalProperties", "required"}
_TOP |= {"x-cli-positional"}


def compile_schema(schema: dict) -> Callable[[Any], bool] | None:
    """A check of a whole argument object that is True only where ``schema`` surely accepts
    it; None when the schema uses more than this knows (jsonschema alone then)."""
    if set(schema) - _TOP or schema.get("type") != "object":
        return None
    checks: dict[str, Check] = {}
    for name, spec in schema.get("properties", {}).items():
        check = _value_check(spec)
        if check is None:
            return None
        checks[name] = check
    required = tuple(schema.get("required", ()))
    closed = schema.get("additionalProperties") is False

    def accepts(args: Any) -> bool:
        if type(args) is not dict:
            return False
        for key in required:
            if key not in args:
                return False
        for key, value in args.items():
            check = checks.get(key)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return accepts


_APPLIES = {  # (jsonschema applies each keyword to values of its own type only)
    "string": {"minLength", "maxLength", "pattern"},
    "integer": {"minimum", "maximum"},
    "number": {"minimum", "maximum"},
    "array": {"minItems", "maxItems", "items"},
}


def _for_type(spec: dict, kind: str) -> dict:
    """``spec`` as one of its types sees it: without the keywords only the others take."""
    foreign = set().union(*_APPLIES.values()) - _APPLIES.get(kind, set())
    return {**{k: v for k, v in spec.items() if k not in foreign}, "type": kind}


def _value_check(spec: dict) -> Check | None:
    kind = spec.get("type")
    if isinstance(kind, list):  # (one of the types: a value or null, a string or an integer)
        found = [_value_check(_for_type(spec, k)) for k in kind if k != "null"]
        options = [o for o in found if o is not None]
        if len(options) < len(found):
            return None
        nullable = "null" in kind
        return lambda v: (nullable and v is None) or any(o(v) for o in options)
    if kind == "object" and "properties" in spec:  # (an object of named keys: as a schema)
        # (chronos' own x- keys say how to show it, nothing of what it accepts)
        kept = {k: v for k, v in spec.items() if k != "description" and not k.startswith("x-")}
        return compile_schema(kept)
    if set(spec) - _KNOWN or kind not in _TYPES:
        return None
    parts: list[Check] = [_TYPES[spec["type"]]]
    if "minLength" in spec:
        least = spec["minLength"]
        parts.append(lambda v: len(v) >= least)
    if "maxLength" in spec:
        longest = spec["maxLength"]
        parts.append(lambda v: len(v) <= longest)
    if "pattern" in spec:
        search = re.compile(spec["pattern"]).search  # (jsonschema's own reading: re.search)
        parts.append(lambda v: search(v) is not None)
    if "minimum" in spec:
        low = spec["minimum"]
        parts.append(lambda v: v >= low)
    if "maximum" in spec:
        high = spec["maximum"]
        parts.append(lambda v: v <= high)
    if "enum" in spec:
        allowed = spec["enum"]
        parts.append(lambda v: any(type(v) is type(a) and v == a for a in allowed))
    if "minItems" in spec:
        fewest = spec["minItems"]
        parts.append(lambda v: len(v) >= fewest)
    if "maxItems" in spec:
        most = spec["maxItems"]
        parts.append(lambda v: len(v) <= most)
    if "items" in spec:
        item = _value_check(spec["items"])
        if item is None:
            return None
        parts.append(lambda v: all(item(x) for x in v))
    if len(parts) == 1:
        return parts[0]

    def check(value: Any) -> bool:
        for part in parts:  # (in order: the type first, then what needs it)
            if not part(value):
                return False
        return True

    return check
