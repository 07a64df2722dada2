"""How a world's connection shows each table: as main's own table, or materialized.

* **Untouched**: the world has no row of its own in the table, and main hasn't changed it
  since the fork. The world reads main's table itself (no view: the name resolves to it), so
  every query shape costs what it costs on main. A statement about to write it makes it
  materialized first (the guard finds the write; the statement then runs again).
* **Materialized**: two TEMP tables on the connection, derived from the file, and a view named
  like the table over main's table and them:

      _chronos_x<n>  the keys whose main row the world doesn't show as it is now: the keys the
                     world wrote (its overlay entries), and the keys main changed since the
                     fork ("pins": the world sees those rows as they were at the fork)
      _chronos_l<n>  the world's rows for those keys: its overlay's rows, and the pinned rows
                     as of the fork; main's column types, main's indexes mirrored

      view = main's rows whose key isn't in _chronos_x<n>  ∪  _chronos_l<n>

  Two plain arms: no correlated probe of history or overlay per row, a lookup by key or index
  is a probe of each, and SQLite merges the view into a join (each measured: the study in
  benchmarks/). The overlay stays the truth in the file; the world's triggers write it and
  these tables together, and a connection that finds the world changed by another, or main's
  history moved, brings them up to date (``pin``) or makes them again.
"""

from __future__ import annotations

import apsw

from ...sqltext import quote_ident, tokens
from ..fetch import one_row
from ..schema.catalog import ROWID_COL, TableInfo
from ..shadow import DEAD, OP, SEQ, WORLD, history_table, overlay_table

IN_MAIN = "_chronos_m"
# A world's connection copies a changed table of at most this many rows whole (about 0.7 us a
# row with its indexes, once per connection: 70 ms at 100k rows); a bigger one reads main's
# rows and the world's apart (see copies_whole)
WHOLE_ROWS = 100_000


def hidden_table(n: int) -> str:
    return f"_chronos_x{n}"


def live_table(n: int) -> str:
    return f"_chronos_l{n}"


def unindexed_view(n: int) -> str:
    """A whole copy read as ``NOT INDEXED`` reads a table (SQLite drops the clause on a view)."""
    return f"_chronos_ni{n}"


def indexed_view(n: int, i: int) -> str:
    """A whole copy read by its mirror of main's ``i``-th index, as ``INDEXED BY`` reads a table
    (SQLite takes no ``INDEXED BY`` on a view)."""
    return f"_chronos_ib{n}_{i}"


def index_head(sql: str) -> tuple[str, bool] | None:
    """A CREATE INDEX statement's index name, and whether the index is UNIQUE."""
    found = [text for text, kind, _s, _e in tokens(sql) if kind in ("word", "name")]
    upper = [w.upper() for w in found]
    if "INDEX" not in upper or "ON" not in upper:
        return None
    on = upper.index("ON")
    return found[on - 1], "UNIQUE" in upper[:on]


def index_number(indexes: list[str], name: str) -> int | None:
    """Which of main's CREATE INDEX statements (``indexes``) makes the index ``name``."""
    for i, sql in enumerate(indexes):
        head = index_head(sql)
        if head is not None and head[0].lower() == name.lower():
            return i
    return None


def rows_of(t: TableInfo, n: int, native: bool = False) -> str:
    """The TEMP table holding a materialized table's live rows: its native copy (named like
    it: ``world.native``), or ``live_table``."""
    return f"temp.{quote_ident(t.name) if native else live_table(n)}"


def _filled(t: TableInfo, native: bool) -> list[str]:
    """The columns a copy's rows are written by (a native copy computes its generated ones)."""
    return [c.name for c in (t.writable if native else t.columns)]


def _keys(t: TableInfo) -> list[str]:
    """The key's columns as the TEMP tables name them (the world's names)."""
    return [quote_ident(c) for c in t.key_cols]


def _stored_keys(t: TableInfo) -> list[str]:
    """The key's columns as storage names them (main's table, history, overlay)."""
    return [t.col(c) for c in t.key_cols]


def _row(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _key_decl(t: TableInfo, extra: str = "") -> tuple[str, bool]:
    """The key's columns for a TEMP table (``extra``: more columns after them), and whether it
    is a rowid key."""
    more = f", {extra}" if extra else ""
    if t.key_kind in ("int", "rowid"):
        return f"{_keys(t)[0]} INTEGER PRIMARY KEY{more}", True
    by_name = {c.name: c for c in t.columns}
    cols = ", ".join(f"{quote_ident(c)} {by_name[c].declared()}".rstrip() for c in t.key_cols)
    return f"{cols}{more}, PRIMARY KEY ({', '.join(_keys(t))})", False


def hidden_ddl(t: TableInfo, n: int) -> str:
    """The TEMP table of the keys whose main rows the world doesn't show as they are."""
    # (IN_MAIN: whether main has a row of the key, NULL until a count needs it: count_select)
    key, rowid = _key_decl(t, f"{IN_MAIN} INTEGER")
    tail = "" if rowid else " WITHOUT ROWID"
    return f"CREATE TEMP TABLE {hidden_table(n)}({key}){tail}"


def tables_ddl(t: TableInfo, n: int, indexes: list[str], whole: bool = False) -> list[str]:
    """The TEMP tables of a materialized table (``indexes``: main's CREATE INDEX statements
    on it, mirrored on the live rows, uniqueness left to the world's triggers; for a whole
    copy, made by ``fill`` once the rows are in: an index built at once is faster)."""
    out = [hidden_ddl(t, n)]
    tail = "" if t.key_kind in ("int", "rowid") else " WITHOUT ROWID"
    cols = []
    for c in t.columns:
        if t.key_kind == "int" and c.name == t.pk[0]:
            cols.append(f"{quote_ident(c.name)} INTEGER PRIMARY KEY")
        else:
            cols.append(f"{quote_ident(c.name)} {c.declared()}".rstrip())
    if t.key_kind == "rowid":
        cols.append(f"{quote_ident(ROWID_COL)} INTEGER PRIMARY KEY")
    elif t.key_kind != "int":
        cols.append(f"PRIMARY KEY ({', '.join(_keys(t))})")
    out.append(f"CREATE TEMP TABLE {live_table(n)}({', '.join(cols)}){tail}")
    return out if whole else out + index_ddl(t, n, indexes)


def index_ddl(t: TableInfo, n: int, indexes: list[str], whole: bool = False) -> list[str]:
    """Main's indexes of the table (``indexes``: its CREATE INDEX statements, and its UNIQUE
    constraints') on the live rows; for a whole copy, a view reading it by each of them
    (``indexed_view``: what ``INDEXED BY`` the index reads)."""
    out = []
    for i, sql in enumerate(indexes):
        mirrored = mirror(sql, f"_chronos_l{n}_i{i}", live_table(n))
        if mirrored:
            out.append(mirrored)
            if whole:
                by = copy_select(t, n, how=f"INDEXED BY _chronos_l{n}_i{i}")
                out.append(f"CREATE TEMP VIEW {indexed_view(n, i)} AS {by}")
    for i, columns in enumerate(t.unique_constraints):  # (SQLite's own index: no SQL to mirror)
        named = ", ".join(quote_ident(c) for c in columns)
        out.append(f"CREATE INDEX temp._chronos_l{n}_u{i} ON {live_table(n)}({named})")
    return out


def mirror(sql: str, name: str, table: str, unique: bool = False) -> str | None:
    """An index of main's table as a TEMP index on a copy of its rows: plain (the live rows:
    uniqueness is the world's triggers'), or ``unique`` (a native copy keeps it itself)."""
    found = tokens(sql)
    on = next(
        (i for i, (w, k, _s, _e) in enumerate(found) if k == "word" and w.upper() == "ON"), None
    )
    if on is None:
        return None
    paren = next((i for i in range(on, len(found)) if found[i][:2] == ("(", "punct")), None)
    if paren is None:
        return None
    kind = "UNIQUE INDEX" if unique else "INDEX"
    return f"CREATE {kind} temp.{quote_ident(name)} ON {table}{sql[found[paren][2] :]}"


def copy_select(t: TableInfo, n: int, with_rowid: bool = False, how: str = "") -> str:
    """A whole copy's rows (``how``: ``NOT INDEXED``, or ``INDEXED BY`` one of its indexes)."""
    return f"SELECT {t.own_columns(with_rowid)} FROM temp.{live_table(n)} {how}".rstrip()


def view_select(t: TableInfo, n: int, with_rowid: bool = False, whole: bool = False) -> str:
    """A materialized table's rows: main's whose key isn't hidden, and the live ones (a
    generated column computed from the world's own values); a whole copy's are all live."""
    if whole:  # (one arm: SQLite flattens the view into any query, as it would the table)
        return copy_select(t, n, with_rowid)
    main_key = f"_m.{_stored_keys(t)[0]}" if t.key_kind == "int" else None
    if t.key_kind == "rowid":
        main_key = "_m.rowid"
    elif t.key_kind in ("single", "composite"):
        main_key = _row([f"_m.{t.col(c)}" for c in t.pk])
    rowid = f", _m.rowid AS {quote_ident(ROWID_COL)}" if with_rowid else ""
    hidden = f"{main_key} NOT IN (SELECT {', '.join(_keys(t))} FROM temp.{hidden_table(n)})"
    if t.key_kind in ("single", "composite"):  # (SQLite's legacy NULL keys: main's alone)
        nulls = " OR ".join(f"_m.{t.col(c)} IS NULL" for c in t.pk)
        hidden = f"({nulls} OR {hidden})"
    main_arm = (
        f"SELECT {t.main_columns('_m.')}{rowid} FROM main.{quote_ident(t.stored)} AS _m "
        f"WHERE {hidden}"
    )
    return f"{main_arm} UNION ALL SELECT {t.own_columns(with_rowid)} FROM temp.{live_table(n)}"


def differs(conn: apsw.Connection, n: int, world: int, seq: int) -> bool:
    """Whether the world's rows of a table aren't main's now: it holds rows of its own, or main
    changed the table since the fork (``seq``: its history then)."""
    if (
        one_row(conn.execute(f"select coalesce(max({SEQ}), 0) from main.{history_table(n)}"))[0]
        > seq
    ):
        return True
    found = conn.execute(
        f"select 1 from main.{overlay_table(n)} where {WORLD} = ? limit 1", (world,)
    ).fetchall()
    return bool(found)


def fill(
    conn: apsw.Connection,
    t: TableInfo,
    n: int,
    world: int,
    seq: int,
    whole: list[str] | None = None,
    native: bool = False,
) -> int:
    """The TEMP tables from the file: the world's overlay, and main's rows as of the fork for
    the keys main changed since (``whole``: and main's other rows, a whole copy of the world's
    rows, then indexed by these statements). Returns main's history position they are pinned
    to."""
    keys, stored_keys = ", ".join(_keys(t)), ", ".join(_stored_keys(t))
    filled = _filled(t, native)
    cols = ", ".join(quote_ident(c) for c in filled)
    rowid = f", {quote_ident(ROWID_COL)}" if t.key_kind == "rowid" else ""
    o, live = f"main.{overlay_table(n)}", rows_of(t, n, native)
    conn.execute(f"DELETE FROM temp.{hidden_table(n)}")
    conn.execute(f"DELETE FROM {live}")
    conn.execute(
        f"INSERT INTO temp.{hidden_table(n)}({keys}) SELECT {stored_keys} FROM {o} "
        f"WHERE {WORLD} = ?",
        (world,),
    )
    conn.execute(
        f"INSERT INTO {live}({cols}{rowid}) SELECT {t.stored_list(columns=filled)}{rowid} "
        f"FROM {o} WHERE {WORLD} = ? AND {DEAD} = 0",
        (world,),
    )
    pinned = pin(conn, t, n, seq, seq, native=native)
    if whole is not None:
        _copy_main(conn, t, n, native)
        for stmt in whole:
            conn.execute(stmt)
    return pinned


def _copy_main(conn: apsw.Connection, t: TableInfo, n: int, native: bool) -> None:
    """Main's rows whose keys the world doesn't hide, into the live rows: as they are now,
    which is as they were at the fork (main's rows changed since are hidden, pinned). All the
    rows go in in one pass, in key order (the world's set aside meanwhile), so that the copy
    is laid out as compactly as a table loaded in order (rows inserted around others split
    its pages: 15% more of them, and scans through an index 1.3x slower)."""
    live = rows_of(t, n, native)
    filled = _filled(t, native)
    names = [quote_ident(c) for c in filled]
    rowid = ""
    if t.key_kind == "rowid":
        names.append(quote_ident(ROWID_COL))
        rowid = ", _m.rowid"
    cols = ", ".join(names)
    at = {name.lower(): i for i, name in enumerate([*filled, ROWID_COL], start=1)}
    order = ", ".join(str(at[c.lower()]) for c in t.key_cols)  # (by position: any names)
    conn.execute(f"CREATE TEMP TABLE _chronos_s AS SELECT {cols} FROM {live}")
    conn.execute(f"DELETE FROM {live}")
    conn.execute(
        f"INSERT INTO {live}({cols}) SELECT * FROM ("
        f"SELECT {t.main_columns('_m.', filled)}{rowid} FROM main.{quote_ident(t.stored)} AS _m "
        f"WHERE {t.main_key('_m.')} NOT IN (SELECT {', '.join(_keys(t))} FROM "
        f"temp.{hidden_table(n)}) UNION ALL SELECT {cols} FROM temp._chronos_s) "
        f"ORDER BY {order}"
    )
    conn.execute("DROP TABLE temp._chronos_s")


def whole_rows(conn: apsw.Connection) -> int:
    """The most rows of a table a world's connection copies whole: the database's setting
    (``config whole_rows``), else ``WHOLE_ROWS``."""
    row = conn.execute("SELECT value FROM main._chronos_meta WHERE key = 'whole_rows'").fetchone()
    return WHOLE_ROWS if row is None else int(row[0])


# main's rows of a table as last counted: (file, table, number) -> (its history's last seq, rows)
_counted: dict[tuple[str, str, int], tuple[int, int]] = {}


def main_count(conn: apsw.Connection, t: TableInfo, n: int) -> int:
    """The rows of main's table (SQLite counts them by the b-tree: every page of a big table);
    counted again only once its history moved on (every write of main's rows adds to it), so
    many worlds' first writes (simulate's) count a big table once."""
    last = one_row(conn.execute(f"SELECT coalesce(max({SEQ}), 0) FROM main.{history_table(n)}"))
    key = (conn.filename, t.stored, n)
    known = _counted.get(key)
    if known is not None and known[0] == last[0]:
        return known[1]
    rows = one_row(conn.execute(f"SELECT count(*) FROM main.{quote_ident(t.stored)}"))[0]
    _counted[key] = (last[0], rows)
    return rows


def copies_whole(conn: apsw.Connection, t: TableInfo, n: int, any_size: bool = False) -> bool:
    """Whether a world's connection keeps a whole copy of the table (main's rows and the
    world's), read as SQLite reads a table, rather than main's rows and the world's apart: a
    table of at most ``whole_rows`` rows (``any_size``: whatever its size), without main's
    legacy NULL keys (which a copy keyed like main's table can't hold)."""
    main = f"main.{quote_ident(t.stored)}"
    if t.fts_content:
        return False
    if not any_size and main_count(conn, t, n) > whole_rows(conn):
        return False
    if t.key_kind not in ("single", "composite"):
        return True
    nulls = " OR ".join(f"{t.col(c)} IS NULL" for c in t.pk)
    return not conn.execute(f"SELECT 1 FROM {main} WHERE {nulls} LIMIT 1").fetchall()


def pin(
    conn: apsw.Connection,
    t: TableInfo,
    n: int,
    seq: int,
    since: int,
    whole: bool = False,
    native: bool = False,
) -> int:
    """Hide main's rows it changed after ``since`` whose keys the world doesn't hold yet, and
    show them as they were at the fork (history position ``seq``). Returns the position now.
    A whole copy has nothing to do: it holds those rows as they were, main's changes since
    never reach it."""
    h = f"main.{history_table(n)}"
    now = one_row(conn.execute(f"select coalesce(max({SEQ}), 0) from {h}"))[0]
    if now <= since or whole:
        return max(now, since)
    keys, stored = _keys(t), _stored_keys(t)
    x = f"temp.{hidden_table(n)}"
    picked = ", ".join(f"json_extract(k, '$[{i}]')" for i in range(len(keys)))
    conn.execute("DELETE FROM temp._chronos_pins")
    conn.execute(  # (keys as JSON arrays: one column whatever the key's shape)
        f"INSERT INTO temp._chronos_pins(k) SELECT DISTINCT json_array({', '.join(stored)}) "
        f"FROM {h} WHERE {SEQ} > ? AND {_row(stored)} NOT IN (SELECT {', '.join(keys)} FROM {x})",
        (since,),
    )
    conn.execute(f"INSERT INTO {x}({', '.join(keys)}) SELECT {picked} FROM temp._chronos_pins")
    conn.execute(  # (main changed these keys: whether it has their rows is known no longer)
        f"UPDATE {x} SET {IN_MAIN} = NULL WHERE {IN_MAIN} IS NOT NULL AND {_row(keys)} IN "
        f"(SELECT {', '.join(stored)} FROM {h} WHERE {SEQ} > ?)",
        (since,),
    )
    filled = _filled(t, native)
    names = [quote_ident(c) for c in filled]
    sources = [t.col(c) for c in filled]
    if t.key_kind == "rowid":
        names.append(quote_ident(ROWID_COL))
        sources.append(quote_ident(ROWID_COL))
    same = " AND ".join(f"h2.{k} = h.{k}" for k in stored)
    first = (  # the key's first history record after the fork: its row then (op 1)
        f"h.{SEQ} > ? AND NOT EXISTS (SELECT 1 FROM {h} AS h2 "
        f"WHERE {same} AND h2.{SEQ} > ? AND h2.{SEQ} < h.{SEQ})"
    )
    conn.execute(
        f"INSERT INTO {rows_of(t, n, native)}({', '.join(names)}) "
        f"SELECT {', '.join('h.' + c for c in sources)} FROM {h} AS h WHERE h.{OP} = 1 "
        f"AND json_array({', '.join('h.' + k for k in stored)}) IN "
        f"(SELECT k FROM temp._chronos_pins) AND {first}",
        (seq, seq),
    )
    return now


def count_select(
    conn: apsw.Connection,
    t: TableInfo,
    n: int,
    alias: str,
    whole: bool = False,
    native: bool = False,
) -> str:
    """``count(*)`` of a materialized table without reading its rows: main's count (SQLite's
    b-tree count), less main's rows the world hides, plus the world's live rows. Whether main
    has a hidden key's row is probed once per key and kept (``IN_MAIN``; a key the world writes
    anew, or main changes, is probed again at the next count). ``alias``: the result column's
    name (the expression as the statement wrote it)."""
    main = f"main.{quote_ident(t.stored)}"
    x = f"temp.{hidden_table(n)}"
    if whole:
        return f"SELECT count(*) AS {quote_ident(alias)} FROM {rows_of(t, n, native)}"
    if t.key_kind == "rowid":
        same = f"_m.rowid = {x}.{quote_ident(ROWID_COL)}"
    else:
        same = " AND ".join(f"_m.{t.col(c)} = {x}.{quote_ident(c)}" for c in t.pk)
    conn.execute(
        f"UPDATE {x} SET {IN_MAIN} = EXISTS (SELECT 1 FROM {main} AS _m WHERE {same}) "
        f"WHERE {IN_MAIN} IS NULL"
    )
    return (
        f"SELECT (SELECT count(*) FROM {main}) - (SELECT count(*) FROM {x} WHERE {IN_MAIN}) + "
        f"(SELECT count(*) FROM temp.{live_table(n)}) AS {quote_ident(alias)}"
    )
