"""backup, export, verify and hash: a copy of the database made, a branch written as a plain
SQLite file, a copy checked and compared (``copies/``: the engine; here the replies, and the
copy or source opened beside the call's database)."""

from __future__ import annotations

import time
from pathlib import Path

from .. import render
from ..copies import backup as copying
from ..copies import export as exporting
from ..copies import verify as checking
from ..copies.contenthash import BranchHash, branch_hash
from ..errors import BAD_ARGUMENT, NOT_FOUND, ChronosError
from ..merge import diff as merge_diff
from ..statements import more
from ..storage import faults
from ..storage.branchref import BranchRef
from ..storage.db import DB_FILE, Database
from ..storage.moments import checked_moment, exact_moment
from ..storage.worlds import World
from .registry import Args, Caller, Reply, operation


@operation(
    "backup",
    "Back the database up into a new folder",
    "A consistent copy of the whole database (main, every world, the history kept, agents "
    "and policies), made online while others write, into a new folder that chronos opens as "
    "it opens this one. The copy is checked before it counts: SQLite's integrity_check, "
    "main's content hash equal to this database's as copied, the worlds at the versions "
    "copied and their changes read. It takes the folder's name only then (replace: an older "
    "copy there goes only then).",
    mcp=False,
)
def backup_op(db: Database, args: Args, caller: Caller) -> Reply:
    started = time.perf_counter()
    dest = copying.destination(db, args["to"], bool(args.get("replace")))
    copied = copying.copy(db, dest)
    try:
        checked = _check_copy(db, copied)
    except BaseException:
        copying.discard(copied)
        raise
    if not checked.ok:
        copying.discard(copied)
        raise ChronosError(
            f"the backup failed its check, and was thrown away (nothing was written to "
            f"{dest}): {_problems(checked)}",
            faults.CORRUPT,
        )
    copying.publish(copied, dest, bool(args.get("replace")))
    ms = round((time.perf_counter() - started) * 1000)
    branches = [b.name for b in checked.branches]
    text = (
        f"backed up {db.folder} to {args['to']} as it was at "
        f"{exact_moment(copied.snapshot.moment)}"
        f": {_size(copied.bytes)}, {len(branches)} branch{'es' if len(branches) != 1 else ''} "
        f"({', '.join(branches)}) in {ms} ms; checked: integrity ok, main equal to the "
        f"source's as copied, the worlds at the versions copied"
    )
    data = {
        "to": str(dest),
        "moment": copied.snapshot.moment,
        "bytes": copied.bytes,
        "pages": copied.pages,
        "ms": ms,
        **_branch_data(checked),
    }
    return Reply(text, data, value=data)


@operation(
    "export",
    "Write a branch as a plain SQLite file",
    "The branch (main, a world, or name@when) as an SQLite file of its own, for any tool and "
    "no chronos: the app's tables with their CREATE TABLE text, rows and rowids, its indexes, "
    "views, triggers and FTS5 tables, AUTOINCREMENT counters, user_version and application_id; "
    "nothing of chronos. Read in one transaction while others write; written beside the file "
    "and named only once complete and checked (replace: a file there goes only then).",
    mcp=False,
)
def export_op(db: Database, args: Args, caller: Caller) -> Reply:
    dest = exporting.destination(db, args["to"], bool(args.get("replace")))
    ref, target = args.ref(), args.target(db)
    label = str(ref)
    if ref.past:  # (one exact moment: the one read, and the one the reply names)
        moment = exact_moment(checked_moment(db, ref.when or ""))
        target, label = BranchRef(ref.name, moment), f"{ref.name} as it was at {moment}"
    done = exporting.export(db, target, label, dest, bool(args.get("replace")))
    tables = f"{len(done.tables)} table{'s' if len(done.tables) != 1 else ''}"
    text = (
        f"exported {label} to {args['to']}: {tables}, {done.rows} "
        f"row{'s' if done.rows != 1 else ''}, {_size(done.bytes)}; checked: integrity ok"
    )
    if done.tables:
        text += "\n" + render.table(["table", "rows"], [list(t) for t in done.tables])
    if done.foreign_keys:
        found = "; ".join(f"{t} row {r} -> {p}" for t, r, p in done.foreign_keys)
        text += f"\nforeign_key_check found rows whose parent is missing (as on {ref}): {found}"
    for note in done.left_out:
        text += f"\nleft out: {note}"
    data = {
        "to": str(done.path),
        "branch": str(ref),
        "bytes": done.bytes,
        "rows": done.rows,
        "tables": [{"table": t, "rows": n} for t, n in done.tables],
        "foreign_key_violations": [
            {"table": t, "rowid": r, "parent": p} for t, r, p in done.foreign_keys
        ],
        "left_out": done.left_out,
    }
    return Reply(text, data, value=data)


@operation(
    "verify",
    "Check a copy of the database, and compare it with its source",
    "For a copy (a backup, a restored replica): SQLite's integrity_check of the whole file, "
    "every branch read to its last row (its content hash), and each branch compared with "
    "the source's at a moment: against (a folder, or folder@when), else the source and "
    "moment a backup recorded in it. Names the tables that differ and the branches only one "
    "side has. Changes nothing.",
    read_only=True,
    idempotent=True,
    mcp=False,
)
def verify_op(db: Database, args: Args, caller: Caller) -> Reply:
    given, own = args.get("against"), checking.copied(db)
    folder, when = _against(given, own)
    if folder is None:
        verified = checking.verify(db)
    else:
        source = more.elsewhere(folder)
        try:
            if given is None:  # (the copy's own moment: every branch exactly as copied)
                moment, seqs, clock = own.moment, own.seqs, own.clock
            else:
                moment, seqs, clock = (checked_moment(source, when) if when else None), None, 0
            verified = checking.verify(db, source, moment, seqs, clock)
        finally:
            source.close()
    return Reply(_verified_text(db, verified), _verified_data(verified), value=verified)


@operation(
    "hash",
    "A content hash of a branch",
    "A hash of a branch's tables (their columns and primary keys) and rows in key order, "
    "equal for equal contents whatever their history: main, a world, or name@when. Each "
    "table's hash and rows beside it. Changes nothing.",
    read_only=True,
    idempotent=True,
    mcp=False,
)
def hash_op(db: Database, args: Args, caller: Caller) -> Reply:
    found = branch_hash(db, args.get("branch") or "main")
    rows = [[t.table, t.rows, t.hash] for t in found.tables]
    tables = f"{len(rows)} table{'s' if len(rows) != 1 else ''}"
    text = (
        f"{found.hash}  {found.branch} ({tables}, {found.rows} row{'s' if found.rows != 1 else ''})"
    )
    if rows:
        text += "\n" + render.table(["table", "rows", "hash"], rows)
    return Reply(text, _hash_data(found), value=found)


# --- checking a copy -----------------------------------------------------------------------


def _check_copy(db: Database, copied: copying.Copied) -> checking.Verified:
    """The copy opened as a database and checked: main compared with ``db`` exactly as
    copied; the worlds open as were copied, at the versions copied, their changes read."""
    copy = more.elsewhere(copied.partial)
    try:
        snapshot = copied.snapshot
        verified = checking.verify(copy, db, snapshot.moment, snapshot.seqs, only_main=True)
        have = {w.name: w for w in copy.worlds()}
        for name in sorted(set(have) | set(snapshot.worlds)):
            verified.branches.append(_world_copied(copy, name, have.get(name), snapshot))
    finally:
        copy.close()
    return verified


def _world_copied(
    copy: Database, name: str, world: World | None, snapshot: copying.Snapshot
) -> checking.Branch:
    if world is None:
        return checking.Branch(name, None, None, "the source had it open; the copy hasn't")
    if snapshot.worlds.get(name) != world.version:
        why = f"the copy's {name} is at version {world.version}, not as copied"
        return checking.Branch(name, None, None, why)
    counted = merge_diff.diff(copy, world).rows  # (its changes read, counted in SQL)
    return checking.Branch(name, None, note=f"version {world.version}, {counted} rows changed")


def _against(given: str | None, own: checking.Copied) -> tuple[Path | None, str | None]:
    """The source folder a verify compares with, and the moment given (None: the copy's own
    or now)."""
    if given is None:
        if own.source is None:
            return None, None
        folder = Path(own.source)
        if not (folder / DB_FILE).is_file():
            raise ChronosError(
                f"this copy was made from {folder}, which holds no chronos database now: "
                f"give the source with against (a folder, or folder@when)",
                NOT_FOUND,
            )
        return folder, None
    path, at, when = given.partition("@")
    folder = Path(path).expanduser()
    if not (folder / DB_FILE).is_file():
        raise ChronosError(
            f"against: {folder} holds no chronos database (give its folder, or folder@when)",
            BAD_ARGUMENT,
        )
    if at and not when.strip():
        raise ChronosError(f"against: nothing after '@' in {given!r} (folder@when)", BAD_ARGUMENT)
    return folder, (when if at else None)


def _problems(v: checking.Verified) -> str:
    found = [] if v.integrity == ["ok"] else [f"integrity_check: {'; '.join(v.integrity)}"]
    found += [f"{b.name}: {b.why}" for b in v.branches if not b.same]
    return "; ".join(found)


def _verified_text(db: Database, v: checking.Verified) -> str:
    head = "integrity ok" if v.integrity == ["ok"] else f"integrity_check: {'; '.join(v.integrity)}"
    against = f" against {v.against}" if v.against else ""
    rows = [
        [b.name, b.copy.rows if b.copy else None, (b.copy.hash[:16] if b.copy else ""), _said(b)]
        for b in v.branches
    ]
    verdict = "the copy is sound" if v.ok else "the copy DIFFERS or is damaged"
    return f"{db.folder}: {head}; {len(rows)} branches{against}: {verdict}\n" + render.table(
        ["branch", "rows", "hash", "source"], rows
    )


def _said(b: checking.Branch) -> str:
    if b.source is None and not b.why:
        return ""
    return "same" if b.same else b.why


def _verified_data(v: checking.Verified) -> dict:
    return {"ok": v.ok, "integrity": v.integrity, "against": v.against, **_branch_data(v)}


def _branch_data(v: checking.Verified) -> dict:
    return {
        "branches": [
            {
                "branch": b.name,
                "hash": b.copy.hash if b.copy else None,
                "rows": b.copy.rows if b.copy else None,
                "source_hash": b.source.hash if b.source else None,
                "same": b.same,
                "why": b.why,
                **({"checked": b.note} if b.note else {}),
            }
            for b in v.branches
        ]
    }


def _hash_data(found: BranchHash) -> dict:
    return {
        "branch": found.branch,
        "hash": found.hash,
        "rows": found.rows,
        "tables": [{"table": t.table, "rows": t.rows, "hash": t.hash} for t in found.tables],
    }


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"
