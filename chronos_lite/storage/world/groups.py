"""Tables a world's connection copies natively together: those foreign keys link (SQLite
checks a TEMP table's keys against the TEMP tables of those names, so a group is copied whole,
parents first, or not at all), and how the copies go again (``world.native`` makes each)."""

from __future__ import annotations

import apsw

from ...sqltext import quote_ident
from ..fetch import all_rows
from ..schema.catalog import TableInfo
from . import native as worldnative
from . import state as worldstate
from .schema import BranchSchema
from .session import Session
from .writes import WorldTable


def group_of(
    session: Session, writers: dict[int, WorldTable], n: int, fresh: bool
) -> list[int] | None:
    """Table ``n`` and the tables its foreign keys link it to, parents first, if they are all
    copied natively together (``world.native.group``): whole copies all, of at most
    ``whole_rows`` rows together (the first write to one of them copies them all: bounded as a
    table's), none of them kept apart already (``fresh``: the connection is being placed,
    nothing is yet)."""
    if not worldnative.linked(writers[n]):
        return None
    members = worldnative.group(writers, n)
    if members is None or session.loose & set(members):
        return None
    conn, rows = session.conn, 0
    for m in members:
        if not fresh and m in session.materialized:
            if m not in session.native:
                return None
            continue
        t = writers[m].t
        if not worldstate.copies_whole(conn, t, m, any_size=True):  # (main's legacy NULL keys)
            return None
        rows += 0 if m in session.bigger else worldstate.main_count(conn, t, m)
    return members if rows <= worldstate.whole_rows(conn) else None


def grouped(session: Session, writers: dict[int, WorldTable]) -> dict[int, int]:
    """The tables copied natively with the tables their foreign keys link (placing a world),
    each with its place in its group, parents first (``fill_order``'s)."""
    out: dict[int, int] = {}
    for n in sorted(session.materialized):
        if n not in out:
            out |= {m: i for i, m in enumerate(group_of(session, writers, n, fresh=True) or ())}
    return out


def fill_order(
    schema: BranchSchema, materialized: set[int], grouped: dict[int, int]
) -> list[tuple[int, TableInfo]]:
    """The materialized tables in the order their copies are filled: parents before their
    children where SQLite checks the keys between them (``grouped``: each grouped table's
    place in its group)."""
    tables = [(n, t) for _name, (n, t) in schema.tables.items() if n in materialized]
    return sorted(tables, key=lambda nt: grouped.get(nt[0], -1))


def drop_native(conn: apsw.Connection) -> None:
    """The native copies go, their triggers first (so that a foreign key's action as a parent
    goes records nothing), then each table once no other references it (SQLite empties a
    parent as it drops it, and its children's rows would break their keys)."""
    names = [name for (name,) in all_rows(conn.execute(_NATIVE_COPIES))]
    for (name,) in all_rows(conn.execute(_NATIVE_TRIGGERS)):
        conn.execute(f"drop trigger temp.{quote_ident(name)}")
    parents = {
        name: {
            r[2].lower() for r in conn.execute(f"pragma temp.foreign_key_list({quote_ident(name)})")
        }
        for name in names
    }
    while parents:
        referenced = set().union(*parents.values())
        for name in [n for n in parents if n.lower() not in referenced] or list(parents):
            conn.execute(f"drop table temp.{quote_ident(name)}")
            del parents[name]


# A native copy (world.native) is named like the app's table: known by its trigger of deletes;
# its triggers, by their names
_NATIVE_COPIES = (
    "select tbl_name from temp.sqlite_schema where type = 'trigger' "
    "and name like '\\_chronos\\_w\\_nd\\_%' escape '\\'"
)
_NATIVE_TRIGGERS = (
    "select name from temp.sqlite_schema where type = 'trigger' and ("
    + " or ".join(
        f"name like '\\_chronos\\_w\\_{suffix}\\_%' escape '\\'" for suffix in worldnative.SUFFIXES
    )
    + ")"
)
