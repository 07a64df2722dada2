"""What a world's write leaves: the overlay entry (a row, or a tombstone), the world's history
of the entry before it (``_chronos_wh_n``: what a world read as of a moment needs), and the
integer keys new rows take from the shared counter (``sqlite_sequence``, or chronos' own), so
rows two worlds insert never collide."""

from __future__ import annotations

from ...sqltext import quote_ident, quote_literal, tokens
from ..schema.catalog import ROWID_COL, Column, TableInfo
from ..shadow import DEAD, NOW, OP, SEQ, TIME, WORLD, history_table, overlay_table
from ..shadow import world_history_table as wh_table
from .context import CLOCK
from .state import hidden_table, live_table

WORDS = ("word", "name")
ROWID_NAMES = {"rowid", "oid", "_rowid_"}


def checked_int(expr: str) -> str:
    """An INTEGER PRIMARY KEY value as SQLite would take it, or 'datatype mismatch'."""
    return (
        f"CASE WHEN {expr} IS NULL OR typeof({expr}) = 'integer' THEN {expr} "
        f"WHEN typeof({expr}) = 'real' AND {expr} = CAST({expr} AS INTEGER) "
        f"THEN CAST({expr} AS INTEGER) "
        f"WHEN typeof({expr}) = 'text' AND CAST(CAST({expr} AS INTEGER) AS TEXT) = trim({expr}) "
        f"THEN CAST({expr} AS INTEGER) ELSE RAISE(ABORT, 'datatype mismatch') END"
    )


def counter(t: TableInfo, n: int) -> tuple[str, str, str]:
    """The shared counter of integer keys: (table, column, row condition).

    With AUTOINCREMENT it is ``sqlite_sequence``, which main's own inserts honour; it is never
    below main's largest key (inserts keep it so, and main's history trigger moves it when an
    UPDATE moves a key up). Otherwise (a table without a primary key) chronos' own counter.
    """
    if t.autoincrement:
        return "main.sqlite_sequence", "seq", f"name = {quote_literal(t.stored)}"
    return "main._chronos_counters", "hi", f"table_id = {n}"


def allocate(t: TableInfo, n: int, given: str | None, known: bool = False) -> tuple[str, str]:
    """The statement that moves the shared counter for a new row, and the row's key
    (``known``: ``given`` is never NULL where this runs: the counter only follows it)."""
    table, col, row = counter(t, n)
    chk = checked_int(given) if given else "NULL"
    if given and known:
        return f"UPDATE {table} SET {col} = max({col}, {chk}) WHERE {row}", chk
    if t.autoincrement:
        step = (
            f"UPDATE {table} SET {col} = CASE WHEN {chk} IS NULL THEN {col} + 1 "
            f"ELSE max({col}, {chk}) END WHERE {row}"
        )
    else:
        # Past main's largest rowid, and past every rowid in history: a world still sees rows
        # main deleted after its fork.
        top = (
            f"max(coalesce((SELECT max(rowid) FROM main.{quote_ident(t.stored)}), 0), "
            f"coalesce((SELECT max({t.col(t.key_cols[0])}) FROM main.{history_table(n)}), 0))"
        )
        step = (
            f"UPDATE {table} SET {col} = CASE WHEN {chk} IS NULL THEN max({col}, {top}) + 1 "
            f"ELSE max({col}, {chk}) END WHERE {row}"
        )
    key = (
        f"coalesce({chk}, (SELECT {col} FROM {table} WHERE {row}))"
        if given
        else (f"(SELECT {col} FROM {table} WHERE {row})")
    )
    return step, key


def upsert_clause(t: TableInfo, dead: bool) -> str:
    """Overwrite the key's overlay entry (a tombstone, or the world's older row) in place.

    An upsert, not INSERT OR REPLACE: an outer INSERT OR IGNORE would turn REPLACE into a skip.
    """
    keys = t.stored_list(columns=list(t.key_cols))
    sets = [f"{SEQ} = excluded.{SEQ}", f"{DEAD} = {int(dead)}"]
    for c in t.columns:
        if c.name not in t.key_cols:
            sets.append(f"{t.col(c.name)} = " + ("NULL" if dead else f"excluded.{t.col(c.name)}"))
    return f" ON CONFLICT ({WORLD}, {keys}) DO UPDATE SET {', '.join(sets)}"


def write_row(
    t: TableInfo,
    n: int,
    world: int,
    key: list[str],
    values: dict[str, str],
    go: str,
    fresh: bool = False,
    hidden: bool = True,
) -> list[str]:
    """The overlay entry of a row written at ``key``, the world's history of it first.
    ``fresh``: a key just taken from the shared counter, past every key main or a world has
    had: no entry before it to remember, no main row to hide. ``hidden``: main's row of the
    key is hidden (not for a whole copy, which reads no main row)."""
    o = f"main.{overlay_table(n)}"
    cols = [t.col(c.name) for c in t.writable]
    vals = [values[c.name] for c in t.writable]
    for c, value in computed(t, values):
        cols.append(t.col(c.name))
        vals.append(value)
    if t.key_kind == "rowid":
        cols.append(quote_ident(ROWID_COL))
        vals.append(key[0])
    kcols = ", ".join(quote_ident(c) for c in t.key_cols)  # (the TEMP tables': the world's names)
    stored_kcols = t.stored_list(columns=list(t.key_cols))
    rowid = [quote_ident(ROWID_COL)] if t.key_kind == "rowid" else []
    names = [quote_ident(c) for c in t.column_names] + rowid
    sources = [t.col(c) for c in t.column_names] + rowid
    sets = ", ".join(f"{c} = excluded.{c}" for c in names)
    same = f"({stored_kcols}) = ({', '.join(key)})"
    wh = f"main.{wh_table(n)}"
    before = (
        f"INSERT INTO {wh}({WORLD}, {SEQ}, {TIME}, {OP}, {stored_kcols}) "
        f"SELECT {world}, {CLOCK}, {NOW}, 0, {', '.join(key)} WHERE {go}"
        if fresh
        else remember(t, n, world, key, f"WHERE {go}")
    )
    return [
        before,
        f"INSERT INTO {o}({WORLD}, {SEQ}, {DEAD}, {', '.join(cols)}) "
        f"SELECT {world}, {CLOCK}, 0, {', '.join(vals)} WHERE {go}"
        f"{upsert_clause(t, False)}",
        # the connection's materialized tables (world.state) follow the entry just written
        *(
            [
                f"INSERT INTO temp.{hidden_table(n)}({kcols}) SELECT {', '.join(key)} "
                f"WHERE {go} ON CONFLICT DO NOTHING"
            ]
            if hidden and not fresh
            else []
        ),
        f"INSERT INTO temp.{live_table(n)}({', '.join(names)}) SELECT {', '.join(sources)} "
        f"FROM {o} WHERE {WORLD} = {world} AND {same} AND {go} "
        f"ON CONFLICT ({kcols}) DO UPDATE SET {sets}",
    ]


def tombstone(
    t: TableInfo, n: int, world: int, keys: list[str], tail: str, hidden: bool = True
) -> list[str]:
    """Tombstones for the keys ``keys`` (expressions) of the rows ``tail`` (a WHERE clause, or
    a FROM ... WHERE clause) selects (``hidden``: main's rows of them hidden: see write_row)."""
    o = f"main.{overlay_table(n)}"
    kcols = ", ".join(quote_ident(c) for c in t.key_cols)  # (the TEMP tables': the world's names)
    stored_kcols = t.stored_list(columns=list(t.key_cols))
    return [
        remember(t, n, world, keys, tail),
        f"INSERT INTO {o}({WORLD}, {SEQ}, {DEAD}, {stored_kcols}) "
        f"SELECT {world}, {CLOCK}, 1, {', '.join(keys)} {tail}{upsert_clause(t, True)}",
        *(
            [
                f"INSERT INTO temp.{hidden_table(n)}({kcols}) SELECT {', '.join(keys)} {tail} "
                f"ON CONFLICT DO NOTHING"
            ]
            if hidden
            else []
        ),
        f"DELETE FROM temp.{live_table(n)} WHERE ({kcols}) IN (SELECT {', '.join(keys)} {tail})",
    ]


def remember_entry(conn, t: TableInfo, n: int, world: int, key: tuple, seq: int) -> None:
    """The world's history, from Python: a key's entry as it is before chronos rewrites it
    (a partial merge settling the world's row)."""
    conn.execute(remember(t, n, world, ["?"] * len(key), "").replace(CLOCK, str(int(seq)), 1), key)


def remember(t: TableInfo, n: int, world: int, keys: list[str], tail: str) -> str:
    """The world's history: the keys' overlay entries (or that there were none) as they are
    before the write that follows."""
    o, wh = f"main.{overlay_table(n)}", f"main.{wh_table(n)}"
    aliases = [f"_k{i}" for i in range(len(keys))]
    picked = ", ".join(f"{k} AS {a}" for k, a in zip(keys, aliases))
    on = " AND ".join(f"_o.{t.col(c)} = _s.{a}" for c, a in zip(t.key_cols, aliases))
    rest = [c for c in t.column_names if c not in t.key_cols]
    cols = t.stored_list(columns=[*t.key_cols, *rest])
    values = ", ".join([*(f"_s.{a}" for a in aliases), *(f"_o.{t.col(c)}" for c in rest)])
    return (
        f"INSERT INTO {wh}({WORLD}, {SEQ}, {TIME}, {OP}, {DEAD}, {cols}) "
        f"SELECT {world}, {CLOCK}, {NOW}, _o.{WORLD} IS NOT NULL, _o.{DEAD}, {values} "
        f"FROM (SELECT {picked} {tail}) AS _s LEFT JOIN {o} AS _o "
        f"ON _o.{WORLD} = {world} AND {on}"
    )


def computed(t: TableInfo, values: dict[str, str]) -> list[tuple[Column, str]]:
    """The table's generated columns, each as an expression over the row's values (``values``:
    each writable column's), so the overlay entry holds what SQLite would compute: diff, merge
    preview and undo read the row as main would hold it. One that reads another is computed
    after it; one that reads the rowid (or can't be ordered) is left out: NULL in the entry, as
    before (the world's views compute every one anyway)."""
    known = {c.name.lower(): (c.name, values[c.name]) for c in t.writable}
    waiting = [c for c in t.columns if c.generated and c.expression]
    generated = {c.name.lower() for c in waiting}
    out: list[tuple[Column, str]] = []
    while waiting:
        ready = [c for c in waiting if _reads(c) & (generated | ROWID_NAMES) <= set(known)]
        if not ready:
            break
        for c in ready:
            row = ", ".join(f"{value} AS {quote_ident(name)}" for name, value in known.values())
            value = f"(SELECT {c.expression} FROM (SELECT {row}))"
            known[c.name.lower()] = (c.name, value)
            out.append((c, value))
            waiting.remove(c)
    return out


def _reads(c: Column) -> set[str]:
    """The words of a generated column's expression (its columns among them), lower-case."""
    return {text.lower() for text, kind, _s, _e in tokens(c.expression or "") if kind in WORDS}
