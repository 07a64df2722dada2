"""A branch's content hash: its tables' schemas and rows as one BLAKE2b digest, equal for equal
contents whatever their history (main, a world, ``name@when``; a backup or a replica of them).

Each table hashes its name, its columns (name, declared type and collation, NOT NULL, default,
generated expression), its primary key, then its rows in key order (a table without a primary
key: in the order of all its columns, so its rows count as a multiset, whatever their rowids),
a chunk of rows at a time as ``marshal`` writes them in its version 0 (a format fixed since
long ago, with no references and no interning, floats as their shortest text: the same values
give the same bytes in any process; 1 and 1.0 differ, as SQLite's types do). The branch's
hash is that of its tables' names and hashes, by name. Indexes, triggers and views aren't
content: two branches with the same tables and rows hash alike.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from dataclasses import dataclass, field
from itertools import islice

import apsw

from ..sqltext import quote_ident
from ..storage.branchref import BranchRef
from ..storage.db import Database, Session
from ..storage.schema.catalog import TableInfo

CHUNK = 4096  # rows hashed at once (a fixed number: the digest depends only on the rows)
MARSHAL_VERSION = 0


@dataclass
class TableHash:
    table: str
    rows: int
    hash: str


@dataclass
class BranchHash:
    branch: str
    hash: str
    tables: list[TableHash] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tables)


def branch_hash(db: Database, branch: str) -> BranchHash:
    """The content hash of ``branch`` (``name@when`` too) as it is, or was, in ``db``."""
    ref = BranchRef.parse(branch)
    return session_hash(db, db.session(ref), str(ref))


def main_at(db: Database, seqs: dict[int, int], moment: float, label: str) -> BranchHash:
    """The content hash of main as it was at its tables' history ``seqs`` (a backup's)."""
    return session_hash(db, db.past_session("main", moment, label, seqs), label)


def world_at(db: Database, name: str, moment: float, clock: int) -> BranchHash:
    """The content hash of world ``name`` as it was at the world ``clock`` (a backup's)."""
    label = f"{name}@{moment}"
    return session_hash(db, db.past_session(name, moment, label, clock=clock), name)


def session_hash(db: Database, session: Session, label: str) -> BranchHash:
    """The content hash of the branch ``session`` reads (the call ends with it)."""
    try:
        world = session.world
        tables = db.tables_for(world)
        on_main = world is None
        found = [_table_hash(session.conn, t, on_main) for _name, (_n, t) in sorted(tables.items())]
    finally:
        db.end_call(session)
    whole = hashlib.blake2b(digest_size=32)
    for t in sorted(found, key=lambda t: t.table):
        whole.update(f"{t.table}\0{t.hash}\n".encode())
    return BranchHash(label, whole.hexdigest(), found)


def _table_hash(conn: apsw.Connection, t: TableInfo, on_main: bool) -> TableHash:
    h = hashlib.blake2b(digest_size=32)
    h.update(_schema_text(t).encode())
    columns = ", ".join(quote_ident(c) for c in t.column_names)
    order = t.pk if t.pk else tuple(t.column_names)
    by = ", ".join(f"{quote_ident(c)} COLLATE BINARY" for c in order)
    name = f"main.{quote_ident(t.name)}" if on_main else quote_ident(t.name)
    cursor = conn.execute(f"SELECT {columns} FROM {name} ORDER BY {by}")
    rows = 0
    while chunk := list(islice(cursor, CHUNK)):
        rows += len(chunk)
        h.update(marshal.dumps(chunk, MARSHAL_VERSION))
    return TableHash(t.name, rows, h.hexdigest())


def _schema_text(t: TableInfo) -> str:
    columns = [
        [c.name, c.declared(), c.notnull, c.default, c.generated, c.expression] for c in t.columns
    ]
    return json.dumps([t.name, columns, list(t.pk), t.without_rowid])
