"""How a row's values are written as JSON, both ways: the values JSON can't hold, read back
from the spelling ``render.json_value`` writes (``put``'s record, a merge's ``rows``).

A BLOB is ``{"$blob": "<hex>"}``; the infinities are ``"Infinity"`` and ``"-Infinity"``, read as
the numbers in a column that isn't TEXT (a TEXT column holds them as text, as SQLite would);
other objects and arrays are stored as their JSON text.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import BAD_ARGUMENT, ChronosError
from ..render import blob_hex
from .catalog import Column, TableInfo

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
