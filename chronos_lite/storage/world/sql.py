"""The objects that put a connection on a world: for each table its view (``world.views``), the
INSTEAD OF triggers that write it (``world.writes``, keeping the rules of ``world.rules``), the
app's own triggers on it (``world.triggers``); then the app's views, and their INSTEAD OF
triggers, made again as TEMP objects so that their table names read the world's rows.

The statement context the triggers read (conflict mode, counters) is ``world.context``'s; its names
are re-exported here for the callers that set it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ...sqltext import quote_ident, quote_literal
from ..schema.catalog import TableInfo, check_constraints
from ..schema.constraints import UserTrigger
from . import native as worldnative
from . import state as worldstate
from .context import (
    CTX,
    CTX_DDL,
    FK_FAILED,
    MODES,
    begin_world_write,
    broken_keys,
    given_columns,
    named_mask,
    new_transaction,
    rows_written,
)
from .overlay import remember_entry
from .rules import Link, link, row_table_ddl
from .schema import BranchSchema
from .triggers import Events, markers, objects
from .views import key_view, main_as_of, world_at
from .writes import (
    Upsert,
    WorldTable,
    delete_trigger,
    forward_triggers,
    insert_triggers,
    set_insert_triggers,
    trigger_name,
    update_triggers,
    world_trigger_names,
)


def world_tables(schema: BranchSchema, world: int) -> dict[int, WorldTable]:
    """Each table of the branch with what its write triggers must keep, by its number."""
    tables = schema.tables
    links: list[Link] = [
        link(fk, tables) for _name, (_n, t) in tables.items() for fk in t.rules.foreign_keys
    ]
    by_lower = {name.lower(): n for name, (n, _t) in tables.items()}
    quiet = any(u.event == "DELETE" and u.timing != "INSTEAD OF" for u in schema.triggers)
    out = {}
    for name, (n, t) in tables.items():
        own = tuple(
            (k, u)
            for k, u in enumerate(schema.triggers)
            if u.table.lower() == name.lower() and u.timing != "INSTEAD OF"
        )
        out[n] = WorldTable(
            t,
            n,
            world,
            links=tuple(lk for lk in links if by_lower.get(lk.fk.child.lower()) == n),
            referenced=tuple(lk for lk in links if by_lower.get(lk.fk.parent.lower()) == n),
            events=Events(n, t, own) if own else None,
            quiet_replace=quiet,
        )
    return out


def world_objects(
    schema: BranchSchema,
    world: int,
    base: dict[int, int],
    writable: bool = True,
    at: float | None = None,
    materialized: set[int] | frozenset[int] = frozenset(),
    whole: set[int] | frozenset[int] = frozenset(),
    native: set[int] | frozenset[int] = frozenset(),
    writers: dict[int, WorldTable] | None = None,
) -> tuple[list[str], set[str]]:
    """Every TEMP statement that puts a connection on the world, and the names of chronos' own
    triggers among them (the guard trusts those). Writable: the ``materialized`` tables get
    their TEMP tables, views and triggers (``table_objects``; the ``whole`` ones read a whole
    copy; the ``native`` ones, a native one: ``world.native``); the others are main's own
    (``writers``: ``world_tables``, if the caller has them).
    Not ``writable``: every table's view as of ``base`` (main as it was at a moment: world 0,
    no overlay; or a world at moment ``at``: its history)."""
    out: list[str] = []
    trusted: set[str] = set()
    if not writable:
        for _name, (n, t) in sorted(schema.tables.items()):
            seq = base.get(n, 0)
            for keyed in (False, True) if t.key_kind == "rowid" else (False,):
                select = (
                    main_as_of(t, n, seq, keyed)
                    if at is None
                    else world_at(t, n, world, seq, at, keyed)
                )
                name = key_view(n) if keyed else quote_ident(t.name)
                out.append(f"CREATE TEMP VIEW {name} AS {select}")
        return out, trusted
    writers = writers if writers is not None else world_tables(schema, world)
    for _name, (n, _t) in sorted(schema.tables.items()):
        if n in materialized:
            made, names = table_objects(schema, writers[n], n in whole, n in native)
            out += made
            trusted |= names
    return out, trusted


def table_objects(
    schema: BranchSchema, wt: WorldTable, whole: bool = False, native: bool = False
) -> tuple[list[str], set[str]]:
    """A materialized table's objects: its TEMP tables, its views (over a whole copy: ``whole``),
    the triggers that write it (and the app's, on their event tables); and chronos' trigger
    names among them. A ``native`` copy: its TEMP tables (its triggers come with its rows:
    ``native_after_fill``)."""
    wt = replace(wt, whole=whole)
    t, n = wt.t, wt.n
    if native:
        return [worldstate.hidden_ddl(t, n), worldnative.table_ddl(t)], set(
            worldnative.trigger_names(n)
        )
    out = worldstate.tables_ddl(t, n, schema.indexes_on(t.name), whole)
    trusted = set(world_trigger_names(n))
    if not t.fts_content:  # (a world's FTS5 table is a copy: placement's)
        rows = worldstate.view_select(t, n, whole=whole)
        out.append(f"CREATE TEMP VIEW {quote_ident(t.name)} AS {rows}")
        if whole:
            scan = worldstate.copy_select(t, n, how="NOT INDEXED")
            out.append(f"CREATE TEMP VIEW {worldstate.unindexed_view(n)} AS {scan}")
    if t.key_kind == "rowid":
        keyed = worldstate.view_select(t, n, True, whole)
        out.append(f"CREATE TEMP VIEW {key_view(n)} AS {keyed}")
    if check_constraints(t.sql):
        out += row_table_ddl(t, n)
    if wt.events is not None:
        made, names = objects(wt.events)
        out += made
        trusted |= names
    out += [*insert_triggers(wt), *update_triggers(wt), delete_trigger(wt)]
    out += _generated_refused(wt)
    if t.key_kind == "rowid" and not t.fts_content:
        out += forward_triggers(wt)
    if wt.events is not None and wt.events.watched:
        made, names = markers(wt.events, quote_ident(t.name))
        out += made
        trusted |= names
    return out, trusted


def native_after_fill(schema: BranchSchema, wt: WorldTable) -> list[str]:
    """What a native copy gets once its rows are in: main's indexes, its counter of new keys,
    the triggers recording its writes."""
    t = wt.t
    return [
        *worldnative.index_ddl(t, schema.indexes_on(t.name)),
        *worldnative.start_counter(t),
        *worldnative.triggers(wt),
    ]


def native_tables(writers: dict[int, WorldTable], whole: set[int]) -> set[int]:
    """The tables of ``whole`` that a world's connection copies as native TEMP tables
    (``writers``: ``world_tables``)."""
    return {n for n in whole if worldnative.eligible(writers[n])}


def _generated_refused(wt: WorldTable) -> list[str]:
    """An UPDATE that sets a generated column fails as on main (a view's column is writable,
    and the INSTEAD OF trigger would drop the value: a write that changed nothing)."""
    out = []
    generated = [] if wt.t.fts_content else [c for c in wt.t.columns if c.generated]
    for i, c in enumerate(generated):
        message = quote_literal(f'cannot UPDATE generated column "{c.name}"')
        out.append(
            f"CREATE TEMP TRIGGER {trigger_name(wt.n, f'ig{i}')} INSTEAD OF UPDATE OF "
            f"{quote_ident(c.name)} ON temp.{quote_ident(wt.t.name)} BEGIN "
            f"SELECT RAISE(ABORT, {message}); END"
        )
    return out


def app_views(schema: BranchSchema) -> list[str]:
    """The branch's views as TEMP views (their table names then read the world's views; a view
    stored in main would read main's tables even on a world's connection)."""
    return [_HEAD.sub("CREATE TEMP VIEW ", sql, count=1) for _name, sql in schema.views]


def app_view_triggers(schema: BranchSchema) -> list[str]:
    """The app's INSTEAD OF triggers on its views, as TEMP triggers on the TEMP views."""
    return [
        _TRIGGER_HEAD.sub("CREATE TEMP TRIGGER ", u.sql, count=1)
        for u in schema.triggers
        if u.timing == "INSTEAD OF"
    ]


def placeholders(schema: BranchSchema, dropped_prefix: str) -> list[str]:
    """Views standing in for what main has and the world dropped: reading one fails with 'no
    such table' (main's must not show through)."""
    return [
        f"CREATE TEMP VIEW {quote_ident(name)} AS SELECT * FROM "
        f"temp.{quote_ident(dropped_prefix + name)}"
        for name in schema.hidden
    ]


def world_table(schema: BranchSchema, world: int, n: int) -> WorldTable:
    """One table of the world with what its triggers keep (to remake its INSERT trigger)."""
    return world_tables(schema, world)[n]


_HEAD = re.compile(r"^\s*CREATE\s+VIEW\s+", re.IGNORECASE)
_TRIGGER_HEAD = re.compile(r"^\s*CREATE\s+TRIGGER\s+", re.IGNORECASE)

__all__ = [
    "CTX",
    "CTX_DDL",
    "FK_FAILED",
    "MODES",
    "TableInfo",
    "Upsert",
    "UserTrigger",
    "WorldTable",
    "begin_world_write",
    "broken_keys",
    "given_columns",
    "named_mask",
    "insert_triggers",
    "set_insert_triggers",
    "new_transaction",
    "remember_entry",
    "rows_written",
    "trigger_name",
    "world_objects",
    "world_trigger_names",
]
