"""The views that read a branch as it was: main as of a history position (``main_as_of``:
``main@when``, ``AS OF``), and a world at a moment (``world_at``: ``w@when``), from main's
history and the worlds' history. Plain SQL on indexed tables: a point lookup is a few probes.
A world as it is now reads through ``world.state``'s views; its writes are ``world.writes``'.
"""

from __future__ import annotations

from ...sqltext import quote_ident
from ..schema.catalog import ROWID_COL, TableInfo
from ..shadow import DEAD, OP, SEQ, TIME, WORLD, history_table, overlay_table, world_history_table


def key_view(n: int) -> str:
    return f"_chronos_k{n}"


def _cols(t: TableInfo, prefix: str = "") -> str:
    """The columns of a shadow row (history), by the world's names."""
    return ", ".join(
        f"{prefix}{t.col(c)} AS {quote_ident(c)}" if t.renamed else prefix + quote_ident(c)
        for c in t.column_names
    )


def _same_key(t: TableInfo, left: str, right: str) -> str:
    """Shadow row ``left`` and shadow row ``right`` hold the same key."""
    return " AND ".join(f"{left}.{t.col(c)} = {right}.{t.col(c)}" for c in t.key_cols)


def _main_row_is(t: TableInfo, shadow: str) -> str:
    """Shadow row ``shadow`` holds the key of the live main row ``_m``."""
    if t.key_kind == "rowid":
        return f"{shadow}.{quote_ident(ROWID_COL)} = _m.rowid"
    return " AND ".join(f"{shadow}.{t.col(c)} = _m.{t.col(c)}" for c in t.pk)


def main_as_of(t: TableInfo, n: int, seq: int, with_rowid: bool = False) -> str:
    """Main's rows of ``t`` as of history position ``seq``: its live rows that no change since
    touched, and the images of the rows changed since, as they were at ``seq``.

    The check against history is a correlated index probe, so a point lookup costs a few
    probes; it is guarded by a test SQLite evaluates once per statement, so a table main did
    not change since reads at the speed of main.
    """
    h = f"main.{history_table(n)}"
    rowid = f", _m.rowid AS {quote_ident(ROWID_COL)}" if with_rowid else ""
    unchanged = (
        f"((SELECT coalesce(max({SEQ}), 0) FROM {h}) <= {seq} OR NOT EXISTS "
        f"(SELECT 1 FROM {h} AS h WHERE {_main_row_is(t, 'h')} AND h.{SEQ} > {seq}))"
    )
    live = (
        f"SELECT {t.main_columns('_m.')}{rowid} FROM main.{quote_ident(t.stored)} AS _m "
        f"WHERE {unchanged}"
    )
    past = (
        f"SELECT {_cols(t, 'h.')}{', h.' + quote_ident(ROWID_COL) if with_rowid else ''} "
        f"FROM {h} AS h WHERE h.{SEQ} > {seq} AND h.{OP} = 1 "
        f"AND NOT EXISTS (SELECT 1 FROM {h} AS h2 WHERE {_same_key(t, 'h2', 'h')} "
        f"AND h2.{SEQ} > {seq} AND h2.{SEQ} < h.{SEQ})"
    )
    return f"{live} UNION ALL {past}"


def in_key_order(t: TableInfo, select: str, with_rowid: bool = False) -> str:
    """A past view's rows in key order, as a scan of the table gives them (its rows unchanged
    since come first, then those changed since: out of order). SQLite drops the ORDER BY where
    the query orders, groups or aggregates by itself, and pushes a WHERE down past it."""
    keys = (ROWID_COL,) if t.key_kind == "rowid" else t.pk
    if t.key_kind == "rowid" and not with_rowid:
        return select  # (no key to order by: a table without one has none to show)
    return f"SELECT * FROM ({select}) ORDER BY {', '.join(quote_ident(k) for k in keys)}"


class Clock(int):
    """A moment given as the world clock's value rather than a time: exact, as writes tick the
    clock inside their transactions, in the order they commit (a backup's moment)."""


def world_at(
    t: TableInfo, n: int, world: int, seq: int, at: float, with_rowid: bool = False
) -> str:
    """The world's rows as they were at moment ``at`` (a time, or a ``Clock``).

    The world's entry for a key then is its first history record after ``at`` (the entry as it
    was before that change, or that there was none), else its entry now. Keys without an entry
    then read main as of the world's fork, as the world's view does.
    """
    o, h = f"main.{overlay_table(n)}", f"main.{history_table(n)}"
    wh = f"main.{world_history_table(n)}"
    when = str(int(at)) if isinstance(at, Clock) else repr(float(at))
    by = SEQ if isinstance(at, Clock) else TIME  # (the column a moment is read by)

    def had_entry(match) -> str:
        # Overlay entries are only ever rewritten (each rewrite recorded first), never deleted
        # while the world's history reads true: a key with no entry now had none then, and the
        # history probe is needed only for keys that have one (most main rows have none).
        return (
            f"(EXISTS (SELECT 1 FROM {o} AS o WHERE o.{WORLD} = {world} AND {match('o')}) AND "
            f"coalesce((SELECT x.{OP} FROM {wh} AS x WHERE x.{WORLD} = {world} AND {match('x')} "
            f"AND x.{by} > {when} ORDER BY x.{by}, x.rowid LIMIT 1), 1))"
        )

    rowid = f", _m.rowid AS {quote_ident(ROWID_COL)}" if with_rowid else ""
    unchanged = (
        f"((SELECT coalesce(max({SEQ}), 0) FROM {h}) <= {seq} OR NOT EXISTS "
        f"(SELECT 1 FROM {h} AS h WHERE {_main_row_is(t, 'h')} AND h.{SEQ} > {seq}))"
    )
    live = (
        f"SELECT {t.main_columns('_m.')}{rowid} FROM main.{quote_ident(t.stored)} AS _m "
        f"WHERE NOT {had_entry(lambda a: _main_row_is(t, a))} AND {unchanged}"
    )
    hidden = f", h.{quote_ident(ROWID_COL)}" if with_rowid else ""
    past = (
        f"SELECT {_cols(t, 'h.')}{hidden} FROM {h} AS h WHERE h.{SEQ} > {seq} AND h.{OP} = 1 "
        f"AND NOT EXISTS (SELECT 1 FROM {h} AS h2 WHERE {_same_key(t, 'h2', 'h')} "
        f"AND h2.{SEQ} > {seq} AND h2.{SEQ} < h.{SEQ}) "
        f"AND NOT {had_entry(lambda a: _same_key(t, a, 'h'))}"
    )
    own_cols = t.own_columns(with_rowid, stored=True)
    now = (
        f"SELECT {own_cols} FROM {o} AS e WHERE e.{WORLD} = {world} AND e.{DEAD} = 0 "
        f"AND NOT EXISTS (SELECT 1 FROM {wh} AS x WHERE x.{WORLD} = {world} "
        f"AND {_same_key(t, 'x', 'e')} AND x.{by} > {when})"
    )
    then = (
        f"SELECT {own_cols} FROM {wh} AS x WHERE x.{WORLD} = {world} AND x.{by} > {when} "
        f"AND x.{OP} = 1 AND x.{DEAD} = 0 AND NOT EXISTS (SELECT 1 FROM {wh} AS y "
        f"WHERE y.{WORLD} = {world} AND {_same_key(t, 'y', 'x')} AND y.{by} > {when} "
        f"AND (y.{by} < x.{by} OR (y.{by} = x.{by} AND y.rowid < x.rowid)))"
    )
    return f"{live} UNION ALL {past} UNION ALL {now} UNION ALL {then}"
