"""A world's table as a real TEMP table: SQLite itself keeps its rules, chronos only records.

A whole copy (``world.state``) of a table whose rules SQLite can keep on a TEMP table alone is
made as a TEMP table named like the app's, declared as the app declared it (its columns,
defaults, NOT NULL, CHECK, collations, generated columns, key, STRICT, WITHOUT ROWID), with
main's indexes mirrored under their own names. The name resolves to it before main's table, so
a statement reads and writes it as it would main's: SQLite plans, checks and writes it natively
(conflict clauses, upserts, RETURNING, the rowid in a column list, ``changes()``), and three
trusted AFTER triggers record each row written in the world's overlay and history, as the
INSTEAD OF triggers of an emulated table do (``world.writes``) with every rule besides.

Which tables: those whose rules need nothing outside the TEMP tables (``eligible``): a foreign
key only to and from tables copied natively with it (``group``: SQLite checks a TEMP table's keys
against the TEMP tables of those names; such tables are copied together, parents first, or not
at all), none of the app's triggers (they fire
through chronos' event tables, with main's rules: a world's connection runs
``recursive_triggers`` on, for its own triggers), no column stored under another name, and a
key the overlay keeps: an INTEGER PRIMARY KEY drawing from the shared ``sqlite_sequence``
counter (AUTOINCREMENT, which chronos gives the tables it adopts), or the primary key of a
WITHOUT ROWID table (a rowid table's copy would number main's rows anew). UNIQUE rules (the
table's constraints, its unique indexes, partial ones too) are the copy's own: a REPLACE that
deletes the rows in the way fires the copy's DELETE trigger (``recursive_triggers`` is on), so
their tombstones are recorded too.

New keys: SQLite gives an AUTOINCREMENT table's new row one past ``temp.sqlite_sequence`` (and
past its rows), so that counter is brought up to main's shared one when the copy is made and as
each statement begins (a trigger on the statement context's ``mode``, which every write sets);
each row written moves main's past its key, so worlds never take the same one.
"""

from __future__ import annotations

from ...sqltext import quote_ident, quote_literal, tokens
from ..schema.catalog import TableInfo
from ..shadow import DEAD, SEQ, WORLD, overlay_table
from .context import CLOCK, CTX
from .overlay import remember, upsert_clause
from .state import index_head, mirror
from .writes import WorldTable, trigger_name

SUFFIXES = ("ni", "nu", "nk", "nd", "ns")


def eligible(wt: WorldTable) -> bool:
    """Whether SQLite can keep every rule of the table on a TEMP table alone (see the module)."""
    return not linked(wt) and _keeps_alone(wt)


def linked(wt: WorldTable) -> bool:
    """Whether a foreign key links the table to another (or to itself)."""
    return bool(wt.links or wt.referenced)


def group(writers: dict[int, WorldTable], n: int) -> list[int] | None:
    """Table ``n`` and every table a foreign key links it to, directly or through others,
    parents before their children: the tables copied natively together. None where they can't
    be: a key to a table the branch hasn't or to columns that are no key, a loop of keys (a
    table referencing itself included), a table whose other rules a TEMP table can't keep."""
    by_lower = {wt.t.name.lower(): m for m, wt in writers.items()}
    members: set[int] = set()
    parents: dict[int, set[int]] = {}
    todo = [n]
    while todo:
        m = todo.pop()
        if m in members:
            continue
        members.add(m)
        wt = writers[m]
        if not _keeps_alone(wt) or wt.t.name != wt.t.stored:
            return None
        for lk in (*wt.links, *wt.referenced):
            child, parent = by_lower.get(lk.fk.child.lower()), by_lower.get(lk.fk.parent.lower())
            if child is None or parent is None or child == parent or lk.mismatch is not None:
                return None
            parents.setdefault(child, set()).add(parent)
            todo += [child, parent]
    order: list[int] = []
    while len(order) < len(members):
        ready = sorted(m for m in members - set(order) if parents.get(m, set()) <= set(order))
        if not ready:
            return None  # (a loop)
        order += ready
    return order


def _keeps_alone(wt: WorldTable) -> bool:
    """Whether the table's rules but its foreign keys need nothing beside a TEMP table."""
    t = wt.t
    if wt.events is not None or t.fts_content or t.renamed:
        return False
    if t.key_kind == "int":
        return t.autoincrement and _body(t) is not None
    # (a rowid table's copy would give main's rows rowids of its own: a view says it has none)
    return t.without_rowid and _body(t) is not None


def _body(t: TableInfo) -> str | None:
    """The table's definition from its column list on (``(a, b, ...) STRICT``)."""
    for text, kind, start, _end in tokens(t.sql):
        if (text, kind) == ("(", "punct"):
            return t.sql[start:]
    return None


def table_ddl(t: TableInfo) -> str:
    body = _body(t)
    assert body is not None  # (an eligible table's)
    return f"CREATE TEMP TABLE {quote_ident(t.name)}{body}"


def index_ddl(t: TableInfo, indexes: list[str]) -> list[str]:
    """Main's indexes of the table, on the copy under their own names (``INDEXED BY`` names
    them)."""
    out = []
    for sql in indexes:
        head = index_head(sql)
        made = mirror(sql, head[0], quote_ident(t.name), unique=head[1]) if head else None
        if made:
            out.append(made)
    return out


def counter_sync(t: TableInfo) -> str:
    """Bring the copy's own counter of new keys up to main's shared one."""
    named = quote_literal(t.stored)
    shared = f"coalesce((SELECT seq FROM main.sqlite_sequence WHERE name = {named}), 0)"
    return (
        f"UPDATE temp.sqlite_sequence SET seq = {shared} WHERE name = {quote_literal(t.name)} "
        f"AND seq < {shared}"
    )


def start_counter(t: TableInfo) -> list[str]:
    """The copy's counter row (SQLite makes it at its first insert only), then brought up."""
    if t.key_kind != "int":
        return []
    name = quote_literal(t.name)
    return [
        f"INSERT INTO temp.sqlite_sequence(name, seq) SELECT {name}, 0 "
        f"WHERE NOT EXISTS (SELECT 1 FROM temp.sqlite_sequence WHERE name = {name})",
        counter_sync(t),
    ]


def triggers(wt: WorldTable) -> list[str]:
    """The trusted triggers recording the copy's writes (made once its rows are in)."""
    t, n = wt.t, wt.n
    on = f"ON temp.{quote_ident(t.name)}"
    new = [f"NEW.{quote_ident(c)}" for c in t.key_cols]
    old = [f"OLD.{quote_ident(c)}" for c in t.key_cols]
    moved = f"{_row(old)} IS NOT {_row(new)}"
    written = [*_remember_keys(wt, new), _entry(wt)]
    keys = ", ".join(quote_ident(c) for c in t.key_cols)
    out = [
        _trigger(n, "ni", f"AFTER INSERT {on}", [*written, *_counter_follows(t)]),
        # (UPDATE OF the key: SQLite compiles it only into statements that set the key)
        _trigger(
            n,
            "nu",
            f"AFTER UPDATE OF {keys} {on} WHEN {moved}",
            [*_remember_keys(wt, old), _tombstone(wt, old), *written, *_counter_follows(t)],
        ),
        _trigger(n, "nk", f"AFTER UPDATE {on} WHEN NOT ({moved})", written),
        _trigger(n, "nd", f"AFTER DELETE {on}", [*_remember_keys(wt, old), _tombstone(wt, old)]),
    ]
    if t.key_kind == "int":
        out.append(_trigger(n, "ns", f"AFTER UPDATE OF mode ON {CTX}", [counter_sync(t)]))
    return out


def trigger_names(n: int) -> list[str]:
    return [trigger_name(n, s) for s in SUFFIXES]


def _trigger(n: int, suffix: str, head: str, steps: list[str]) -> str:
    return f"CREATE TEMP TRIGGER {trigger_name(n, suffix)} {head} BEGIN {'; '.join(steps)}; END"


def _row(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _remember_keys(wt: WorldTable, keys: list[str]) -> list[str]:
    """The world's history: the key's overlay entry as it is before it is written."""
    return [remember(wt.t, wt.n, wt.world, keys, "")]


def _entry(wt: WorldTable) -> str:
    """The row as written (NEW: defaults, affinity, generated columns and key as SQLite made
    them), as the world's overlay entry of its key."""
    t = wt.t
    cols = ", ".join(t.col(c) for c in t.column_names)
    values = ", ".join(f"NEW.{quote_ident(c)}" for c in t.column_names)
    return (
        f"INSERT INTO main.{overlay_table(wt.n)}({WORLD}, {SEQ}, {DEAD}, {cols}) "
        f"VALUES ({wt.world}, {CLOCK}, 0, {values}){upsert_clause(t, False)}"
    )


def _tombstone(wt: WorldTable, old: list[str]) -> str:
    t = wt.t  # (WHERE 1: an upsert's SELECT needs one, or ON would read as a join's)
    keys = t.stored_list(columns=list(t.key_cols))
    return (
        f"INSERT INTO main.{overlay_table(wt.n)}({WORLD}, {SEQ}, {DEAD}, {keys}) "
        f"SELECT {wt.world}, {CLOCK}, 1, {', '.join(old)} WHERE 1{upsert_clause(t, True)}"
    )


def _counter_follows(t: TableInfo) -> list[str]:
    """A key written past main's shared counter moves it (no other world takes the key)."""
    if t.key_kind != "int":
        return []
    key = f"NEW.{quote_ident(t.pk[0])}"
    return [
        f"UPDATE main.sqlite_sequence SET seq = {key} WHERE name = {quote_literal(t.stored)} "
        f"AND seq < {key}"
    ]
