"""The merge checks a merge runs on its result, inside its own transaction, before it commits.

Each check whose tables the merge touches (every check without tables) runs on the parent's
connection as it stands with the merge's rows applied, held by the guard to reading (a check
changes nothing) and within its timeout_ms. Rows found, or a timeout, refuse the merge, and the
merge's transaction rolls back: nothing of it stays.
"""

from __future__ import annotations

import apsw

from ..errors import ChronosError
from ..storage import guard
from ..storage.db import Database
from ..storage.governance import checks as mergechecks
from .plan import Plan

READ_ONLY = guard.Access(write=False, settings=False)


def touched(plan: Plan) -> set[str]:
    """The tables a merge changes (lower case), by the parent's names and (a table the world
    renamed) the world's: its rows' and its schema steps'. A check on a table the merge
    renames or drops then fails on the result, saying so: it can't pass unread."""
    names = plan.names
    out = {names.table(o.change.n, o.change.table).lower() for o in plan.writes}
    for s in plan.schema:
        out |= {names.table(s.op.table_id, s.table).lower(), s.table.lower()}
    return out


def gone(plan: Plan) -> str:
    """The tables the merge renames or drops, by the parent's names: a check that names one
    can't run on the result (``; the merge renames payments to pay_raw``; '' if none)."""
    said = []
    for s in plan.schema:
        was = plan.names.table(s.op.table_id, s.table)
        if s.op.kind == "rename" and was != s.table:
            said.append(f"renames {was} to {s.table}")
        elif s.op.kind == "drop":
            said.append(f"drops {was}")
    return f"; the merge {', '.join(dict.fromkeys(said))}" if said else ""


def hold(
    db: Database,
    conn: apsw.Connection,
    name: str,
    tables: set[str],
    held: bool = False,
    why: str = "",
) -> list[str]:
    """Refuse the merge of ``name`` if a check finds rows in its result (23514); ``held``:
    an agent's merge under a policy, for which each check finding rows is a reason to hold it
    instead (those reasons). ``why``: what in the merge may keep a check from running."""
    out = []
    for check in mergechecks.listing(db.main.conn):
        if not check.applies_to(tables):
            continue
        columns, rows = run(db, conn, check, why=why)
        if not rows:
            continue
        breaks = f"breaks merge check {check.name}, which finds "
        breaks += mergechecks.found_text(columns, rows)
        if not held:
            raise ChronosError(
                f"merging {name} {breaks}; nothing was merged", mergechecks.CHECK_VIOLATION
            )
        out.append(f"it {breaks}")
    return out


def run(
    db: Database,
    conn: apsw.Connection,
    check: mergechecks.MergeCheck,
    nothing: str = "nothing was merged",
    why: str = "",
) -> tuple[list, list]:
    """A check's columns and (at most 101) rows, read on ``conn`` (a branch's session) within
    its timeout (``why``: said when it can't be read)."""
    checking = guard.checking(conn, READ_ONLY)
    try:
        with db.bounds.within(check.timeout_ms, f"merge check {check.name}'s timeout_ms"):
            cursor = conn.execute(READ_ONLY.mark + check.query)
            try:
                columns = [d[0] for d in cursor.getdescription()]
            except apsw.ExecutionCompleteError:
                return [], []
            rows = []
            for row in cursor:
                rows.append(row)
                if len(rows) > 100:
                    break
            cursor.close(force=True)
            return columns, rows
    except apsw.SQLError as exc:
        raise ChronosError(
            f"merge check {check.name} fails on the merge's result ({exc}{why}): fix it (CREATE OR "
            f"REPLACE MERGE CHECK {check.name} ...) or drop it; {nothing}",
            mergechecks.CHECK_VIOLATION,
        ) from None
    except apsw.AuthError:
        raise ChronosError(
            f"merge check {check.name} may only read, and its query "
            f"{(checking.denied.name if checking.denied else 'writes')} isn't a read: "
            f"replace it with one SELECT (CREATE OR REPLACE MERGE CHECK {check.name} AS SELECT "
            f"...); {nothing}",
            mergechecks.CHECK_VIOLATION,
        ) from None
    finally:
        checking.done()
