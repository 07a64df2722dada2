"""A world's changes counted and paged in SQL (diff, merge_preview, reviews, worlds).

A page of a diff or a preview costs what the page holds plus counts done in SQL, not the whole
change set in Python. One query per table finds the overlay entries that are changes (the
entry differs from the row as the world forked: ``changes.py``'s base, read by the same joins),
each with its kind and whether the parent wrote the row since the fork; counts are its
aggregates, and a page is its keys in diff's order (deletes, updates, inserts; by table; by key)
with LIMIT and OFFSET. Only the page's rows become ``Change`` objects (``world_changes`` for
those keys), so both agree row for row. SQLite's progress handler holds every query to the
call's time and memory limits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import cast

from .. import progress
from ..sqltext import quote_ident
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.schema.catalog import TableInfo
from ..storage.shadow import DEAD, OP, SEQ, WORLD, history_table, overlay_table
from ..storage.worlds import World
from .changes import Change, world_changes

KINDS = ("delete", "update", "insert")  # diff's order: what each table loses first


def _copy_columns(t: TableInfo, alias: str) -> list[str]:
    """The columns of a stored copy of the rows (overlay, history), under ``alias``."""
    return [f"{alias}.{t.col(c)}" for c in t.column_names]


def _main_columns(t: TableInfo, alias: str) -> list[str]:
    """The columns of main's own table, as ``TableInfo.main_columns`` reads them."""
    out = []
    for c in t.columns:
        if c.name in t.world_columns:  # (a column the world added: main's rows read its default)
            out.append(c.default if c.default is not None else "NULL")
        elif t.fts_content or c.stored:
            out.append(f"{alias}.{t.source(c.name)}")
        else:
            out.append(f"{alias}.{quote_ident(c.name)}")
    return out


def _alike(left: list[str], right: list[str]) -> str:
    """Two rows hold the same values, as Python's ``==`` on them says (byte for byte for text:
    a column's own collation doesn't count)."""
    return " AND ".join(f"{a} IS {b} COLLATE BINARY" for a, b in zip(left, right))


class TableQuery:
    """One table's changes as SQL: ``rows`` selects (kind, parent_changed, key values...)."""

    def __init__(
        self, world: World, parent: Session, n: int, t: TableInfo, there: bool, theirs: bool
    ):
        self.n, self.t = n, t
        self.width = len(t.key_cols)
        o, h = f"main.{overlay_table(n)}", f"main.{history_table(n)}"
        keys = [t.col(c) for c in t.key_cols]

        def on(alias: str, other: str) -> str:
            return " AND ".join(f"{alias}.{k} = {other}.{k}" for k in keys)

        if t.key_kind == "rowid":
            live_on, live_here = f"m.rowid = e.{keys[0]}", "m.rowid IS NOT NULL"
        else:
            live_on = " AND ".join(f"m.{t.col(c)} = e.{t.col(c)}" for c in t.pk)
            live_here = f"m.{t.col(t.pk[0])} IS NOT NULL"
        ours = _copy_columns(t, "e")
        frozen, past = f"fz.{WORLD} IS NOT NULL", f"hb.{OP} IS NOT NULL"
        has_base = (
            f"(CASE WHEN {frozen} THEN NOT fz.{DEAD} WHEN {past} THEN hb.{OP} = 1 "
            f"ELSE {live_here} END)"
        )
        alive = f"NOT e.{DEAD}"
        same = (
            f"CASE WHEN {frozen} THEN (CASE WHEN fz.{DEAD} THEN e.{DEAD} "
            f"ELSE {alive} AND {_alike(ours, _copy_columns(t, 'fz'))} END) "
            f"WHEN {past} THEN (CASE WHEN hb.{OP} = 1 THEN {alive} AND "
            f"{_alike(ours, _copy_columns(t, 'hb'))} ELSE e.{DEAD} END) "
            f"WHEN {live_here} THEN {alive} AND {_alike(ours, _main_columns(t, 'm'))} "
            f"ELSE e.{DEAD} END"
        )
        kind = f"CASE WHEN e.{DEAD} THEN 0 WHEN {has_base} THEN 1 ELSE 2 END"
        self.params: dict[str, int] = {
            "world": world.id,
            "frozen": -world.id,
            "fork": world.fork_seq,
            "horizon": world.base.get(n, 0),
        }
        fresh = f"{int(t.key_kind == 'rowid')} AND NOT {has_base}"  # (a new row, hidden key)
        if not theirs:  # (a diff: what the parent did doesn't count)
            changed = "0"
        elif parent.world is None:  # main: its history after the base (``_parent_changed``;
            # from the fork's horizon, that is the history row the base was read from)
            changed = (
                f"CASE WHEN {frozen} THEN EXISTS (SELECT 1 FROM {h} AS h3 WHERE "
                f"{on('h3', 'e')} AND h3.{SEQ} > fz.{SEQ}) ELSE {past} END"
            )
        elif there:  # a world: its own entry written after the fork and the base
            self.params["parent"] = parent.world.id
            changed = (
                f"EXISTS (SELECT 1 FROM {o} AS p WHERE p.{WORLD} = :parent AND {on('p', 'e')} "
                f"AND p.{SEQ} > max(:fork, coalesce(fz.{SEQ}, 0)))"
            )
        else:  # (a table the parent doesn't have yet)
            changed = "0"
        self.outputs = [f"k{i}" for i in range(self.width)]
        joined = (
            f" FROM {o} AS e "
            f"LEFT JOIN {o} AS fz ON fz.{WORLD} = :frozen AND {on('fz', 'e')} "
            f"LEFT JOIN {h} AS hb ON hb.{SEQ} = (SELECT min(h2.{SEQ}) FROM {h} AS h2 "
            f"WHERE {on('h2', 'e')} AND h2.{SEQ} > :horizon) "
            f"LEFT JOIN main.{quote_ident(t.stored)} AS m ON {live_on} "
            f"WHERE e.{WORLD} = :world AND e.{SEQ} > :fork"
        )
        self.rows = (
            f"SELECT kind, changed, {', '.join(self.outputs)} FROM ("
            f"SELECT {kind} AS kind, CASE WHEN {fresh} THEN 0 ELSE {changed} END AS changed, "
            f"{same} AS same, "
            + ", ".join(f"e.{k} AS k{i}" for i, k in enumerate(keys))
            + f"{joined}) WHERE NOT same"
        )
        # per column: whether a change writes it (an update that changed it; any delete or insert)
        bases = zip(_copy_columns(t, "fz"), _copy_columns(t, "hb"), _main_columns(t, "m"))
        differs = [
            f"{mine} IS NOT (CASE WHEN {frozen} THEN {fz} WHEN {past} THEN {hb} ELSE {m} END) "
            f"COLLATE BINARY"
            for mine, (fz, hb, m) in zip(ours, bases, strict=True)
        ]
        self.columns = (
            "SELECT max(kind <> 1), "
            + ", ".join(f"max(kind = 1 AND d{i})" for i in range(len(differs)))
            + f" FROM (SELECT {kind} AS kind, {same} AS same, "
            + ", ".join(f"{d} AS d{i}" for i, d in enumerate(differs))
            + f"{joined}) WHERE NOT same"
        )


class ChangeSet:
    """A world's changes against ``parent`` (``tables``: only those), counted in SQL per table,
    kind and (``theirs``) whether the parent changed the row; read a page at a time."""

    def __init__(
        self,
        db: Database,
        world: World,
        parent: Session,
        tables: set[str] | None = None,
        theirs: bool = True,
    ):
        self.db, self.world, self.parent, self.tables = db, world, parent, tables
        on_parent = {n for n, _t in db.tables_for(parent.world, parent.conn).values()}
        self.queries: dict[str, TableQuery] = {
            name: TableQuery(world, parent, n, t, n in on_parent, theirs)
            for name, (n, t) in sorted(db.tables_for(world).items())
            if tables is None or name in tables
        }
        # table -> (kind, parent changed) -> rows
        self.counts: dict[str, Counter] = {}
        counting = f"counting {world.name}'s changes: tables counted"
        for done, (name, q) in enumerate(self.queries.items()):
            progress.report(counting, done, len(self.queries))
            counts: Counter = Counter()
            for kind, changed, rows in parent.conn.execute(
                f"SELECT kind, changed, count(*) FROM ({q.rows}) GROUP BY kind, changed", q.params
            ):
                counts[(KINDS[cast(int, kind)], bool(changed))] = rows
            if counts:
                self.counts[name] = counts
        progress.report(counting, len(self.queries), len(self.queries))

    def per_kind(self, table: str) -> Counter:
        """The table's changes by kind (delete, update, insert)."""
        out: Counter = Counter()
        for (kind, _changed), n in self.counts.get(table, Counter()).items():
            out[kind] += n
        return out

    def changed_columns(self) -> list[tuple[str, str]]:
        """(table, column) of each column the changes write, by table, in the table's order:
        every column of a table with a row deleted or inserted, else those an update changed
        (one aggregate per table, no row read into Python)."""
        out = []
        for table in sorted(self.counts):
            q = self.queries[table]
            whole, *each = one_row(self.parent.conn.execute(q.columns, q.params))
            out += [(table, c) for c, d in zip(q.t.column_names, each) if whole or d]
        return out

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def keys(
        self, table: str, kind: int, offset: int = 0, limit: int = -1, changed: bool = False
    ) -> Iterator[tuple]:
        """The keys of a table's changes of one kind, in key order (``changed``: only those
        the parent changed too)."""
        q = self.queries[table]
        order = ", ".join(f"{k} COLLATE BINARY" for k in q.outputs)
        both = " AND changed" if changed else ""
        for row in self.parent.conn.execute(
            f"SELECT {', '.join(q.outputs)} FROM ({q.rows}) WHERE kind = :kind{both} "
            f"ORDER BY {order} LIMIT :limit OFFSET :offset",
            {**q.params, "kind": kind, "limit": limit, "offset": offset},
        ):
            yield tuple(row)

    def page_keys(self, offset: int, limit: int) -> dict[str, list[tuple]]:
        """The keys of changes ``offset`` to ``offset + limit`` in diff's order, by table."""
        out: dict[str, list[tuple]] = {}
        at, left = 0, limit
        for kind_no, kind in enumerate(KINDS):
            for table in sorted(self.counts):
                size = self.per_kind(table)[kind]
                if left <= 0:
                    return out
                if at + size <= offset or size == 0:
                    at += size
                    continue
                start = max(offset - at, 0)
                got = list(self.keys(table, kind_no, start, left))
                out.setdefault(table, []).extend(got)
                left -= len(got)
                at += size
        return out

    def page(self, offset: int, limit: int, other: bool = False) -> list[Change]:
        """Changes ``offset`` to ``offset + limit`` in diff's order, each read as
        ``world_changes`` reads it."""
        wanted = self.page_keys(offset, limit)
        if not wanted:
            return []
        found = world_changes(self.db, self.world, self.parent, self.tables, other, wanted)
        return ordered(found)


def ordered(changes: list[Change]) -> list[Change]:
    """Deletes first (what each table loses), then updates, then inserts; by table, by key."""
    return sorted(changes, key=lambda c: (KINDS.index(c.kind), c.table, c.key))
