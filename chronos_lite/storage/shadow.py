"""Main's side of the storage: chronos' own tables, and the shadow objects of each user table.

Every user table ``T`` gets, under a stable number ``n`` (so hostile or renamed table names
never reach our own object names):

* ``_chronos_h_n``: history. One row per change to a main row, holding the row's image *before*
  the change (``_chronos_op`` 1) or the fact that it did not exist (``_chronos_op`` 0). Its
  ``seq`` (the table's rowid) orders the table's changes. The row as of seq ``S`` is the first
  history record after ``S`` for its key, or the live row if there is none.
* ``_chronos_o_n``: the worlds' overlay. (world, key) → the world's row, or a tombstone.
* Triggers on ``T`` that write history. They are pure SQL stored in the file, so an app that
  writes main through the stdlib ``sqlite3`` module is versioned the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw

from ..sqltext import comma_parts, name_tokens, quote_ident, quote_literal
from .fetch import all_rows, one_row
from .governance import (
    agents,
    audit,
    holds,
    readers,
    reads,
    reviews,
)
from .governance import (
    checks as mergechecks,
)
from .governance import (
    policies as mergepolicies,
)
from .schema.catalog import PREFIX, ROWID_COL, TableInfo, table_info

SEQ, OP, TIME = "_chronos_seq", "_chronos_op", "_chronos_time"
# History seqs are per table and only grow: the pruner (with retention) keeps each table's
# newest history row, so a table's max seq never goes back and a fork's horizon stays valid.
WORLD, DEAD = "_chronos_world", "_chronos_dead"
NOW = "((julianday('now') - 2440587.5) * 86400.0)"
FORMAT_VERSION = 1

BASE_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS _chronos_meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _chronos_clock(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
INSERT OR IGNORE INTO _chronos_clock VALUES (1, 0);
CREATE TABLE IF NOT EXISTS _chronos_tables(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    columns TEXT NOT NULL,
    dropped INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS _chronos_worlds(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    wid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    parent INTEGER REFERENCES _chronos_worlds(id),
    base TEXT NOT NULL,
    fork_seq INTEGER NOT NULL,
    owner TEXT NOT NULL,
    meta TEXT NOT NULL DEFAULT '{{}}',
    version INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'open',
    ended REAL,
    merging REAL,  -- when a merge of it started; cleared by the merge's own commit
    rebased REAL   -- when it was last rebased (its history reads true from then on)
);
CREATE UNIQUE INDEX IF NOT EXISTS _chronos_worlds_open_name ON _chronos_worlds(name)
    WHERE state = 'open';
CREATE INDEX IF NOT EXISTS _chronos_worlds_parent ON _chronos_worlds(parent)
    WHERE state = 'open';
CREATE TABLE IF NOT EXISTS _chronos_counters(table_id INTEGER PRIMARY KEY, hi INTEGER NOT NULL);
-- What happened to each branch (see events.py).
CREATE TABLE IF NOT EXISTS _chronos_events(
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    world INTEGER NOT NULL,      -- 0: main
    kind TEXT NOT NULL,          -- fork, write, schema, merge, merged, rebase, restore, ...
    actor TEXT NOT NULL,         -- owner, mcp, an agent; app: a direct write to main
    run TEXT,                    -- the caller's run id, if it gave one
    rows INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '{{}}'
);
CREATE INDEX IF NOT EXISTS _chronos_events_world ON _chronos_events(world, id);
-- Each merge's rows as the parent had them before and after (undo_merge).
CREATE TABLE IF NOT EXISTS _chronos_merge_rows(
    event INTEGER NOT NULL,      -- the merge's event on the parent
    table_id INTEGER NOT NULL,
    key TEXT,                    -- JSON array; NULL: a keyless row whose new rowid isn't known
    before TEXT,                 -- JSON row; NULL: no row
    after TEXT
);
CREATE INDEX IF NOT EXISTS _chronos_merge_rows_event ON _chronos_merge_rows(event);
-- Named moments of branches (world 0: main), for rollback.
CREATE TABLE IF NOT EXISTS _chronos_checkpoints(
    world INTEGER NOT NULL,
    name TEXT NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (world, name)
) WITHOUT ROWID;
-- Schema changes made on worlds, not merged yet (see world/schema.py).
CREATE TABLE IF NOT EXISTS _chronos_schema(
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- a new id whenever an op changes hands
    world INTEGER NOT NULL,
    clock INTEGER NOT NULL,  -- the world clock when the world made it (or got it by a merge)
    kind TEXT NOT NULL,      -- create | add | drop
    table_id INTEGER NOT NULL,
    name TEXT NOT NULL,      -- the table's name when the op was made
    detail TEXT NOT NULL     -- JSON: the CREATE statement's text after the name; for add,
                             -- the column's definition and description
);
INSERT OR IGNORE INTO _chronos_meta VALUES ('format', {FORMAT_VERSION});
"""


def history_table(n: int) -> str:
    return f"_chronos_h_{n}"


def overlay_table(n: int) -> str:
    return f"_chronos_o_{n}"


def world_history_table(n: int) -> str:
    return f"_chronos_wh_{n}"


def shadow_tables(n: int) -> tuple[str, str, str]:
    """The tables that follow a user table's columns: history, overlay, worlds' history."""
    return history_table(n), overlay_table(n), world_history_table(n)


def install_base(conn: apsw.Connection) -> None:
    conn.execute(BASE_SCHEMA)
    conn.execute(agents.DDL)
    conn.execute(audit.DDL)
    conn.execute(mergechecks.DDL)
    conn.execute(mergepolicies.DDL)
    conn.execute(reviews.DDL)
    conn.execute(holds.DDL)
    conn.execute(readers.DDL)
    conn.execute(reads.DDL)


# --- main's triggers -------------------------------------------------------------------------


def _key_values(t: TableInfo, row: str) -> list[str]:
    if t.key_kind == "rowid":
        return [f"{row}.rowid"]
    return [f"{row}.{quote_ident(c)}" for c in t.pk]


def _history_insert(t: TableInfo, n: int, row: str, where: str = "") -> str:
    """INSERT of ``row``'s image (OLD, or rows selected as ``row``) into history."""
    cols = [quote_ident(c) for c in t.column_names]
    vals = [f"{row}.{t.source(c)}" for c in t.column_names]
    if t.key_kind == "rowid":
        cols.append(quote_ident(ROWID_COL))
        vals.append(f"{row}.rowid")
    head = f"INSERT INTO {history_table(n)}({OP}, {TIME}, {', '.join(cols)}) "
    if where:
        return (
            head
            + f"SELECT 1, {NOW}, {', '.join(vals)} "
            + f"FROM {quote_ident(t.name)} AS {row} WHERE {where}"
        )
    return head + f"VALUES (1, {NOW}, {', '.join(vals)})"


def _absence_insert(t: TableInfo, n: int, row: str, when: str = "") -> str:
    keys = ", ".join(quote_ident(c) for c in t.key_cols)
    vals = ", ".join(_key_values(t, row))
    return f"INSERT INTO {history_table(n)}({OP}, {TIME}, {keys}) SELECT 0, {NOW}, {vals}" + (
        f" WHERE {when}" if when else ""
    )


def _counter_follows(t: TableInfo, old_key: str, new_key: str) -> str:
    """An UPDATE that moves an integer key up moves the shared counter too, so no id that was
    ever used comes back (AUTOINCREMENT itself only follows inserts)."""
    if t.key_kind != "int":
        return ""
    return (
        f"UPDATE sqlite_sequence SET seq = {new_key} WHERE {old_key} IS NOT {new_key} "
        f"AND name = {quote_literal(t.name)} AND seq < {new_key}; "
    )


def _conflict_conditions(t: TableInfo, new: str) -> list[str]:
    """Conditions finding a live row that an insert of ``new`` would collide with."""
    conds = []
    keysets = ([t.pk] if t.key_kind != "rowid" else []) + list(t.uniques)
    for cols in keysets:
        conds.append(" AND ".join(f"c.{quote_ident(c)} = {new}.{quote_ident(c)}" for c in cols))
    return conds


HISTORY_TRIGGERS = ("ai", "ub", "au", "ad", "bi", "bu")


def trigger_name(n: int, suffix: str) -> str:
    """A history trigger's name: on user table ``n``, for one of HISTORY_TRIGGERS."""
    return f"{PREFIX}t{n}_{suffix}"


def trigger_names(n: int) -> list[str]:
    """Every name main_triggers can give table ``n``'s history triggers."""
    return [trigger_name(n, suffix) for suffix in HISTORY_TRIGGERS]


def main_triggers(t: TableInfo, n: int) -> dict[str, str]:
    """The triggers on a user table that keep its history, by name.

    A history row's seq is its table's own rowid (the next one up), not a shared clock: a clock
    row updated by every main write halved write throughput. A fork records each table's
    latest seq instead.
    """
    q = quote_ident(t.fts_content or t.name)  # (an FTS5 table's rows: its content table's)
    old_key = t.main_key("OLD.")
    new_key = t.main_key("NEW.")
    ai, ub, au, ad, bi, bu = trigger_names(n)
    trig = {
        ai: f"CREATE TRIGGER {ai} AFTER INSERT ON {q} BEGIN {_absence_insert(t, n, 'NEW')}; END",
        # The row's image before an update is kept BEFORE it: an app's AFTER UPDATE trigger
        # that updates the same row (an updated_at stamp) fires before any AFTER trigger of
        # ours could, and its own update's image (the row half changed) would come first.
        ub: f"CREATE TRIGGER {ub} BEFORE UPDATE ON {q} BEGIN {_history_insert(t, n, 'OLD')}; END",
        au: f"CREATE TRIGGER {au} AFTER UPDATE ON {q} BEGIN "
        f"{_absence_insert(t, n, 'NEW', f'{old_key} IS NOT {new_key}')}; "
        f"{_counter_follows(t, old_key, new_key)}END",
        ad: f"CREATE TRIGGER {ad} AFTER DELETE ON {q} BEGIN {_history_insert(t, n, 'OLD')}; END",
    }
    # INSERT OR REPLACE deletes the rows it collides with without firing delete triggers
    # (unless recursive_triggers is on), so their images are kept before the insert.
    conds = _conflict_conditions(t, "NEW")
    if conds:
        any_cond = " OR ".join(f"({c})" for c in conds)
        steps = "".join(f"{_history_insert(t, n, 'c', c)}; " for c in conds)
        trig[bi] = (
            f"CREATE TRIGGER {bi} BEFORE INSERT ON {q} "
            f"WHEN EXISTS (SELECT 1 FROM {q} AS c WHERE {any_cond}) BEGIN {steps}END"
        )
        # UPDATE OR REPLACE of a key or unique column can delete another row the same way.
        keysets = ([t.pk] if t.key_kind != "rowid" else []) + list(t.uniques)
        watched = sorted({c for cols in keysets for c in cols})
        other = f"{t.main_key('c.')} IS NOT {old_key}"
        steps = "".join(f"{_history_insert(t, n, 'c', f'({c}) AND {other}')}; " for c in conds)
        trig[bu] = (
            f"CREATE TRIGGER {bu} BEFORE UPDATE OF {', '.join(map(quote_ident, watched))} "
            f"ON {q} WHEN EXISTS (SELECT 1 FROM {q} AS c WHERE ({any_cond}) AND {other}) "
            f"BEGIN {steps}END"
        )
    return trig


# --- shadow tables ---------------------------------------------------------------------------


def _shadow_columns(t: TableInfo) -> tuple[list[str], str]:
    """A shadow table's copies of the user table's columns (with the hidden rowid's, for a
    table without a primary key), and its key's columns as a list for an index."""
    cols = [f"{quote_ident(c.name)} {c.decltype}".rstrip() for c in t.columns]
    if t.key_kind == "rowid":
        cols.append(f"{quote_ident(ROWID_COL)} INTEGER")
    return cols, ", ".join(quote_ident(c) for c in t.key_cols)


def history_ddl(t: TableInfo, n: int) -> list[str]:
    # Same declared types as main: every arm of a world's view then has the same affinity,
    # so comparisons on the view behave as they do on the real table.
    h = history_table(n)
    cols, keys = _shadow_columns(t)
    return [
        f"CREATE TABLE {h}({SEQ} INTEGER PRIMARY KEY, {OP} INTEGER NOT NULL, "
        f"{TIME} REAL NOT NULL, {', '.join(cols)})",
        f"CREATE INDEX {h}_key ON {h}({keys}, {SEQ})",
    ]


def overlay_ddl(t: TableInfo, n: int) -> list[str]:
    o = overlay_table(n)
    cols, keys = _shadow_columns(t)
    return [
        f"CREATE TABLE {o}({WORLD} INTEGER NOT NULL, {SEQ} INTEGER NOT NULL, "
        f"{DEAD} INTEGER NOT NULL DEFAULT 0, {', '.join(cols)}, "
        f"PRIMARY KEY ({WORLD}, {keys})) WITHOUT ROWID",
        *overlay_unique_indexes(t, n),
    ]


def world_history_ddl(t: TableInfo, n: int) -> list[str]:
    """The worlds' history: an overlay entry's state before each change (``_chronos_op`` 0:
    the world had no entry for the key), stamped with the world clock and the time."""
    wh = world_history_table(n)
    cols, keys = _shadow_columns(t)
    return [
        f"CREATE TABLE IF NOT EXISTS {wh}({WORLD} INTEGER NOT NULL, {SEQ} INTEGER NOT NULL, "
        f"{TIME} REAL NOT NULL, {OP} INTEGER NOT NULL, {DEAD} INTEGER, {', '.join(cols)})",
        f"CREATE INDEX IF NOT EXISTS {wh}_key ON {wh}({WORLD}, {keys}, {TIME})",
        f"CREATE INDEX IF NOT EXISTS {wh}_time ON {wh}({WORLD}, {TIME})",
    ]


def overlay_unique_indexes(t: TableInfo, n: int) -> list[str]:
    o = overlay_table(n)
    out = []
    for cols in t.uniques:
        suffix = "_".join(str(t.column_names.index(c)) for c in cols)
        out.append(
            f"CREATE INDEX IF NOT EXISTS {o}_u{suffix} ON {o}({WORLD}, "
            f"{', '.join(map(quote_ident, cols))})"
        )
    return out


# --- AUTOINCREMENT: the shared counter of INTEGER PRIMARY KEY tables -------------------------


def autoincrement_sql(t: TableInfo) -> str | None:
    """The table's CREATE TABLE text with AUTOINCREMENT added to its INTEGER PRIMARY KEY.

    The b-tree format does not change (the column is the rowid either way); only new rowids
    then come from ``sqlite_sequence``, which worlds draw from too, so ids never collide.
    Returns None when the text has a shape this cannot rewrite safely.
    """
    sql = t.sql
    open_at = sql.find("(")
    close_at = sql.rfind(")")
    if open_at < 0 or close_at < open_at:
        return None
    body = sql[open_at + 1 : close_at]
    parts = comma_parts(body)
    col = t.pk[0].lower()
    col_span = table_pk_span = None
    for start, end in parts:
        words = [w for w, _, _ in name_tokens(body[start:end])]
        upper = [w.upper() for w in words]
        if words and words[0].lower() == col and col_span is None:
            col_span = (start, end)
        elif "PRIMARY" in upper and (upper[0] in ("PRIMARY", "CONSTRAINT")):
            table_pk_span = (start, end)
    if col_span is None:
        return None
    cstart, cend = col_span
    coldef = body[cstart:cend]
    tokens = name_tokens(coldef)
    upper = [w.upper() for w, _, _ in tokens]
    if "PRIMARY" in upper:
        i = upper.index("PRIMARY") + 2  # PRIMARY KEY
        if i < len(upper) and upper[i] in ("ASC", "DESC"):
            i += 1
        if i + 2 < len(upper) + 1 and upper[i : i + 2] == ["ON", "CONFLICT"]:
            i += 3
        insert_at = tokens[i - 1][2]
        new_coldef = coldef[:insert_at] + " AUTOINCREMENT" + coldef[insert_at:]
        new_body = body[:cstart] + new_coldef + body[cend:]
    elif table_pk_span is not None:
        tstart, tend = table_pk_span
        tw = [w.upper() for w, _, _ in name_tokens(body[tstart:tend])]
        if "CONFLICT" in tw or "DESC" in tw:
            return None
        new_coldef = coldef.rstrip() + " PRIMARY KEY AUTOINCREMENT"
        pieces = []
        for start, end in parts:
            if (start, end) == table_pk_span:
                continue
            pieces.append(new_coldef if (start, end) == col_span else body[start:end])
        new_body = ",".join(pieces)
    else:
        return None
    return sql[: open_at + 1] + new_body + sql[close_at:]


def _same_shape(conn: apsw.Connection, t: TableInfo, new_sql: str) -> bool:
    """Check on a scratch database that the rewritten table has the same columns and key."""
    scratch = apsw.Connection(":memory:")
    try:
        scratch.execute(new_sql)
        probe = table_info(scratch, t.name)
    except apsw.Error:
        return False
    finally:
        scratch.close()
    return probe.columns == t.columns and probe.pk == t.pk and probe.key_kind == "int"


def ensure_autoincrement(conn: apsw.Connection, t: TableInfo) -> bool:
    """Make an INTEGER PRIMARY KEY table draw its ids from ``sqlite_sequence``."""
    if t.key_kind != "int":
        return False
    if not t.autoincrement:
        new_sql = autoincrement_sql(t)
        if new_sql is None or not _same_shape(conn, t, new_sql):
            return False
        version = one_row(conn.execute("pragma schema_version"))[0]
        conn.execute("pragma writable_schema = on")
        try:
            conn.execute(
                "update sqlite_schema set sql = ? where type = 'table' and name = ?",
                (new_sql, t.name),
            )
            conn.execute(f"pragma schema_version = {version + 1}")
        finally:
            conn.execute("pragma writable_schema = off")
    q = quote_ident(t.name)
    conn.execute(
        f"insert into sqlite_sequence(name, seq) select ?, "
        f"(select coalesce(max(rowid), 0) from {q}) "
        "where not exists (select 1 from sqlite_sequence where name = ?)",
        (t.name, t.name),
    )
    return True


# A table whose history triggers were made before an update's image was kept BEFORE it
_OLD_HISTORY_TRIGGERS = (
    "select 1 from sqlite_schema as au where au.type = 'trigger' "
    "and au.name glob '_chronos_t*_au' and not exists (select 1 from sqlite_schema as ub "
    "where ub.type = 'trigger' and ub.name = substr(au.name, 1, length(au.name) - 2) || 'ub') "
    "limit 1"
)


def upgrade(conn: apsw.Connection, write: Callable[[apsw.Connection], Any]) -> None:
    """Chronos' own tables added since the file was made (a read when there are none); each
    change in a write transaction (``write``: the database's)."""
    have = all_rows(
        conn.execute(
            "select count(*) from sqlite_schema where name in "
            "('_chronos_schema', '_chronos_checkpoints', '_chronos_events', "
            "'_chronos_merge_rows', '_chronos_agents', '_chronos_audit', "
            "'_chronos_merge_checks', '_chronos_merge_policies', '_chronos_agent_policies', "
            "'_chronos_reviews', '_chronos_fork_scopes', '_chronos_taken_over', "
            "'_chronos_readers', '_chronos_reads')"
        )
    )[0][0]
    if have < 14:
        with write(conn):
            install_base(conn)
    if conn.execute(_OLD_HISTORY_TRIGGERS).fetchall():  # (the next call's sync remakes them)
        with write(conn):
            conn.execute("delete from _chronos_meta where key = 'synced_schema'")
    if not conn.execute(
        "select 1 from pragma_table_info('_chronos_worlds') where name = 'rebased'"
    ).fetchall():
        with write(conn):
            conn.execute("alter table _chronos_worlds add column rebased REAL")
