"""describe: what an agent needs to know first about a branch's tables.

Per table: its row count, its fields (type, key and rules, an example or the allowed values) and a
sample row. Values are read from the first rows only, so a large table costs no more than a small
one (apart from its count).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .. import render
from ..sqltext import at_most, quote_ident
from .db import Database, Session
from .fetch import one_row
from .schema import virtual as ftsinfo
from .schema.catalog import TableInfo

SAMPLE_ROWS = 1000  # rows read for examples and the values a column holds
FEW = 5  # at most this many distinct values (in a larger sample) read as "one of"
WIDTH = 40  # longest value shown
LONG = 200  # longest value read for the sample row and the examples


def describe(db: Database, branch: str, table: str | None) -> tuple[str, dict]:
    """The branch's tables (each in full), then its views and virtual tables (their fields,
    rows and a sample: what reading them gives); or the one named ``table``."""
    session = db.session(branch)
    try:
        tables = db.tables_for(session.world)
        others = _others(db, session)
        if table is not None and table.lower() in others:
            name, kind = others[table.lower()]
            described, also = [], [_relation(session, name, kind)]
        else:
            if table is not None:
                _n, t = db.table(table, session.world)
                names = [t.name]
            else:
                names = sorted(tables)
            indexes = db.schema_for(session.world, session.conn).indexes_on
            described = [_table(session, tables[name][1], indexes(name)) for name in names]
            also = [_relation(session, n, k) for n, k in others.values()] if table is None else []
    finally:
        db.end_call(session)
    if not described and not also:
        text = f"no tables on {session.branch} yet: create one with the sql tool (CREATE TABLE)"
        return text, {"branch": session.branch, "tables": []}
    text = "\n\n".join([*(_text(d) for d in described), *(_text(d) for d in also)])
    data: dict[str, Any] = {"branch": session.branch, "tables": described}
    if also:
        data["views_and_virtual_tables"] = also
    return text, data


def _others(db: Database, session: Session) -> dict[str, tuple[str, str]]:
    """The branch's views and main's virtual tables (lower name -> (name, kind))."""
    schema = session.schema if session.world is not None else db.schema_for(None)
    out = {name.lower(): (name, "view") for name, _sql in (schema.views if schema else ())}
    tables = {name.lower() for name in db.tables_for(session.world)}
    for name, module in ftsinfo.virtual_tables(db.main.conn).items():
        if name.lower() not in tables:  # (an FTS5 table with its own content is one of those)
            out[name.lower()] = (name, f"virtual table, {module}" if module else "virtual table")
    return out


def _relation(session: Session, name: str, kind: str) -> dict[str, Any]:
    """A view or a virtual table as reading it gives it: its fields, rows and a sample."""
    conn, q = session.conn, quote_ident(name)
    columns = [r[1] for r in conn.execute(f"pragma table_xinfo({q})") if not r[6]]
    types = {r[1]: r[2] for r in conn.execute(f"pragma table_xinfo({q})")}
    count = one_row(conn.execute(f"select count(*) from {q}"))[0]
    cols = ", ".join(at_most(quote_ident(c), LONG) for c in columns)
    sample = [tuple(map(_marked, row)) for row in conn.execute(f"select {cols} from {q} limit 5")]
    fields = []
    for i, c in enumerate(columns):
        field: dict[str, Any] = {"name": c, "type": types.get(c) or "any", "rules": ""}
        values = [row[i] for row in sample if row[i] is not None]
        if values:
            field["example"] = render.json_value(values[0])
        fields.append(field)
    first = dict(zip(columns, sample[0])) if sample else None
    return {
        "name": name,
        "kind": kind,
        "rows": count,
        "fields": fields,
        "sample": render.json_row(first) if first else None,
    }


def _table(session: Session, t: TableInfo, indexes: list[str]) -> dict[str, Any]:
    conn, q = session.conn, quote_ident(t.name)
    count = one_row(conn.execute(f"select count(*) from {q}"))[0]
    cols = ", ".join(at_most(quote_ident(c), LONG) for c in t.column_names)
    sample = [
        tuple(map(_marked, row))
        for row in conn.execute(f"select {cols} from {q} limit {SAMPLE_ROWS}")
    ]
    allowed = _check_in_lists(t.sql)
    refs = {
        row[3]: f"references {row[2]}({row[4]})" if row[4] else f"references {row[2]}"
        for row in conn.execute("select * from pragma_foreign_key_list(?)", (t.stored,))
    }
    fields = []
    for i, c in enumerate(t.columns):
        values = [row[i] for row in sample if row[i] is not None]
        rules = ", ".join(r for r in (_rules(t, c), refs.get(c.name, "")) if r)
        field: dict[str, Any] = {"name": c.name, "type": c.decltype or "any", "rules": rules}
        distinct = list(dict.fromkeys(values))
        if c.name.lower() in allowed:
            field["allowed"] = allowed[c.name.lower()]
        elif values and len(distinct) <= FEW and len(values) > 2 * len(distinct):
            field["values"] = [render.json_value(v) for v in distinct]
        elif values:
            field["example"] = render.json_value(values[0])
        fields.append(field)
    first = dict(zip(t.column_names, sample[0])) if sample else None
    described: dict[str, Any] = {
        "name": t.name,
        "rows": count,
        "fields": fields,
        "sample": render.json_row(first) if first else None,
    }
    if indexes:  # (the app's own: CREATE INDEX as the branch has it)
        described["indexes"] = indexes
    return described


def _marked(value: Any) -> Any:
    """A long value's beginning, marked as cut (the sample shows what values look like)."""
    if isinstance(value, str) and len(value) > LONG:
        return value[:LONG] + "…"
    if isinstance(value, bytes) and len(value) > LONG:
        return "\\x" + value[:LONG].hex() + "…"
    return value


def _rules(t: TableInfo, c) -> str:
    rules = []
    if c.name in t.pk:
        rules.append("primary key" if len(t.pk) == 1 else "part of the primary key")
    if any(u == (c.name,) for u in t.uniques):
        rules.append("unique")
    if c.notnull and c.name not in t.pk:
        rules.append("not null")
    if c.default is not None:
        rules.append(f"default {c.default}")
    if c.generated:
        rules.append(f"generated as ({c.expression})" if c.expression else "generated")
    return ", ".join(rules)


_IN_LIST = re.compile(r"check\s*\(\s*[\"`\[]?(\w+)[\"`\]]?\s+in\s*\(([^()]*)\)\s*\)", re.IGNORECASE)


def _check_in_lists(create_sql: str) -> dict[str, list]:
    """Allowed values from ``CHECK (col IN (...))`` constraints in the table's definition."""
    out: dict[str, list] = {}
    for col, items in _IN_LIST.findall(create_sql or ""):
        values = []
        for item in items.split(","):
            item = item.strip()
            if item.startswith("'") and item.endswith("'"):
                values.append(item[1:-1].replace("''", "'"))
            else:
                try:
                    values.append(int(item))
                except ValueError:
                    values.append(item)
        out[col.lower()] = values
    return out


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


def _text(d: dict) -> str:
    rows = []
    for f in d["fields"]:
        if "allowed" in f:
            values = "one of " + ", ".join(_show(v) for v in f["allowed"])
        elif "values" in f:
            values = "values seen: " + ", ".join(_show(v) for v in f["values"])
        elif "example" in f:
            values = "e.g. " + _show(f["example"])
        else:
            values = ""
        rows.append([f["name"], f["type"], f["rules"], values])
    noun = "row" if d["rows"] == 1 else "rows"
    table = render.table(["field", "type", "rules", "example or allowed values"], rows)
    table = table.rsplit("\n", 1)[0]  # the field count says nothing here
    sample = render.row_json(d["sample"]) if d["sample"] else "(no rows)"
    kind = f" ({d['kind']})" if "kind" in d else ""
    indexes = "".join(f"\nindex: {render.terminal(sql)}" for sql in d.get("indexes", ()))
    return f"{d['name']}{kind}: {d['rows']} {noun}\n{table}\nsample row: {sample}{indexes}"
