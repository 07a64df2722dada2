"""A merge's counts and one page of its rows, for merge_preview, without planning every row.

The counts come from SQL (``changeset.ChangeSet``: per table, kind and whether the parent changed
the row since the fork), and most rows' outcome follows from those alone: a row the parent
didn't change applies; one it changed is a conflict, unless ``resolve`` settles it. Only rows
whose outcome needs their values are read in Python, each as ``apply.settle`` settles it for the
merge itself: with ``by_columns``, the updates both sides made (are their columns apart?); rows
settled by hand; every row of a merge ``into`` another branch (what changed there is a
comparison of rows). Those walks check the call's time limit as they go.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from ..storage.db import Database
from .apply import Outcome, Plan, Reach, settle
from .changes import CHUNK, Change, iter_changes, world_changes
from .changeset import ChangeSet, ordered
from .request import Options


@dataclass
class Tally:
    per_table: dict[str, Counter] = field(default_factory=dict)  # table -> kind -> rows
    total: int = 0
    conflicts: int = 0
    deletes: int = 0  # rows the merge deletes (its tables dropped aside)
    page: list[Outcome] = field(default_factory=list)

    def add(self, o: Outcome, times: int = 1) -> None:
        """Count an outcome (``times`` -1: take it back)."""
        self.conflicts += times * (o.outcome == "conflict")
        self.deletes += times * o.deletes


def tally(db: Database, p: Plan, reach: Reach, opts: Options, offset: int, limit: int) -> Tally:
    """The merge's counts, and its rows ``offset`` to ``offset + limit`` in diff's order."""
    if reach.keys is not None:  # (only_keys: those rows alone, read in full)
        return _listed(db, p, reach, opts, offset, limit)
    cs = ChangeSet(db, p.world, p.parent, reach.tables)
    out = Tally({t: cs.per_kind(t) for t in cs.counts}, cs.total)
    name = p.parent.branch
    if p.other:  # what changed on the other side is a comparison of rows: each row read
        for c in iter_changes(db, p.world, p.parent, reach.tables, True):
            out.add(settle(c, opts, _plain(reach), name))
    else:
        for table, counts in cs.counts.items():
            there = cs.queries[table].n in reach.there
            for (kind, changed), rows in counts.items():
                outcome = _outcome(kind, changed, there, opts)
                if outcome == "conflict":
                    out.conflicts += rows
                elif outcome == "apply" and kind == "delete":
                    out.deletes += rows
                elif outcome is None:  # (by_columns: are the two sides' columns apart?)
                    for c in _read(db, p, reach, table, cs.keys(table, 1, changed=True)):
                        out.add(settle(c, opts, _plain(reach), name))
    _by_hand(db, p, reach, opts, out)
    found = world_changes(db, p.world, p.parent, reach.tables, p.other, cs.page_keys(offset, limit))
    out.page = [settle(c, opts, reach, name) for c in ordered(found)]
    return out


def _outcome(kind: str, changed: bool, there: bool, opts: Options) -> str | None:
    """A row's outcome from its kind, whether the parent changed it and whether the target has
    its table (None: it needs the row's values), as ``apply._settle`` and ``_no_table`` give
    it for a row not settled by hand."""
    if not there:
        return "theirs" if opts.resolve == "theirs" else "conflict"
    if not changed or opts.resolve == "ours":
        return "apply"
    if opts.resolve == "theirs":
        return "theirs"
    return None if opts.by_columns and kind == "update" else "conflict"


def _plain(reach: Reach) -> Reach:
    """The reach without rows settled by hand (counted apart, by ``_by_hand``)."""
    return dataclasses.replace(reach, by_hand={})


def _by_hand(db: Database, p: Plan, reach: Reach, opts: Options, out: Tally) -> None:
    """Rows settled by hand: counted as the rest first, now as the caller settled them."""
    wanted: dict[str, list[tuple]] = {}
    for table, key in reach.by_hand:
        if reach.tables is None or table in reach.tables:
            wanted.setdefault(table, []).append(key)
    if not wanted:
        return
    name = p.parent.branch
    for c in world_changes(db, p.world, p.parent, reach.tables, p.other, wanted):
        out.add(settle(c, opts, _plain(reach), name), -1)
        out.add(settle(c, opts, reach, name))


def _read(
    db: Database, p: Plan, reach: Reach, table: str, keys: Iterable[tuple]
) -> Iterator[Change]:
    """The changes of ``table`` at ``keys``, read a chunk at a time."""
    left = iter(keys)
    while chunk := list(islice(left, CHUNK)):
        yield from world_changes(db, p.world, p.parent, reach.tables, p.other, {table: chunk})


def _listed(db: Database, p: Plan, reach: Reach, opts: Options, offset: int, limit: int) -> Tally:
    """only_keys: the rows named, each read (as many as the caller named)."""
    assert reach.keys is not None
    wanted: dict[str, list[tuple]] = {}
    for table, key in sorted(reach.keys, key=lambda k: k[0]):
        wanted.setdefault(table, []).append(key)
    found = world_changes(db, p.world, p.parent, reach.tables, p.other, wanted)
    outcomes = [settle(c, opts, reach, p.parent.branch) for c in ordered(found)]
    out = Tally(total=len(outcomes), page=outcomes[offset : offset + limit])
    for o in outcomes:
        out.per_table.setdefault(o.change.table, Counter())[o.change.kind] += 1
        out.add(o)
    return out
