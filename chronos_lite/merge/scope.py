"""A world's declared scope (its meta's ``may_change``, ``tenant``, ``max_rows``,
``max_deletes``), held to at its merge.

``may_change`` names tables (any column) and ``table.column`` (that column only, in rows that
were there before and stay); ``tenant`` is an SQL condition every row the merge changes meets,
as it was and as it will be. A merge outside its scope waits for a person (an agent under a
merge policy) or is refused (anyone else), saying which row broke which part.
"""

from __future__ import annotations

from typing import Any

import apsw

from .. import sqltext
from ..errors import BAD_ARGUMENT, REFUSED, ChronosError
from ..storage import guard
from ..storage.db import Database
from ..storage.fetch import all_rows
from ..storage.governance import holds as worldholds
from ..storage.schema.catalog import TableInfo
from ..storage.worlds import World
from .changes import Change
from .plan import Plan
from .policy import Counts, deletes_text, rows_text

KEYS = worldholds.SCOPE_KEYS
READ_ONLY = guard.Access(write=False, settings=False, branches=False)  # (rows only)
TENANT_TIMEOUT_MS = 1000
_CHUNK = 200


def declared(meta: dict, shown: bool = False) -> dict[str, Any]:
    """The scope parts a world's meta declares (``shown``: with its intent and run, which
    reviews show and nothing holds to)."""
    keys = (*KEYS, "intent", "run") if shown else KEYS
    return {k: meta[k] for k in keys if meta.get(k) is not None}


def check_meta(meta: dict) -> None:
    """Refuse a declared scope that can't be held to (at fork and set_meta)."""
    change = meta.get("may_change")
    if change is not None:
        entries = _entries(change)
        if not entries:
            raise ChronosError(
                'may_change names tables and table.columns: "leads.status, lists"', BAD_ARGUMENT
            )
    tenant = meta.get("tenant")
    if tenant is not None:
        _expression(tenant)
    for key in ("max_rows", "max_deletes"):
        value = meta.get(key)
        if value is not None and not (type(value) is int and value >= 0):
            raise ChronosError(f"{key} is a whole number of 0 or more, not {value!r}", BAD_ARGUMENT)


def _expression(tenant: Any) -> str:
    """The tenant condition, refused unless it is one expression (no statement ends in it, no
    comment, every parenthesis it opens closed within it)."""
    what = 'tenant is one SQL condition every changed row meets, as "org_id = 42"'
    if not isinstance(tenant, str) or not tenant.strip():
        raise ChronosError(what, BAD_ARGUMENT)
    if "--" in tenant or "/*" in tenant:
        raise ChronosError(f"{what}, without comments", BAD_ARGUMENT)
    depth = 0
    for text, kind, _s, _e in sqltext.tokens(tenant):
        if (kind == "punct" and text in "?:@") or (kind == "word" and text.startswith("$")):
            raise ChronosError(
                f"{what}, with its values written in it: {tenant!r} has a parameter ({text}), "
                f"which no merge has a value for",
                BAD_ARGUMENT,
            )
        if kind != "punct":
            continue
        depth += {"(": 1, ")": -1}.get(text, 0)
        if depth < 0 or text == ";":
            raise ChronosError(f"{what}, not {tenant!r}", BAD_ARGUMENT)
    if depth:
        raise ChronosError(f"{what}: a parenthesis in {tenant!r} isn't closed", BAD_ARGUMENT)
    return tenant


def selects_every_row(db: Database, tenant: str) -> str | None:
    """What a tenant condition selects every row of, if it does: the condition names no
    column (``1``, ``true``), or main's tables it can be read on have rows and it leaves none
    of them out (``id = id``). None: it is a scope."""
    conn = db.main.conn
    condition = _expression(tenant)
    tables = db.tables()  # (before the guard: bringing them up to date writes chronos' own)
    checking = guard.checking(conn, READ_ONLY)
    try:
        with db.bounds.within(TENANT_TIMEOUT_MS, "a declared tenant's check"):
            if _prepares(conn, f"select ({condition})"):
                return "every table (it names no column)"
            read = []
            for name, (_n, t) in sorted(tables.items()):
                source = f"main.{sqltext.quote_ident(t.stored)}"
                sql = (
                    f"select exists (select 1 from {source}), exists (select 1 from {source} "
                    f"where not coalesce(({condition}), 0))"
                )
                if not _prepares(conn, sql):
                    continue  # (its columns aren't this table's)
                has_rows, left_out = all_rows(conn.execute(READ_ONLY.mark + sql))[0]
                if left_out:
                    return None
                if has_rows:
                    read.append(name)
    finally:
        checking.done()
    return ", ".join(read) if read else None


def _prepares(conn: apsw.Connection, sql: str) -> bool:
    """Whether SQLite prepares ``sql`` (read-only, not run)."""
    try:
        conn.execute(READ_ONLY.mark + "explain " + sql).fetchall()
    except (apsw.SQLError, apsw.AuthError, apsw.BindingsError):
        return False  # (a parameter in it, ?, is no condition on a row either)
    return True


def _entries(change: Change) -> list[str]:
    if isinstance(change, str):
        items = change.split(",")
    elif isinstance(change, list) and all(isinstance(v, str) for v in change):
        items = change
    else:
        raise ChronosError(
            f'may_change is "table, table.column, ..." or a list of them, not {change!r}',
            BAD_ARGUMENT,
        )
    return [i.strip() for i in items if i.strip()]


def scopes(db: Database, world: World) -> list[dict[str, Any]]:
    """The scopes a world's merge holds to: the one its fork declared (kept whatever an
    agent's set_meta says later) and the one its meta declares now, if another."""
    fixed = worldholds.fork_scope(db.main.conn, world.id)
    now = declared(world.meta)
    out = [fixed] if fixed else []
    return [*out, now] if now and now != fixed else out


def breaks(db: Database, p: Plan, n: Counts, held_to: list[dict[str, Any]]) -> list[str]:
    """Each part of the world's scopes (``held_to``) the merge breaks (``n``: what it changes)."""
    out: list[str] = []
    for scope in held_to:
        out += [r for r in _breaks(db, p, n, scope) if r not in out]
    return out


def _breaks(db: Database, p: Plan, n: Counts, scope: dict[str, Any]) -> list[str]:
    out = []
    if scope.get("max_rows") is not None and n.rows > scope["max_rows"]:
        out.append(
            f"it changes {rows_text(n.rows)} (its declared scope's max_rows is {scope['max_rows']})"
        )
    if scope.get("max_deletes") is not None and n.removed > scope["max_deletes"]:
        out.append(
            f"it {deletes_text(n)} (its declared scope's max_deletes is {scope['max_deletes']})"
        )
    if scope.get("may_change") is not None:
        out += _outside(p, _entries(scope["may_change"]))
    if scope.get("tenant") is not None:
        out += _tenant(db, p, _expression(scope["tenant"]))
    return out


def _outside(p: Plan, entries: list[str]) -> list[str]:
    """The first change outside ``may_change``, judged by the parent's names (what the fork
    named): a table the world renamed is still the table it was."""
    tables = {e.lower() for e in entries if "." not in e}
    columns = {e.lower() for e in entries if "." in e}
    said = ", ".join(entries)
    names = p.names
    for s in p.schema:
        if names.table(s.op.table_id, s.table).lower() not in tables:
            return [f"it changes the schema of {s.table}, outside its may_change ({said})"]
    for o in p.writes:
        c = o.change
        if names.table(c.n, c.table).lower() in tables:
            continue
        before, after = c.theirs, o.result
        if before is None or after is None:
            what = "inserts" if before is None else "deletes"
            return [f"it {what} {c.where}, outside its may_change ({said})"]
        changed = [k for k in c.t.column_names if before.get(k) != after.get(k)]
        wrong = [k for k in changed if names.column(c.n, c.t, k).lower() not in columns]
        if wrong:
            return [f"it changes {c.where}'s {', '.join(wrong)}, outside its may_change ({said})"]
    return []


def _tenant(db: Database, p: Plan, tenant: str) -> list[str]:
    """The first row, as it was or as it will be, that doesn't meet the tenant condition."""
    by_table: dict[str, list[tuple[Any, dict]]] = {}
    for o in p.writes:  # (a row's table/id is spelled only for the row named)
        c = o.change
        for row in (c.theirs, o.result):
            if row is not None:
                by_table.setdefault(c.table, []).append((c, row))
    for rows in by_table.values():
        t = rows[0][0].t  # (the table's, as every change of it has)
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start : start + _CHUNK]
            bad = _outside_tenant(db, p, t, tenant, chunk)
            if bad is not None:
                return [f"it changes {bad}, outside its tenant ({tenant})"]
    return []


def _outside_tenant(db: Database, p: Plan, t: TableInfo, tenant: str, rows: list) -> str | None:
    columns = t.column_names  # (a list made on each read)
    names = ["scope_n", *columns]
    cols = ", ".join(sqltext.quote_ident(n) for n in names)
    values = ", ".join("(" + ", ".join("?" for _ in names) + ")" for _ in rows)
    params = [v for i, (_w, row) in enumerate(rows) for v in (i, *(row.get(c) for c in columns))]
    sql = (
        f"with scope_row({cols}) as (values {values}) select scope_n from scope_row "
        f"where not coalesce(({tenant}), 0) limit 1"
    )
    conn = p.parent.conn
    checking = guard.checking(conn, READ_ONLY)
    try:
        with db.bounds.within(TENANT_TIMEOUT_MS, "a declared tenant's check"):
            found = all_rows(conn.execute(READ_ONLY.mark + sql, params))
    except (apsw.SQLError, apsw.AuthError, apsw.BindingsError) as exc:  # (BindingsError: a ?)
        raise ChronosError(
            f"{p.world.name}'s declared tenant ({tenant}) can't be read on {t.name}'s rows "
            f"({exc}): set_meta it to a condition on their columns; nothing was merged",
            REFUSED,
        ) from None
    finally:
        checking.done()
    return rows[found[0][0]][0].where if found else None
