"""What a world changed since its fork, with each row's three versions.

For every row the world wrote since it was forked (its overlay entries newer than the fork):

* base: the row when the world forked: the parent's copy frozen at the fork (a world forked
  from a world), else main as it was at the fork (history, or the live row);
* ours: the world's row now (None: the world deleted it);
* theirs: the parent's row now; ``parent_changed`` says whether the parent wrote it since.

Cost is proportional to the rows the world changed: each is a few indexed lookups.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from ..sqltext import quote_ident
from ..storage import faults
from ..storage.codec import Key, format_id, key_text
from ..storage.db import Database, Session
from ..storage.rows import as_row, base_row, main_changed_since, overlay_entry, view_row
from ..storage.schema.catalog import TableInfo
from ..storage.shadow import DEAD, OP, SEQ, WORLD, history_table, overlay_table
from ..storage.worlds import World


@dataclass
class Change:
    table: str
    n: int
    t: TableInfo
    key: tuple
    base: dict[str, Any] | None
    ours: dict[str, Any] | None
    theirs: dict[str, Any] | None
    parent_changed: bool

    def __post_init__(self) -> None:
        self.key = Key(self.key)  # (sorted as SQLite sorts keys: they may mix types)

    @property
    def kind(self) -> str:
        if self.ours is None:
            return "delete"
        return "insert" if self.base is None else "update"

    @property
    def id(self) -> str:
        """The row's id (``spelling.py``)."""
        return format_id(self.t, self.key)

    @property
    def where(self) -> str:
        """The row as ``table/id``, as ``only_keys`` and ``rows`` take it."""
        return key_text(self.table, self.id)

    @property
    def fields(self) -> list[str]:
        """Columns the world changed (an update's)."""
        if self.base is None or self.ours is None:
            return []
        return [c for c in self.t.column_names if self.base.get(c) != self.ours.get(c)]

    @property
    def parent_fields(self) -> list[str]:
        """Columns the parent changed since the fork."""
        if self.base is None or self.theirs is None:
            return list(self.t.column_names)
        return [c for c in self.t.column_names if self.base.get(c) != self.theirs.get(c)]


CHECK_EVERY = 256  # rows between checks of the call's time limit in Python loops
CHUNK = 500  # keys per statement when reading given keys


def check_bounds(db: Database, done: int) -> None:
    """Every CHECK_EVERY rows of a loop in Python: stop at the call's time limit (or a cancel),
    as SQLite's progress handler does for statements."""
    if done % CHECK_EVERY == 0 and db.bounds.progress():
        raise faults.interrupted(db.bounds)


def keys_in(t: TableInfo, alias: str, count: int) -> str:
    """A condition: the row's key is one of ``count`` keys, bound as their values in turn."""
    cols = ", ".join(f"{alias}{t.col(c)}" for c in t.key_cols)
    one = "(" + ", ".join("?" for _ in t.key_cols) + ")"
    return f"({cols}) IN (VALUES {', '.join([one] * count)})"


def world_changes(
    db: Database,
    world: World,
    parent: Session,
    tables: set[str] | None = None,
    other: bool = False,
    only: dict[str, list[tuple]] | None = None,
) -> list[Change]:
    """Every row ``world`` changed since its fork, against ``parent`` (a session on it).

    ``other``: ``parent`` is not the world's parent (a merge ``into`` another branch); there
    a row "changed on the other side" when it differs there from the world's base. ``only``:
    just these keys, by table (a page of a diff or a preview).
    """
    return list(iter_changes(db, world, parent, tables, other, only))


def iter_changes(
    db: Database,
    world: World,
    parent: Session,
    tables: set[str] | None = None,
    other: bool = False,
    only: dict[str, list[tuple]] | None = None,
) -> Iterator[Change]:
    """``world_changes`` one at a time, by table and key, within the call's time limit."""
    done = 0
    for name, (n, t) in sorted(db.tables_for(world).items()):
        if (tables is not None and name not in tables) or (only is not None and name not in only):
            continue
        wanted = None if only is None else only[name]
        for part in [None] if wanted is None else _chunks(wanted):
            for c in _table_changes(db, world, parent, name, n, t, other, part):
                done += 1
                check_bounds(db, done)
                yield c


def _chunks(keys: list[tuple]) -> Iterator[list[tuple]]:
    for at in range(0, len(keys), CHUNK):
        yield keys[at : at + CHUNK]


def _table_changes(
    db: Database,
    world: World,
    parent: Session,
    name: str,
    n: int,
    t: TableInfo,
    other: bool,
    keys: list[tuple] | None,
) -> Iterator[Change]:
    conn = parent.conn
    if parent.world is None and not other:
        yield from _changes_against_main(conn, name, n, t, world, keys)
        return
    on_parent = {n: t for n, t in db.tables_for(parent.world, conn).values()}
    key_list = t.stored_list(columns=list(t.key_cols))
    cols = t.stored_list()
    among = f"and {keys_in(t, '', len(keys))} " if keys is not None else ""
    entries = conn.execute(
        f"select {DEAD}, {key_list}, {cols} from main.{overlay_table(n)} "
        f"where {WORLD} = ? and {SEQ} > ? {among}order by {key_list}",
        (world.id, world.fork_seq, *(v for k in keys or () for v in k)),
    )
    width = len(t.key_cols)
    for entry in entries:
        key = tuple(entry[1 : 1 + width])
        ours = None if entry[0] else as_row(t, entry[1 + width :])
        base, since = base_row(conn, n, t, world, key)
        if ours == base:
            continue  # written back as it was: no change
        if (t.key_kind == "rowid" and base is None) or n not in on_parent:
            # A new row under a hidden key: the parent's row at that rowid (if any) is an
            # unrelated row; the merge gives this one a rowid of its own. (Or a table the
            # parent doesn't have yet: the merge creates it.)
            yield Change(name, n, t, key, base, ours, None, False)
            continue
        theirs = _their_row(parent, n, t, on_parent[n], key, base)
        changed = (
            (theirs != base) if other else _parent_changed(conn, n, t, world, parent, key, since)
        )
        yield Change(name, n, t, key, base, ours, theirs, changed)


def _their_row(
    parent: Session, n: int, t: TableInfo, on_parent: TableInfo, key: tuple, base: dict | None
) -> dict | None:
    """The parent's row by the world's names (a column either renamed: the one stored alike),
    with the columns only the world has (it added them) as in base."""
    row = view_row(parent, n, on_parent, key)
    if row is None or on_parent.column_names == t.column_names:
        return row
    theirs = {on_parent.col(c): c for c in on_parent.column_names}
    out = {}
    for c in t.column_names:
        same = theirs.get(t.col(c))
        out[c] = row[same] if same in row else (base or {}).get(c)
    return out


def _changes_against_main(
    conn: apsw.Connection,
    name: str,
    n: int,
    t: TableInfo,
    world: World,
    among: list[tuple] | None = None,
) -> Iterator[Change]:
    """The same as the row-by-row path, for a world whose parent is main, in one query per
    table: each changed row's entry, frozen base, first history image after the fork, live
    row, and whether main wrote it since, joined on the key's indexes."""
    o, h = f"main.{overlay_table(n)}", f"main.{history_table(n)}"
    cols = t.column_names
    keys = [t.col(c) for c in t.key_cols]
    horizon = world.base.get(n, 0)

    def on(alias: str, other: str) -> str:
        return " AND ".join(f"{alias}.{k} = {other}.{k}" for k in keys)

    if t.key_kind == "rowid":
        live_on, live_here = f"m.rowid = e.{keys[0]}", "m.rowid IS NOT NULL"
    else:
        live_on = " AND ".join(f"m.{t.col(c)} = e.{t.col(c)}" for c in t.pk)
        live_here = f"m.{t.col(t.pk[0])} IS NOT NULL"

    def pick(alias: str) -> str:
        return t.stored_list(f"{alias}.", cols)

    only = f"AND {keys_in(t, 'e.', len(among))} " if among is not None else ""
    given = [v for k in among or () for v in k]

    rows = conn.execute(
        f"SELECT e.{DEAD}, {', '.join('e.' + k for k in keys)}, {pick('e')}, "
        f"fz.{WORLD} IS NOT NULL, fz.{DEAD}, fz.{SEQ}, {pick('fz')}, "
        f"hb.{OP}, {pick('hb')}, {live_here}, {t.main_columns('m.')}, "
        f"EXISTS (SELECT 1 FROM {h} AS h3 WHERE {on('h3', 'e')} "
        f"AND h3.{SEQ} > coalesce(fz.{SEQ}, ?)) "
        f"FROM {o} AS e "
        f"LEFT JOIN {o} AS fz ON fz.{WORLD} = ? AND {on('fz', 'e')} "
        f"LEFT JOIN {h} AS hb ON hb.{SEQ} = (SELECT min(h2.{SEQ}) FROM {h} AS h2 "
        f"WHERE {on('h2', 'e')} AND h2.{SEQ} > ?) "
        f"LEFT JOIN main.{quote_ident(t.stored)} AS m ON {live_on} "
        f"WHERE e.{WORLD} = ? AND e.{SEQ} > ? {only}ORDER BY {', '.join('e.' + k for k in keys)}",
        (horizon, -world.id, horizon, world.id, world.fork_seq, *given),
    )
    width, ncols = len(keys), len(cols)
    for r in rows:
        dead, key = r[0], tuple(r[1 : 1 + width])
        at = 1 + width
        ours = None if dead else as_row(t, r[at : at + ncols])
        at += ncols
        has_frozen, frozen_dead = r[at], r[at + 1]
        frozen = None if frozen_dead else as_row(t, r[at + 3 : at + 3 + ncols])
        at += 3 + ncols
        past_op, past = r[at], as_row(t, r[at + 1 : at + 1 + ncols])
        at += 1 + ncols
        has_live, live = r[at], as_row(t, r[at + 1 : at + 1 + ncols])
        at += 1 + ncols
        main_changed = bool(r[at])
        if has_frozen:
            base = frozen
        elif past_op is not None:
            base = past if past_op == 1 else None
        else:
            base = live if has_live else None
        if ours == base:
            continue
        if t.key_kind == "rowid" and base is None:
            yield Change(name, n, t, key, None, ours, None, False)
            continue
        yield Change(name, n, t, key, base, ours, live if has_live else None, main_changed)


def _parent_changed(
    conn: apsw.Connection,
    n: int,
    t: TableInfo,
    world: World,
    parent: Session,
    key: tuple,
    since: int | None,
) -> bool:
    if parent.world is None:
        return main_changed_since(conn, n, t, key, world.base.get(n, 0) if since is None else since)
    entry = overlay_entry(conn, n, t, parent.world.id, key)
    return entry is not None and entry[2] > max(world.fork_seq, since or 0)
