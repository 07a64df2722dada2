"""What reads the columns a diff changed (``diff`` with readers, DIFF ... READERS): the views,
triggers and indexes SQLite has that name them, then the readers people declared (MARK READER,
``storage.governance.readers``), critical ones marked, and the changed columns no declared
reader covers: what nothing told chronos about."""

from __future__ import annotations

from .. import render
from ..sqltext import name_tokens
from ..storage.db import Database
from ..storage.fetch import all_rows
from ..storage.governance import readers as declared
from .diff import Diff

COLUMNS = ["table", "column", "reader", "kind"]


def readers(db: Database, d: Diff, uncovered_always: bool = True) -> tuple[str, dict]:
    """The text and data (``readers``: one entry per reader of a changed column, ``uncovered``:
    the changed ``table.column`` names no declared reader reads; said in the text only where
    some reader is declared, unless ``uncovered_always``)."""
    changed = d.changed_columns()
    found = _schema_readers(db, changed)
    names = [f"{table}.{col}" for table, col in changed]
    marked = declared.reading(db.main.conn, names)
    covered: set[str] = set()
    for reader, read in marked:
        kind = "critical reader" if reader.critical else "reader"
        for full in read:
            table, col = changed[names.index(full)]
            found.append({"table": table, "column": col, "reader": reader.name, "kind": kind})
            covered.add(full)
    uncovered = [n for n in names if n not in covered]
    data = {"readers": found, "uncovered": uncovered}
    head = f"{len(changed)} changed column{'s' if len(changed) != 1 else ''} on {d.branch}"
    if not found:
        text = head + "; nothing in the database reads them (no view, trigger or index)"
    else:
        rows = [[f["table"], f["column"], f["reader"], f["kind"]] for f in found]
        text = head + "; read by:\n" + render.table(COLUMNS, rows)
    if uncovered and (uncovered_always or declared.listing(db.main.conn)):
        text += (
            f"\nno declared reader reads {', '.join(uncovered)} (MARK READER name READS "
            f"(table.column, ...) declares one)"
        )
    return text, data


def _schema_readers(db: Database, changed: list[tuple[str, str]]) -> list[dict]:
    """The views, triggers and indexes of main that name a changed column."""
    objects = all_rows(
        db.main.conn.execute(
            "select type, name, tbl_name, sql from main.sqlite_schema where type in "
            "('view', 'trigger', 'index') and sql is not null and name not like '\\_chronos\\_%' "
            "escape '\\'"
        )
    )
    found = []
    for kind, name, tbl, sql in objects:
        words = {w.lower() for w, _, _ in name_tokens(sql)}
        for table, col in changed:
            if col.lower() in words and (table.lower() in words or tbl.lower() == table.lower()):
                found.append({"table": table, "column": col, "reader": name, "kind": kind})
    return found
