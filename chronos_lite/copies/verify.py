"""verify: a copy (a backup, a restored replica) checked on its own and against its source.

On its own: SQLite's ``integrity_check`` of the whole file, and every branch read to the last
row (its content hash). Against the source: each branch's hash compared with the source's at a
moment (the copy's own, which ``backup`` records, or one given), naming the tables that differ
and the branches only one side has. Main at a backup's moment is exact (its tables' history
positions as copied); a world is read as it was at that time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..errors import ChronosError
from ..storage.db import Database
from ..storage.fetch import all_rows
from ..storage.moments import exact_moment
from .contenthash import BranchHash, branch_hash, main_at, world_at

MOST_LISTED = 20  # integrity_check's messages kept


@dataclass
class Branch:
    name: str
    copy: BranchHash | None  # None: the source has it, the copy doesn't
    source: BranchHash | None = None
    why: str = ""  # why it differs, or why the source's couldn't be read
    note: str = ""  # what was checked, where not its hash (a backup's worlds)

    @property
    def same(self) -> bool:
        return not self.why


@dataclass
class Verified:
    integrity: list[str]  # ["ok"] when SQLite found nothing wrong
    against: str | None = None  # the source as compared: "<folder> at <moment>"
    branches: list[Branch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.integrity == ["ok"] and all(b.same for b in self.branches)


@dataclass
class Copied:
    """What a copy says of itself (``backup`` marks it): its source's folder, when, main's
    history positions then."""

    source: str | None
    moment: float | None
    seqs: dict[int, int] | None
    clock: int = 0


def integrity(db: Database) -> list[str]:
    rows = all_rows(db.main.conn.execute(f"pragma integrity_check({MOST_LISTED})"))
    return [str(r[0]) for r in rows]


def copied(db: Database) -> Copied:
    marks = dict(
        all_rows(
            db.main.conn.execute(
                "SELECT key, value FROM main._chronos_meta WHERE key IN "
                "('copied_from', 'copied_at', 'copied_seqs', 'copied_clock')"
            )
        )
    )
    seqs = marks.get("copied_seqs")
    return Copied(
        marks.get("copied_from"),
        marks.get("copied_at"),
        {int(k): v for k, v in json.loads(seqs).items()} if seqs else None,
        int(marks.get("copied_clock") or 0),
    )


def verify(
    copy: Database,
    source: Database | None = None,
    moment: float | None = None,
    seqs: dict[int, int] | None = None,
    clock: int = 0,
    only_main: bool = False,
) -> Verified:
    """``copy`` checked, and compared with ``source`` at ``moment`` (None: as it is now;
    ``seqs``, ``clock``: main, the worlds exactly at those history positions, the world
    clock; ``only_main``: main alone read and compared)."""
    out = Verified(integrity(copy))
    names = ["main", *([] if only_main else sorted(w.name for w in copy.worlds()))]
    mine = {name: branch_hash(copy, name) for name in names}
    if source is None:
        out.branches = [Branch(name, h) for name, h in mine.items()]
        return out
    when = "now" if moment is None else exact_moment(moment)
    out.against = f"{source.folder} {'as it is now' if moment is None else f'at {when}'}"
    theirs = set() if only_main else _open_then(source, moment)
    at = (moment, seqs, clock)
    for name in sorted(set(names) | theirs, key=lambda n: (n != "main", n)):
        out.branches.append(_compared(source, name, mine.get(name), at, theirs))
    return out


def _compared(
    source: Database,
    name: str,
    mine: BranchHash | None,
    at: tuple[float | None, dict[int, int] | None, int],
    theirs: set[str],
) -> Branch:
    if mine is None:
        return Branch(name, None, None, f"the copy has no branch {name}; the source had it")
    if name not in theirs and name != "main":
        return Branch(name, mine, None, f"the source had no open branch {name} then")
    moment, seqs, clock = at
    try:
        if moment is None:
            other = branch_hash(source, name)
        elif name == "main" and seqs is not None:
            other = main_at(source, seqs, moment, "main")
        elif name != "main" and clock:
            other = world_at(source, name, moment, clock)
        else:
            other = branch_hash(source, f"{name}@{exact_moment(moment)}")
    except ChronosError as exc:
        return Branch(name, mine, None, f"the source's couldn't be read: {exc.message}")
    return Branch(name, mine, other, _differs(mine, other))


def _differs(mine: BranchHash, other: BranchHash) -> str:
    if mine.hash == other.hash:
        return ""
    a = {t.table: t for t in mine.tables}
    b = {t.table: t for t in other.tables}
    parts = []
    for table in sorted(set(a) | set(b)):
        x, y = a.get(table), b.get(table)
        if x is None or y is None:
            parts.append(f"{table} only in the {'source' if x is None else 'copy'}")
        elif x.hash != y.hash:
            parts.append(f"{table} ({x.rows} rows in the copy, {y.rows} in the source)")
    return "differs: " + "; ".join(parts)


def _open_then(source: Database, moment: float | None) -> set[str]:
    """The source's worlds open at ``moment`` (None: now)."""
    if moment is None:
        return {w.name for w in source.worlds()}
    rows = all_rows(
        source.main.conn.execute(
            "SELECT name FROM main._chronos_worlds WHERE created <= ? AND "
            "(ended IS NULL OR ended > ?)",
            (moment, moment),
        )
    )
    return {r[0] for r in rows}
