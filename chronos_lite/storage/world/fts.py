"""An app's FTS5 tables, and its other virtual tables, on a world.

A virtual table can't carry chronos' triggers, and a world can't read an FTS5 table through a
view (MATCH, rank, highlight() and the rest need the FTS5 table itself). So a world whose rows
an FTS5 table indexes gets a TEMP FTS5 table of the same definition, its index built from the
world's rows:

* **external content** (``content='docs'``): the index of the world's ``docs`` rows (FTS5 reads
  them through a view of chronos' own over the world's ``docs``, naming each row's rowid). The
  app's own triggers keep it in step as the world writes. The world's data are ``docs``' rows,
  versioned as any; merged into main, main's index is brought up to date for the rows the
  merge wrote (no trigger fires on a merge).
* **its own content** (a plain ``fts5(...)``): its rows are its content table's
  (``F_content``, versioned as any table of the app's); the world's TEMP FTS5 table starts as
  the world's rows and writes what the world changes back to them (``ownfts``).
* **contentless** FTS5 tables (``content=''``) and other virtual tables (rtree, ...) keep no
  rows a world could copy: a world reads them as main has them, and can't change them.

A TEMP copy is made when the world needs it: its rows differ from main's (the world, or main
since the fork, changed them), or a statement is about to write it.
"""

from __future__ import annotations

import apsw

from ...sqltext import comma_parts, quote_ident, tokens
from ..schema.virtual import Fts
from .context import DEPTH_DOWN, DEPTH_UP


def content_view(n: int) -> str:
    """The rows a world's copy of an external-content FTS5 table indexes, with their rowid."""
    return f"_chronos_fc{n}"


def temp_copy(conn: apsw.Connection, fts: Fts, rows: str, rowid: str, n: int) -> None:
    """The world's own FTS5 table of an external-content one: made, and its index built from
    the world's rows of its content table (``rows``: the world's view of them, ``rowid``: the
    expression there of each row's rowid). The copy reads them through a view of its own
    (``content_view``) that names the rowid as a column: a view has none of its own, which
    FTS5 would ask for (``T.rowid``)."""
    view = content_view(n)
    cols = ", ".join(quote_ident(c) for c in fts.columns)
    conn.execute(f"DROP TABLE IF EXISTS temp.{quote_ident(fts.name)}")
    conn.execute(f"DROP VIEW IF EXISTS temp.{view}")
    conn.execute(f"CREATE TEMP VIEW {view} AS SELECT {rowid} AS _chronos_rowid, {cols} FROM {rows}")
    args = ", ".join(_kept_arguments(fts.sql))
    conn.execute(
        f"CREATE VIRTUAL TABLE temp.{quote_ident(fts.name)} USING fts5({args}, "
        f"content='{view}', content_rowid='_chronos_rowid')"
    )
    q = quote_ident(fts.name)
    conn.execute(f"INSERT INTO temp.{q}({q}) VALUES ('rebuild')")


def unkeyed(fts: Fts, table: str) -> str:
    """Why a world can't index ``table``'s rows for ``fts``: their rowid isn't their key."""
    return (
        f"{fts.name} indexes {table} by its rowid, which isn't {table}'s key (its primary key "
        f"is text, or of several columns), and a world keeps rows by their key: give the FTS5 "
        f"table content_rowid=<an integer column of {table}>, or work on {fts.name} on main"
    )


def _kept_arguments(sql: str) -> list[str]:
    """An FTS5 table's arguments (its columns, its options) but where its content is."""
    inside = sql[sql.index("(") + 1 : sql.rindex(")")]
    out = []
    for start, end in comma_parts(inside):
        part = inside[start:end].strip()
        found = tokens(part)
        if not found:
            continue
        is_option = any(t == "=" and k == "punct" for t, k, _s, _e in found)
        if is_option and found[0][0].lower() in ("content", "content_rowid"):
            continue
        out.append(part)
    return out


def own_copy(conn: apsw.Connection, sql: str, name: str, rows: str, n: int) -> list[str]:
    """The world's own FTS5 table of one with its own content: made from ``rows`` (the world's
    rows of it: its key view, the rowid in ``_chronos_rowid``), then kept writing what changes
    in it back there (triggers on the copy's content table, made after it is filled). Returns
    the names of those triggers (chronos' own: the guard trusts them)."""
    q = quote_ident(name)
    conn.execute(f"DROP TABLE IF EXISTS temp.{q}")
    head, args = sql.split("(", 1)
    conn.execute(f"CREATE VIRTUAL TABLE temp.{q} {' '.join(head.split()[4:])}({args}")
    columns = [r[1] for r in conn.execute(f"pragma temp.table_xinfo({q})") if r[6] == 0]
    cols = ", ".join(quote_ident(c) for c in columns)
    rid = quote_ident("_chronos_rowid")
    conn.execute(f"INSERT INTO temp.{q}(rowid, {cols}) SELECT {rid}, {cols} FROM {rows}")
    content = quote_ident(f"{name}_content")
    stored = ", ".join(f"NEW.c{i}" for i in range(len(columns)))
    sets = ", ".join(f"{quote_ident(c)} = NEW.c{i}" for i, c in enumerate(columns))
    names = [f"_chronos_c{n}_i", f"_chronos_c{n}_u", f"_chronos_c{n}_d"]
    # (what the statement wrote, SQLite counts: these writes are the copy's, not counted again)
    up, down = DEPTH_UP + ";", DEPTH_DOWN + ";"
    conn.execute(
        f"CREATE TEMP TRIGGER {names[0]} AFTER INSERT ON temp.{content} BEGIN {up} "
        f"INSERT INTO {rows}({rid}, {cols}) VALUES (NEW.id, {stored}); {down} END"
    )
    conn.execute(
        f"CREATE TEMP TRIGGER {names[1]} AFTER UPDATE ON temp.{content} BEGIN {up} "
        f"UPDATE {rows} SET {rid} = NEW.id, {sets} WHERE {rid} = OLD.id; {down} END"
    )
    conn.execute(
        f"CREATE TEMP TRIGGER {names[2]} AFTER DELETE ON temp.{content} BEGIN {up} "
        f"DELETE FROM {rows} WHERE {rid} = OLD.id; {down} END"
    )
    return names


def index_merged(
    conn: apsw.Connection,
    fts: Fts,
    old: dict | None,
    new: dict | None,
    old_rowid: object,
    new_rowid: object,
) -> None:
    """Main's index of an external-content FTS5 table, for a row a merge wrote to its content
    table (replacing ``old`` with ``new``; None: no row)."""
    q = quote_ident(fts.name)
    cols = ", ".join(quote_ident(c) for c in fts.columns)
    marks = ", ".join("?" for _ in fts.columns)
    if old is not None:
        conn.execute(
            f"INSERT INTO main.{q}({q}, rowid, {cols}) VALUES ('delete', ?, {marks})",
            [old_rowid, *(old.get(c) for c in fts.columns)],
        )
    if new is not None:
        conn.execute(
            f"INSERT INTO main.{q}(rowid, {cols}) VALUES (?, {marks})",
            [new_rowid, *(new.get(c) for c in fts.columns)],
        )
