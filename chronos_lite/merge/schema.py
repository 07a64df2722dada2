"""A merge's schema steps: the world's own schema changes, each checked against the parent as
it is now (a table the parent wrote since can't be dropped, a name taken is a conflict), then
applied inside the merge's transaction: what drops or makes tables before the rows, and the
indexes, views and triggers the world made after them (a UNIQUE index is then checked on the
merged rows, and a trigger made by the merge never fires on them)."""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from .. import errors
from ..errors import ChronosError
from ..sqltext import quote_ident
from ..storage import events, schemasync
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.shadow import SEQ, WORLD, history_table, overlay_table
from ..storage.world.schema import STATEMENT_OPS, Op, find_table, own_ops, stored_name
from ..storage.worlds import World


@dataclass
class Step:
    op: Op
    table: str  # the table's name now
    conflict: str = ""  # why it can't merge; empty when it can
    rows: int = 0  # a dropped table: the rows the parent loses with it

    @property
    def outcome(self) -> str:
        return "conflict" if self.conflict else "apply"


def steps(db: Database, world: World, parent: Session, only: set[str] | None = None) -> list[Step]:
    """The world's own schema changes, each checked against the parent as it is now."""
    conn = parent.conn
    mine = db.tables_for(world)
    theirs = db.tables_for(parent.world) if parent.world is not None else db.tables()
    theirs_by_id = {n: (name, t) for name, (n, t) in theirs.items()}
    created: set[int] = set()
    columns = {n: [c.lower() for c in t.column_names] for n, (_name, t) in theirs_by_id.items()}
    out = []
    for op in own_ops(conn, world.id):
        current = next((k for k, (n, _t) in mine.items() if n == op.table_id), op.name)
        if only is not None and current not in only and op.name not in only:
            continue
        step = Step(op, current)
        if op.kind in STATEMENT_OPS:
            step.conflict = _object_conflict(conn, parent, op, theirs_by_id, created)
        elif op.kind == "create":
            created.add(op.table_id)
            if find_table(theirs, op.name):
                step.conflict = f"{parent.branch} has a table named {op.name} too"
        elif op.table_id in created:
            pass
        elif op.table_id not in theirs_by_id:
            if op.kind in ("add", "rename", "drop_column", "rename_column"):
                step.conflict = f"{parent.branch} dropped {op.name} since the fork"
        elif op.kind == "rename":
            if find_table(theirs, op.detail["to"]):
                step.conflict = f"{parent.branch} has a table named {op.detail['to']} too"
        elif op.kind == "drop_column":
            # (a column the parent dropped too goes as nothing)
            gone = op.detail["column"].lower()
            columns[op.table_id] = [c for c in columns[op.table_id] if c != gone]
        elif op.kind == "rename_column":
            step.conflict = _rename_conflict(parent, op, theirs_by_id, columns[op.table_id])
        elif op.kind == "add":
            col = op.detail["column"]["name"]
            pname = theirs_by_id[op.table_id][0]
            if col.lower() in columns[op.table_id]:
                step.conflict = f"{parent.branch} has a column {col} in {pname} too"
            columns[op.table_id].append(col.lower())
        elif _parent_wrote(conn, world, parent, op.table_id):
            step.conflict = f"{parent.branch} changed rows of {op.name} since the fork"
        else:
            pname = theirs_by_id[op.table_id][0]
            source = f"main.{quote_ident(pname)}" if parent.world is None else quote_ident(pname)
            step.rows = one_row(conn.execute(f"select count(*) from {source}"))[0]
        out.append(step)
    return out


def _rename_conflict(parent: Session, op: Op, theirs: dict, columns: list[str]) -> str:
    """Why a column the world renamed can't be renamed on the parent ('' if it can), with
    ``columns`` (the parent's, lower case, as the merge's earlier steps leave them) following."""
    old, new = op.detail["column"].lower(), op.detail["to"].lower()
    pname = theirs[op.table_id][0]
    if old not in columns:
        gone = op.detail["column"]
        return (
            f"{parent.branch} has no column {gone} in {pname} (renamed or dropped since the fork)"
        )
    if new in columns and new != old:
        return f"{parent.branch} has a column {op.detail['to']} in {pname} too"
    columns[columns.index(old)] = new
    return ""


def _object_conflict(
    conn: apsw.Connection, parent: Session, op: Op, theirs: dict, created: set[int]
) -> str:
    """Why an index, view or trigger the world made can't be made on the parent ('' if it
    can): its name is taken there, or its table is gone. (A drop of what the parent no
    longer has merges as nothing.)"""
    if op.kind.startswith("drop_"):
        return ""
    if op.table_id and op.table_id not in theirs and op.table_id not in created:
        return f"{parent.branch} dropped {op.detail.get('table', op.name)} since the fork"
    if parent.world is None:
        taken = conn.execute(
            "select type from main.sqlite_schema where name = ? collate nocase", (op.name,)
        ).fetchone()
    else:
        taken = None  # (a world parent takes the op over, name checked when it merges on)
    return f"{parent.branch} has a {taken[0]} named {op.name} too" if taken else ""


def _parent_wrote(conn: apsw.Connection, world: World, parent: Session, n: int) -> bool:
    if parent.world is None:
        last = conn.execute(f"select coalesce(max({SEQ}), 0) from main.{history_table(n)}")
        return one_row(last)[0] > world.base.get(n, 0)
    return bool(
        conn.execute(
            f"select 1 from main.{overlay_table(n)} where {WORLD} = ? and {SEQ} > ? limit 1",
            (parent.world.id, world.fork_seq),
        ).fetchone()
    )


def conflict_error(
    world: World, parent: str, found: list[Step], doing: str = "merging"
) -> ChronosError:
    where, again = ("into", "merge") if doing == "merging" else ("onto", "rebase")
    lines = [
        f"{doing} {world.name} {where} {parent}: schema changes that conflict, nothing was changed:"
    ]
    lines += [f"! {s.op.sql(s.table)} ({s.conflict})" for s in found]
    lines.append(
        f"change {world.name}'s schema to fit (drop the table and create it under another "
        f"name), or change {parent}'s, then {again} again"
    )
    data = [{"table": s.table, "schema": s.op.sql(s.table), "detail": s.conflict} for s in found]
    return ChronosError("\n".join(lines), errors.CONFLICT, data)


def after_rows(step: Step) -> bool:
    """Whether a step is made after the merge's rows: an index, a view, a trigger."""
    return step.op.kind in ("index", "view", "trigger")


def apply_steps(
    db: Database, world: World, parent: Session, todo: list[Step], rows_done: bool = False
) -> None:
    """Make the changes on the parent (in the merge's transaction): those that go before the
    rows, or (``rows_done``) those that go after them."""
    todo = [s for s in todo if after_rows(s) == rows_done]
    if not todo:
        return
    conn = parent.conn
    if parent.world is None:
        for s in todo:
            _apply_on_main(conn, s.op)
            conn.execute("delete from main._chronos_schema where id = ?", (s.op.id,))
            if s.op.kind in ("rename_column", "drop_column"):  # (the storage follows one
                db.follow_schema(conn)  # rename at a time, and a drop before an add)
        db.follow_schema(conn)
        for s in todo:
            if s.op.kind == "create":
                _counter_follows(conn, s.op)
        return
    for s in todo:
        if s.op.kind == "drop":
            conn.execute(
                f"delete from main.{overlay_table(s.op.table_id)} where {WORLD} = ?",
                (parent.world.id,),
            )
        conn.execute(
            "insert into main._chronos_schema(world, clock, kind, table_id, name, detail) "
            "select ?, ?, kind, table_id, name, detail from main._chronos_schema where id = ?",
            (parent.world.id, events.tick(conn), s.op.id),
        )
        conn.execute("delete from main._chronos_schema where id = ?", (s.op.id,))
    db.rebuild_world(parent)


def _apply_on_main(conn: apsw.Connection, op: Op) -> None:
    if op.kind in STATEMENT_OPS:
        kind = STATEMENT_OPS[op.kind]
        if op.kind.startswith("drop_"):
            conn.execute(f"DROP {kind.upper()} IF EXISTS main.{quote_ident(op.name)}")
        else:
            conn.execute(op.sql())
        return
    name = one_row(
        conn.execute("select name from main._chronos_tables where id = ?", (op.table_id,))
    )[0]
    if op.kind == "create":
        conn.execute(f"ALTER TABLE main.{stored_name(op.table_id)} RENAME TO {quote_ident(name)}")
    elif op.kind == "rename":
        conn.execute(
            f"ALTER TABLE main.{quote_ident(name)} RENAME TO {quote_ident(op.detail['to'])}"
        )
        conn.execute(
            "update main._chronos_tables set name = ? where id = ?", (op.detail["to"], op.table_id)
        )
    elif op.kind == "drop_column":
        column = op.detail["column"]
        have = [r[1].lower() for r in conn.execute(f"pragma main.table_info({quote_ident(name)})")]
        if column.lower() in have:
            schemasync.drop_triggers(conn, name)  # (SQLite refuses while a trigger names it)
            conn.execute(f"ALTER TABLE main.{quote_ident(name)} DROP COLUMN {quote_ident(column)}")
    elif op.kind == "rename_column":
        conn.execute(f"ALTER TABLE main.{quote_ident(name)}{op.detail['rest']}")
    elif op.kind == "add":
        conn.execute(f"ALTER TABLE main.{quote_ident(name)} ADD COLUMN {op.detail['column_sql']}")
    else:
        conn.execute(f"DROP TABLE main.{quote_ident(name)}")


def _counter_follows(conn: apsw.Connection, op: Op) -> None:
    """A created table's ids came from chronos' counter on the world; main's counter (now the
    table's AUTOINCREMENT sequence) starts past them, so the world's later ids don't collide."""
    conn.execute(
        "update main.sqlite_sequence set seq = max(seq, (select hi from main._chronos_counters "
        "where table_id = ?)) where name = ?",
        (op.table_id, op.name),
    )
