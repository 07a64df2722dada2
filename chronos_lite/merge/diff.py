"""Diff: what changed on a branch since its fork, as text, as data and as SQL."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import hints
from ..errors import BAD_ARGUMENT, ChronosError
from ..render import SHOWN_CHARS, json_row, json_value, row_json, shown
from ..sqltext import literal, quote_ident
from ..storage.branchref import MAIN, BranchRef
from ..storage.codec import sort_key
from ..storage.db import Database
from ..storage.rows import view_row
from ..storage.schema.catalog import TableInfo
from ..storage.shadow import SEQ, WORLD, history_table, overlay_table
from ..storage.worlds import World
from .changes import Change, check_bounds, iter_changes, world_changes
from .changeset import ChangeSet, ordered
from .schema import Step, steps

ORDER = {"delete": 0, "update": 1, "insert": 2}


class Listed:
    """Changes already read, as a list (``compare``'s)."""

    def __init__(self, changes: list[Change]):
        self.changes = changes

    def per_kind(self) -> dict[str, Counter]:
        counts: dict[str, Counter] = {}
        for c in self.changes:
            counts.setdefault(c.table, Counter())[c.kind] += 1
        return counts

    def page(self, offset: int, limit: int) -> list[Change]:
        return ordered(self.changes)[offset : offset + limit]

    def each(self) -> Iterator[Change]:
        return iter(self.changes)

    def changed_columns(self) -> list[tuple[str, str]]:
        changed: dict[tuple[str, str], None] = {}
        for c in self.changes:
            for col in c.fields if c.kind == "update" else c.t.column_names:
                changed[(c.table, col)] = None
        return list(changed)


class Counted:
    """A world's changes as ``changeset.ChangeSet`` counts and pages them in SQL; all of them
    (``changes``) read only when asked for."""

    def __init__(self, changes: ChangeSet):
        self.set = changes
        self._all: list[Change] | None = None

    @property
    def changes(self) -> list[Change]:
        if self._all is None:
            s = self.set
            self._all = world_changes(s.db, s.world, s.parent, s.tables)
        return self._all

    def per_kind(self) -> dict[str, Counter]:
        return {table: self.set.per_kind(table) for table in self.set.counts}

    def each(self) -> Iterator[Change]:
        """One change at a time (none kept), within the call's time limit."""
        if self._all is not None:
            return iter(self._all)
        s = self.set
        return iter_changes(s.db, s.world, s.parent, s.tables)

    def page(self, offset: int, limit: int) -> list[Change]:
        return self.set.page(offset, limit)

    def changed_columns(self) -> list[tuple[str, str]]:
        return self.set.changed_columns()


@dataclass
class Diff:
    branch: str
    source: Listed | Counted
    schema: list[Step] = field(default_factory=list)  # the world's own schema changes
    unlike: list[str] = field(default_factory=list)  # compare: tables not alike on both sides

    @property
    def changes(self) -> list[Change]:
        """Every change, by table and key (read in full: a page is ``page``)."""
        return self.source.changes

    def each(self) -> Iterator[Change]:
        """Every change, by table and key, one at a time."""
        return self.source.each()

    def ordered(self) -> list[Change]:
        """Deletes first (what each table loses), then updates, then inserts."""
        return ordered(self.changes)

    def page(self, offset: int, limit: int) -> list[Change]:
        """Changes ``offset`` to ``offset + limit`` of ``ordered``."""
        return self.source.page(offset, limit)

    def changed_columns(self) -> list[tuple[str, str]]:
        """(table, column) of each column the changes write."""
        return self.source.changed_columns()

    @property
    def rows(self) -> int:
        """How many rows changed (the schema's changes aside)."""
        return sum(sum(k.values()) for k in self.source.per_kind().values())

    def per_table(self, deletes_first: bool = False) -> list[str]:
        """``table: 1 deleted, 2 updated, 0 inserted`` per table, by name (``deletes_first``:
        the tables that lose rows first, most first)."""
        order = sorted(self.source.per_kind().items())
        if deletes_first:
            order.sort(key=lambda kv: -kv[1]["delete"])
        return [
            f"{table}: {k['delete']} deleted, {k['update']} updated, {k['insert']} inserted"
            for table, k in order
        ]

    def summary(self) -> str:
        parts = self.per_table()
        if self.schema:
            done = Counter((s.op.kind, s.table, _named(s)) for s in self.schema)
            words = [_schema_words(k, t, name, n) for (k, t, name), n in done.items()]
            parts.insert(0, "schema: " + ", ".join(words))
        if self.unlike:
            parts.append(
                f"not compared, as they aren't the same table on both sides (one side lacks "
                f"it, or its columns differ): {', '.join(self.unlike)}; see each branch's diff"
            )
        n = self.count
        head = f"{n} change{'s' if n != 1 else ''} on {self.branch}"
        return head + (f" ({'; '.join(parts)})" if parts else "")

    @property
    def count(self) -> int:
        return self.rows + len(self.schema)

    def schema_lines(self) -> list[str]:
        return [f"{SIGNS[s.op.kind]} {s.op.sql(s.table)}" for s in self.schema]


SIGNS = {
    "create": "+",
    "index": "+",
    "view": "+",
    "trigger": "+",
    "add": "~",
    "rename": "~",
    "drop_column": "~",
    "rename_column": "~",
    "drop": "-",
    "drop_index": "-",
    "drop_view": "-",
    "drop_trigger": "-",
}


def _named(s: Step) -> str:
    """What a step names besides its table: an index's, a view's or a trigger's name, a
    rename's new name ('' for a table's own steps: those count per table)."""
    if s.op.kind == "rename":
        return s.op.detail["to"]
    if s.op.kind == "rename_column":
        return f"{s.op.detail['column']} -> {s.op.detail['to']}"
    return s.op.name if s.op.kind not in ("create", "add", "drop", "drop_column") else ""


def _schema_words(kind: str, table: str, name: str, n: int) -> str:
    if kind == "add":
        return f"added {n} column{'s' if n != 1 else ''} to {table}"
    if kind == "drop_column":
        return f"dropped {n} column{'s' if n != 1 else ''} of {table}"
    if kind == "rename":
        return f"renamed a table to {name}"
    if kind == "rename_column":
        return f"renamed column {name.replace(' -> ', ' to ')} of {table}"
    if kind in ("index", "trigger", "drop_index", "drop_trigger"):
        made = "dropped" if kind.startswith("drop_") else "created"
        return f"{made} {kind.removeprefix('drop_')} {name} on {table}"
    if kind in ("view", "drop_view"):
        return f"{'dropped' if kind == 'drop_view' else 'created'} view {name}"
    return f"{'created' if kind == 'create' else 'dropped'} {table}"


def forked(db: Database, ref: BranchRef) -> World:
    """The world whose changes since its fork a diff of ``ref`` shows (main has no fork, and a
    branch as it was is compared with ``to``)."""
    if ref.past:
        raise ChronosError(
            f"diff shows what a branch changed since its fork; to compare with a branch as it "
            f"was at a moment, give that as to (diff {ref.name} with "
            f"{hints.arg('to', str(ref))})",
            BAD_ARGUMENT,
        )
    if ref.is_main:
        raise ChronosError(
            "main has no fork to compare with: give a branch you forked (or compare a branch "
            f"with main: diff <branch> with {hints.arg('to', 'main')}; in SQL DIFF <branch> TO "
            "main)",
            BAD_ARGUMENT,
        )
    return db.world(ref)


def diff(db: Database, world: World, tables: set[str] | None = None) -> Diff:
    """What ``world`` changed since its fork (``tables``: only these)."""
    parent = db.session(BranchRef(world.parent) if world.parent_id is not None else MAIN)
    return Diff(
        world.name,
        Counted(ChangeSet(db, world, parent, tables, theirs=False)),
        steps(db, world, parent, tables),
    )


def show(value: Any) -> str:
    """A value as a diff's line shows it: its JSON, cut past render.SHOWN_CHARS (the data beside
    the text keeps it whole)."""
    return shown(json.dumps(json_value(value), ensure_ascii=False), value)


def row_text(row: dict | None) -> str:
    """A row as a diff's line shows it: one line of JSON, each long value cut."""
    if row is None:
        return "(none)"
    whole = row_json(row)
    if len(whole) <= SHOWN_CHARS:
        return whole
    fields = (f"{json.dumps(k, ensure_ascii=False)}: {show(v)}" for k, v in row.items())
    return "{" + ", ".join(fields) + "}"


def change_line(c: Change) -> str:
    if c.kind == "delete":
        return f"- DELETE {c.where} {row_text(c.base)}"
    if c.kind == "insert":
        return f"+ {c.where} {row_text(c.ours)}"
    assert c.base is not None and c.ours is not None  # an update: both rows
    fields = ", ".join(f"{f}: {show(c.base[f])} -> {show(c.ours[f])}" for f in c.fields)
    return f"~ {c.where}  {fields}"


def page_footer(start: int, shown: int, total: int, what: str, call: str) -> str:
    if shown >= total and start == 0:
        return ""
    if shown == 0:
        return f"(no {what} from {start + 1}; there are {total})"
    end = start + shown
    again = f"; call {hints.op(call)} again with {hints.arg('offset', end)} for the next ones"
    more = again if end < total else ""
    return f"(showing {what} {start + 1}-{end} of {total}{more})"


def render(d: Diff, limit: int, offset: int, page: list[Change] | None = None) -> str:
    """The diff's text: its summary, and a page of ``limit`` changes from ``offset`` (``page``:
    that page, read already)."""
    page = d.page(offset, limit) if page is None else page
    lines = [d.summary(), *(d.schema_lines() if offset == 0 else []), *map(change_line, page)]
    footer = page_footer(offset, len(page), d.rows, "changes", "diff")
    return "\n".join(lines + ([footer] if footer else []))


def change_data(c: Change) -> dict:
    return {
        "table": c.table,
        "id": c.id,
        "key": c.where,
        "kind": c.kind,
        "fields": c.fields,
        "base": json_row(c.base),
        "ours": json_row(c.ours),
    }


def _where(t: TableInfo, key: tuple) -> str:
    cols = ["rowid"] if t.key_kind == "rowid" else [quote_ident(c) for c in t.pk]
    return " AND ".join(f"{c} = {literal(v)}" for c, v in zip(cols, key))


def change_sql(c: Change) -> str:
    """The change as one SQL statement that reproduces it when run on the base."""
    table = quote_ident(c.table)
    if c.kind == "delete":
        return f"DELETE FROM {table} WHERE {_where(c.t, c.key)};"
    assert c.ours is not None  # not a delete
    if c.kind == "update":
        given = [f for f in c.fields if f not in c.t.generated]  # (SQLite computes those)
        sets = ", ".join(f"{quote_ident(f)} = {literal(c.ours[f])}" for f in given)
        return f"UPDATE {table} SET {sets} WHERE {_where(c.t, c.key)};"
    cols = [k for k in c.ours if k not in c.t.generated]
    names = ", ".join(quote_ident(k) for k in cols)
    values = ", ".join(literal(c.ours[k]) for k in cols)
    return f"INSERT INTO {table}({names}) VALUES ({values});"


def compare(db: Database, branch: BranchRef, other: BranchRef) -> Diff:
    """Rows that differ between two branches (``branch`` → ``other``)."""
    if branch.past and other.past:
        raise ChronosError(
            "diff compares a branch with another, of which at most one may be name@when",
            BAD_ARGUMENT,
        )
    a, b = db.session(branch), db.session(other)  # (name@when: main as it was, world 0)
    left, right = a.world, b.world
    worlds = [w for w in (left, right) if w is not None]
    out: list[Change] = []
    unlike = []
    done = 0
    their_tables = db.tables_for(right)
    for name, (n, t) in sorted(db.tables_for(left).items()):
        there = their_tables.get(name)
        if there is None or there[0] != n or there[1].column_names != t.column_names:
            unlike.append(name)  # not the same table on both: a schema difference
            continue
        keys = _candidate_keys(db, n, t, worlds)
        for key in sorted(keys, key=sort_key):
            done += 1
            check_bounds(db, done)  # (row by row in Python: within the call's time limit)
            mine, theirs = view_row(a, n, t, key), view_row(b, n, t, key)
            if mine != theirs:
                out.append(Change(name, n, t, key, mine, theirs, None, False))
    unlike += sorted(set(their_tables) - set(db.tables_for(left)))
    return Diff(f"{branch} -> {other}", Listed(out), unlike=unlike)


def _candidate_keys(db: Database, n: int, t: TableInfo, worlds: list) -> set[tuple]:
    """Keys where two branches can differ: what either world wrote, and what main changed
    since the older of their forks (both read main as of their own fork)."""
    conn = db.main.conn
    keys = t.stored_list(columns=list(t.key_cols))
    found: set[tuple] = set()
    for w in worlds:
        for ident in (w.id, -w.id):
            found.update(
                conn.execute(f"select {keys} from {overlay_table(n)} where {WORLD} = ?", (ident,))
            )
    if worlds:
        oldest = min(w.base.get(n, 0) for w in worlds)
        found.update(
            conn.execute(f"select {keys} from {history_table(n)} where {SEQ} > ?", (oldest,))
        )
    return {tuple(k) for k in found}
