"""A branch's rows as search documents: each row has an integer id (its *docid*) that the
search indexes (FTS5's rowid, a ``vec0`` rowid) know it by.

* A table keyed by an integer (an INTEGER PRIMARY KEY, or no primary key: its rowid) gives each
  row that integer, the same on every branch. Main's text index is then kept in the file, and a
  branch's is main's with the rows the branch shows otherwise (its *delta*) put right.
* Any other table (a text or composite key, WITHOUT ROWID, an app's FTS5 table) numbers its
  rows in key order in a TEMP map on the connection, and its indexes are made there for the
  branch as it is (``mapped``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..sqltext import quote_ident
from ..storage import worlds
from ..storage.db import Session
from ..storage.fetch import one_row
from ..storage.rows import relation
from ..storage.schema.catalog import ROWID_COL, TableInfo
from ..storage.shadow import SEQ, WORLD, history_table, overlay_table
from .temp import keep_temp, temp_names


@dataclass(frozen=True)
class Docs:
    """Table ``t`` (number ``n``) on a session's branch: ``source``, the relation of its rows;
    ``docid``, the expression there of a row's integer id (empty: ``mapped``); ``own``: it
    reads main's table itself (the branch shows main's rows as they are)."""

    t: TableInfo
    n: int
    source: str
    docid: str
    own: bool
    state: str  # what the branch's rows of the table are (a cache of them is good while equal)

    @property
    def mapped(self) -> bool:
        return not self.docid

    @property
    def keys(self) -> list[str]:
        """The key's columns in ``source`` (quoted)."""
        if self.t.key_kind == "rowid":
            return [self.docid]
        return [quote_ident(c) for c in self.t.pk]


def integer_keyed(t: TableInfo) -> bool:
    """Whether a row's key is its integer id on every branch."""
    return t.key_kind in ("int", "rowid") and not t.fts_content and not t.stored_as


def docs(session: Session, n: int, t: TableInfo) -> Docs:
    """The table's rows on the session's branch."""
    source, rowid_col = relation(session, n, t)
    own = source.startswith("main.")
    if not integer_keyed(t):
        docid = ""
    elif t.key_kind == "int":
        docid = quote_ident(t.pk[0])
    else:
        docid = "rowid" if own else rowid_col
    return Docs(t, n, source, docid, own, _state(session, n, own))


def _state(session: Session, n: int, own: bool) -> str:
    """What the branch's rows of table ``n`` are: main's as of its history now, or a world's
    (its version) or a moment's (its history positions) over main's."""
    conn = session.conn
    now = one_row(conn.execute(f"SELECT coalesce(max({SEQ}), 0) FROM main.{history_table(n)}"))[0]
    world = session.world
    if own or world is None:
        return f"main:{now}"
    # (the world's version and entries as the file has them now: a session's World may be
    # the one it was placed with, older than the connection's own writes since)
    version = worlds.version_of(conn, world.id) if world.id else 0
    entries = one_row(
        conn.execute(
            f"SELECT count(*), max({SEQ}) FROM main.{overlay_table(n)} WHERE {WORLD} = ?",
            (world.id,),
        )
    )
    return json.dumps([world.id, version, *entries, world.base.get(n), str(session.built_for), now])


def delta_keys(session: Session, d: Docs) -> str | None:
    """A SELECT of the integer keys whose rows the branch shows otherwise than main does now
    (its own rows, and main's it sees as they were), or None where that isn't known from the
    file's records alone (a world as it was: the caller indexes its rows anew)."""
    world = session.world
    if world is None or d.mapped:
        return None
    t, n = d.t, d.n
    key = quote_ident(ROWID_COL) if t.key_kind == "rowid" else quote_ident(t.pk[0])
    since = f"SELECT {key} FROM main.{history_table(n)} WHERE {SEQ} > {world.base.get(n, 0)}"
    if session.past and world.id:
        return None
    if session.past:
        return since
    return f"SELECT {key} FROM main.{overlay_table(n)} WHERE {WORLD} = {world.id} UNION {since}"


def map_name(n: int) -> str:
    """The TEMP map numbering a table's rows (a table whose key isn't an integer)."""
    return f"_chronos_fd{n}"


def docid_of(d: Docs) -> str:
    """A row's docid in ``joined``'s FROM clause."""
    return "m.docid" if d.mapped else f"s.{d.docid}"


def joined(session: Session, d: Docs) -> str:
    """A FROM clause of the branch's rows (``s``), with their numbers in key order (``m``) if
    their key isn't an integer: a TEMP map kept while the rows are as they were."""
    if not d.mapped:
        return f"{d.source} AS s"
    m = f"temp.{map_name(d.n)}"
    same = " AND ".join(f"m.k{i} IS s.{k}" for i, k in enumerate(d.keys))
    out = f"{m} AS m JOIN {d.source} AS s ON {same}"
    conn = session.conn
    if session.search.get(("map", d.n)) == d.state and temp_names(conn, map_name(d.n)):
        return out
    cols = ", ".join(f"k{i}" for i in range(len(d.keys)))
    conn.execute(f"DROP TABLE IF EXISTS {m}")
    conn.execute(f"CREATE TEMP TABLE {map_name(d.n)}(docid INTEGER PRIMARY KEY, {cols})")
    conn.execute(
        f"INSERT INTO {m}({cols}) SELECT {', '.join(d.keys)} FROM {d.source} "
        f"ORDER BY {', '.join(d.keys)}"
    )
    conn.execute(f"CREATE INDEX temp.{map_name(d.n)}_k ON {map_name(d.n)}({cols})")
    keep_temp(session, map_name(d.n))
    session.search[("map", d.n)] = d.state
    return out
