"""Keeping the shadow objects in step with main's schema: a table created, renamed, given or
losing columns, or dropped, by chronos or by an app through SQLite itself, gets its history,
overlay and triggers made, renamed, widened or retired (``sync``, in the caller's write
transaction; the shadow objects themselves are ``shadow``'s)."""

from __future__ import annotations

import json

import apsw

from ..sqltext import quote_ident
from .fetch import all_rows
from .schema.catalog import PREFIX, Column, TableInfo, table_info, user_tables
from .schema.virtual import fts_tables
from .shadow import (
    ensure_autoincrement,
    history_ddl,
    main_triggers,
    overlay_ddl,
    overlay_unique_indexes,
    shadow_tables,
    world_history_ddl,
)


def _registry(conn: apsw.Connection) -> dict[int, dict]:
    out = {}
    # (A table a world created is the world's until it merges: not main's to follow.)
    for n, name, columns, dropped in conn.execute(
        "select id, name, columns, dropped from _chronos_tables where id not in "
        "(select table_id from _chronos_schema where kind = 'create')"
    ):
        out[n] = {"name": name, "columns": json.loads(columns), "dropped": dropped}
    return out


def _follow_renames(conn: apsw.Connection, reg: dict[int, dict]) -> None:
    """A table renamed by any client carries our triggers along; follow them to its new name."""
    own_fts = {f.name for f in fts_tables(conn) if f.kind == "own"}
    for trig, tbl in all_rows(
        conn.execute(
            "select name, tbl_name from sqlite_schema where type = 'trigger' "
            "and name like '\\_chronos\\_t%\\_ad' escape '\\'"
        )
    ):
        n = int(trig[len(PREFIX) + 1 : -3])
        if tbl.endswith("_content") and tbl[: -len("_content")] in own_fts:
            tbl = tbl[: -len("_content")]  # (an FTS5 table's triggers are on its content table)
        if n in reg and reg[n]["name"] != tbl:
            conn.execute("update _chronos_tables set name = ? where id = ?", (tbl, n))
            reg[n]["name"] = tbl


def _add_or_rename_columns(
    conn: apsw.Connection, n: int, known: list[str], t: TableInfo
) -> list[str]:
    """Shadow columns follow main's: added columns are added, renamed ones renamed; a dropped
    one stays in the shadow tables (their rows keep its values). ``known``: main's columns at
    the last sync; returned: main's columns now. One name changed in place reads as a rename,
    unless the shadow tables hold that name already (a world added it: a drop and an add)."""
    current = t.column_names
    if len(current) == len(known) and sum(a != b for a, b in zip(current, known)) == 1:
        old, new = next((a, b) for a, b in zip(known, current) if a != b)
        tables = shadow_tables(n)
        if new not in known and not any(_has_column(conn, tbl, new) for tbl in tables):
            for tbl in tables:
                conn.execute(
                    f"alter table {tbl} rename column {quote_ident(old)} to {quote_ident(new)}"
                )
            return current
    for c in t.columns:
        if c.name not in known:
            for tbl in shadow_tables(n):
                add_shadow_column(conn, tbl, c)
    return current


def _has_column(conn: apsw.Connection, table: str, column: str) -> bool:
    return column.lower() in (r[1].lower() for r in conn.execute(f"pragma table_info({table})"))


def add_shadow_column(conn: apsw.Connection, table: str, c: Column) -> None:
    """A column for a shadow table (history or overlay), unless it has one of that name (a
    world added it first). With the column's default, rows written before it existed read as
    main's do."""
    have = [r[1].lower() for r in conn.execute(f"pragma table_info({table})")]
    if not have or c.name.lower() in have:  # (no such table yet: it is made with the column)
        return
    default = f" DEFAULT {c.default}" if c.default is not None else ""
    try:
        conn.execute(f"alter table {table} add column {quote_ident(c.name)} {c.decltype}{default}")
    except apsw.SQLError:  # ADD COLUMN refuses a default that isn't a constant
        conn.execute(f"alter table {table} add column {quote_ident(c.name)} {c.decltype}")


def sync(conn: apsw.Connection) -> dict[str, tuple[int, TableInfo]]:
    """Bring every shadow object in line with main's tables. Runs inside a write transaction.

    Returns the user tables by name, each with its shadow number and description.
    """
    reg = _registry(conn)
    _follow_renames(conn, reg)
    live = {v["name"]: n for n, v in reg.items() if not v["dropped"]}
    names = set(user_tables(conn))
    for name, n in live.items():
        if name not in names:
            conn.execute("update _chronos_tables set dropped = 1 where id = ?", (n,))
    out: dict[str, tuple[int, TableInfo]] = {}
    for name in sorted(names):
        t = table_info(conn, name)
        if name in live:
            n = live[name]
            columns = _add_or_rename_columns(conn, n, reg[n]["columns"], t)
            if columns != reg[n]["columns"]:
                conn.execute(
                    "update _chronos_tables set columns = ? where id = ?", (json.dumps(columns), n)
                )
            for ddl in overlay_unique_indexes(t, n):
                conn.execute(ddl)
        else:
            conn.execute(
                "insert into _chronos_tables(name, columns) values (?, ?)",
                (name, json.dumps(t.column_names)),
            )
            n = conn.last_insert_rowid()
            for ddl in history_ddl(t, n) + overlay_ddl(t, n):
                conn.execute(ddl)
        for ddl in world_history_ddl(t, n):  # (also for tables made before worlds kept it)
            conn.execute(ddl)
        if ensure_autoincrement(conn, t):
            t = table_info(conn, name)
        else:
            conn.execute("insert or ignore into _chronos_counters values (?, 0)", (n,))
        _install_triggers(conn, t, n)
        out[name] = (n, t)
    # Other processes compare this with the file's schema version to know there is no more to do.
    conn.execute(
        "insert or replace into _chronos_meta values ('synced_schema', "
        "(select schema_version from pragma_schema_version))"
    )
    return out


def app_tables_sql(conn: apsw.Connection) -> dict[str, str]:
    """The app's tables' CREATE statements, by name (chronos', SQLite's and Litestream's own
    left out)."""
    rows = conn.execute(
        "select name, sql from sqlite_schema where type = 'table' "
        "and name not like 'sqlite!_%' escape '!' and name not like '!_chronos!_%' escape '!' "
        "and name not like '!_litestream!_%' escape '!'"
    )
    return {str(name): str(sql) for name, sql in rows}


def snapshot(conn: apsw.Connection) -> list[str]:
    """The app's tables as their CREATE statements, kept beside the sync (in its transaction):
    the tables whose statement is new, changed or gone since the last one, by name. Nothing is
    named the first time (no snapshot yet: a file made before chronos kept one)."""
    now = app_tables_sql(conn)
    kept = conn.execute("select value from _chronos_meta where key = 'synced_tables'").fetchone()
    conn.execute(
        "insert or replace into _chronos_meta values ('synced_tables', ?)", (json.dumps(now),)
    )
    if kept is None:
        return []
    before = json.loads(kept[0])
    return sorted(name for name in {*before, *now} if before.get(name) != now.get(name))


def _install_triggers(conn: apsw.Connection, t: TableInfo, n: int) -> None:
    wanted = main_triggers(t, n)
    have = dict(
        all_rows(
            conn.execute(
                "select name, sql from sqlite_schema where type = 'trigger' "
                "and name like ? escape '\\'",
                (f"\\_chronos\\_t{n}\\_%",),
            )
        )
    )
    for name, sql in have.items():
        if wanted.get(name) != sql:
            conn.execute(f"drop trigger {quote_ident(name)}")
    for name, sql in wanted.items():
        if have.get(name) != sql:
            conn.execute(sql)


def drop_triggers(conn: apsw.Connection, table: str) -> None:
    """Remove a table's history triggers (before DROP COLUMN, which refuses while they name it)."""
    for (name,) in all_rows(
        conn.execute(
            "select name from sqlite_schema where type = 'trigger' and tbl_name = ? "
            "and name like '\\_chronos\\_t%' escape '\\'",
            (table,),
        )
    ):
        conn.execute(f"drop trigger {quote_ident(name)}")
