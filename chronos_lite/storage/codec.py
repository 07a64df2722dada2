"""How a row is named and its values written as text and JSON, both ways: a row's id (its key),
``table/id`` (a row of a branch, as diff prints it and ``only_keys`` and ``rows`` take it), and
the values JSON can't hold, read back from the spelling ``render.json_value`` writes.

A row's **id** is its key: an ``INTEGER PRIMARY KEY``'s or the hidden rowid's integer
(``7``), a one-column key's value (``red``), a composite key's values in key order joined by
commas (``17,3``). An id is written that way (*plainly*) only where it reads back as the same
values; anything else is a JSON array of the key's values (``["a,b",3]``, ``[""]``,
``["007"]``, ``[{"$blob":"00ff"}]``). Reading: an id that starts with ``[`` is a JSON array;
otherwise the text of each value, which is a number where the column isn't TEXT and the text
is one (an integer: ``7``; in a column of numeric type also a decimal: ``1.5``), else text.

A **table/id** is the table's name, ``/``, the id. A name that holds a ``/`` (or starts with
``"``, has spaces at either end, an unprintable character, or is empty) is written as a JSON
string: ``"a/b"/7``. Reading: a key that starts with ``"`` names its table as a JSON string;
otherwise its table is the text before the first ``/`` that ends a table's name (``a/b/7`` is
table ``a/b``'s row 7 when there is no table ``a``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import BAD_ARGUMENT, NOT_FOUND, ChronosError
from ..render import blob_hex, blob_json
from .schema.catalog import Column, TableInfo

T = TypeVar("T")

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
INFINITIES = {"Infinity": math.inf, "-Infinity": -math.inf}


def affinity(decltype: str) -> str:
    """A column's type affinity from its declared type, by SQLite's rules (section 3.1 of
    https://sqlite.org/datatype3.html): INTEGER, TEXT, BLOB (none declared), REAL or
    NUMERIC."""
    kind = decltype.upper()
    if "INT" in kind:
        return "INTEGER"
    if "CHAR" in kind or "CLOB" in kind or "TEXT" in kind:
        return "TEXT"
    if "BLOB" in kind or not kind:
        return "BLOB"
    if "REAL" in kind or "FLOA" in kind or "DOUB" in kind:
        return "REAL"
    return "NUMERIC"


# --- row ids ------------------------------------------------------------------------------------


def _key_columns(t: TableInfo) -> list[Column | None]:
    """The key's columns (None: the hidden rowid)."""
    if t.key_kind == "rowid":
        return [None]
    by_name = {c.name: c for c in t.columns}
    return [by_name.get(name) for name in t.pk]


def _integer_key(t: TableInfo) -> bool:
    return t.key_kind in ("int", "rowid")


def _plain_value(piece: str, column: Column | None) -> Any:
    """One value of a plain id, as the column holds it: a number where it reads as one."""
    kind = "INTEGER" if column is None else affinity(column.decltype)
    if kind == "TEXT":
        return piece
    if _INTEGER.fullmatch(piece):
        return int(piece)
    if kind != "BLOB" and _DECIMAL.fullmatch(piece):  # (SQLite reads it as a number there too)
        return float(piece)
    return piece


def _how(t: TableInfo) -> str:
    """What the table's key is and how its ids are spelled, for an error."""
    if t.key_kind == "int":
        return f"its key is {t.pk[0]} INTEGER PRIMARY KEY"
    if t.key_kind == "rowid":
        return "it has no primary key: an id is its rowid"
    if t.key_kind == "single":
        return f'its key is {t.pk[0]}: an id is its value, or a JSON array of it ([""]: empty text)'
    plain = ",".join(f"<{c}>" for c in t.pk)
    return (
        f"it has a composite key ({', '.join(t.pk)}), and an id is its {len(t.pk)} values in "
        f"key order joined by commas, {plain}, or a JSON array of them, [{plain}]"
    )


def parse_id(t: TableInfo, text: str) -> list[Any]:
    """The key values a row id names, checked against the table's key."""
    columns = _key_columns(t)
    if text.startswith("["):
        return _json_id(t, text, columns)
    if _integer_key(t):
        if not _INTEGER.fullmatch(text):
            raise ChronosError(
                f"'id' must be an integer for table {t.name} ({_how(t)}), not {_show(text)}",
                BAD_ARGUMENT,
            )
        return [int(text)]
    pieces = [text] if len(columns) == 1 else text.split(",")
    if len(pieces) != len(columns):
        raise ChronosError(
            f"'id' {_show(text)} doesn't name a row of table {t.name}: {_how(t)}", BAD_ARGUMENT
        )
    return [_plain_value(piece, column) for piece, column in zip(pieces, columns)]


def _json_id(t: TableInfo, text: str, columns: list[Column | None]) -> list[Any]:
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, list) or len(values) != len(columns):
        raise ChronosError(
            f"'id' {_show(text)} starts with '[', so it must be a JSON array of the key's "
            f"{len(columns)} value{'s' if len(columns) != 1 else ''} (table {t.name}: {_how(t)})",
            BAD_ARGUMENT,
        )
    out = []
    for value in values:
        hexed = blob_hex(value)
        if hexed is not None:
            value = _blob(hexed, f"'id' {_show(text)}")
        elif isinstance(value, bool) or not isinstance(value, int | float | str | None):
            raise ChronosError(
                f"'id' {_show(text)}: a key's values are numbers, strings, null or "
                f'{{"$blob": "<hex>"}}, not {json.dumps(value)}',
                BAD_ARGUMENT,
            )
        if _integer_key(t) and type(value) is not int:
            raise ChronosError(
                f"'id' must be an integer for table {t.name} ({_how(t)}), not {_show(text)}",
                BAD_ARGUMENT,
            )
        out.append(value)
    return out


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(type(x) is type(y) and x == y for x, y in zip(a, b))


def _plain_text(value: Any) -> str | None:
    """A value's text in a plain id (None: it has none)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    text = str(value)
    if not text or text != text.strip() or not text.isprintable():
        return None  # (an empty value, spaces at an end, a newline: JSON shows them)
    return text


def format_id(t: TableInfo, values: Sequence[Any]) -> str:
    """A row's id: plain where it reads back as these values, else a JSON array of them."""
    plain = _plain_id(values)
    if plain is not None:
        try:
            if _same(parse_id(t, plain), values):
                return plain
        except ChronosError:
            pass
    return json_id(values)


def _plain_id(values: Sequence[Any]) -> str | None:
    """The values joined by commas, if each has a plain text (None: one hasn't)."""
    texts = []
    for value in values:
        text = _plain_text(value)
        if text is None or (len(values) > 1 and "," in text):
            return None
        texts.append(text)
    plain = ",".join(texts)
    return None if plain.startswith("[") else plain


def json_id(values: Sequence[Any]) -> str:
    """An id as a JSON array of the key's values (what reads back on any table)."""
    spelled = [blob_json(v) if isinstance(v, bytes) else v for v in values]
    return json.dumps(spelled, ensure_ascii=False, separators=(",", ":"))


def sort_key(values: Sequence[Any]) -> tuple:
    """Key values in SQLite's order (NULL, numbers, text, blobs), whatever their types."""
    return tuple(
        (0, 0)
        if v is None
        else (1, v)
        if isinstance(v, int | float)
        else (2, v)
        if isinstance(v, str)
        else (3, v)
        for v in values
    )


class Key(tuple):
    """A row's key values, ordered as SQLite orders them (``sort_key``): a table's keys may mix
    integers, text and blobs, which Python's tuples can't compare. Equal to (and hashed as) the
    plain tuple of the same values."""

    __slots__ = ()

    def __lt__(self, other: tuple) -> bool:
        return sort_key(self) < sort_key(other)

    def __le__(self, other: tuple) -> bool:
        return sort_key(self) <= sort_key(other)

    def __gt__(self, other: tuple) -> bool:
        return sort_key(self) > sort_key(other)

    def __ge__(self, other: tuple) -> bool:
        return sort_key(self) >= sort_key(other)


# --- table/id -----------------------------------------------------------------------------------


def table_text(name: str) -> str:
    """A table's name as the first part of a ``table/id``."""
    if not name or "/" in name or name.startswith('"') or name != name.strip():
        return json.dumps(name, ensure_ascii=False)
    return name if name.isprintable() else json.dumps(name, ensure_ascii=False)


def key_text(table: str, ident: str) -> str:
    """A row of a branch as ``table/id`` (``ident``: its id, spelled by ``format_id``)."""
    return f"{table_text(table)}/{ident}"


def row_key(t: TableInfo, values: Sequence[Any]) -> str:
    return key_text(t.name, format_id(t, values))


def split_key(text: str, find: Callable[[str], T | None], what: str) -> tuple[T, str]:
    """The table (``find``: the branch's table of a name, or None) and the id of a
    ``table/id``."""
    if text.startswith('"'):
        try:
            name, end = json.JSONDecoder().raw_decode(text)
        except ValueError:
            name, end = None, 0
        if not isinstance(name, str) or text[end : end + 1] != "/":
            raise ChronosError(
                f"{what} {_show(text)} starts with '\"', so its table must be a JSON string "
                f'followed by /id, e.g. "a/b"/7',
                BAD_ARGUMENT,
            )
        found = find(name)
        if found is None:
            raise ChronosError(f"{what} {_show(text)}: no table {_show(name)}", NOT_FOUND)
        return found, text[end + 1 :]
    at = text.find("/")
    if at < 0:
        raise ChronosError(
            f"{what} {_show(text)} must be spelled table/id, e.g. users/7 (a table whose name "
            f'holds a / as a JSON string: "a/b"/7)',
            BAD_ARGUMENT,
        )
    while at >= 0:
        found = find(text[:at])
        if found is not None:
            return found, text[at + 1 :]
        at = text.find("/", at + 1)
    raise ChronosError(
        f"{what} {_show(text)} names no table: spell it table/id, the table's name, then / and "
        f"the row's id",
        NOT_FOUND,
    )


def find_in(tables: dict[str, tuple[int, TableInfo]]) -> Callable[[str], TableInfo | None]:
    """``split_key``'s ``find`` on a branch's tables: a name as it is, else in any case."""

    def find(name: str) -> TableInfo | None:
        if name in tables:
            return tables[name][1]
        lowered = name.lower()
        return next((t for n, (_, t) in tables.items() if n.lower() == lowered), None)

    return find


# --- values -------------------------------------------------------------------------------------


def _blob(hexed: str, where: str) -> bytes:
    try:
        return bytes.fromhex(hexed)
    except ValueError:
        raise ChronosError(
            f'{where}: {{"$blob": ...}} holds a blob as hex digits, two a byte (e.g. '
            f'{{"$blob": "00ff"}}), not {_show(hexed)}',
            BAD_ARGUMENT,
        ) from None


def db_value(value: Any, column: Column, where: str) -> Any:
    """A JSON value given for a column (``put``'s record, a merge's rows), as SQLite stores
    it: ``{"$blob": "<hex>"}`` a BLOB; "Infinity" and "-Infinity" the numbers, in a column
    that isn't TEXT; other objects and arrays their JSON text; the rest as it is."""
    if isinstance(value, dict | list):
        hexed = blob_hex(value)
        if hexed is not None:
            return _blob(hexed, where)
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and value in INFINITIES and affinity(column.decltype) != "TEXT":
        return INFINITIES[value]
    return value


def db_row(t: TableInfo, row: dict[str, Any], where: str) -> dict[str, Any]:
    """A row given as JSON, each value as ``db_value`` reads it (unknown columns as they are:
    the caller names them)."""
    columns = {c.name: c for c in t.columns}
    return {
        k: db_value(v, columns[k], f"{where}[{_show(k)}]") if k in columns else v
        for k, v in row.items()
    }


def _show(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + '..."'
