"""The app's triggers, firing on a world's writes as they fire on main.

A TEMP view can only have INSTEAD OF triggers, and those see NEW as the statement gave it (no
column defaults, no affinity, no allocated key). So a table's BEFORE and AFTER triggers are
copied onto small TEMP *event tables*, one per (timing, event) the table has triggers for,
whose columns are the table's own (so NEW and OLD read as on main, types and all). The world's
INSTEAD OF trigger for a row *pushes* a row of events (OLD), and at the right moment *fires*
it, by an UPDATE that sets NEW (and ``_chronos_fire``): every copy is ``AFTER UPDATE OF
_chronos_fire`` on the event table, with the app's WHEN, body and UPDATE OF columns (read from
the SET list: ``setmask``). Then it pops the row.

What SQLite does around triggers holds too: they fire newest first; a trigger doesn't fire
again while it runs (PRAGMA recursive_triggers is off on chronos' connections, as on main):
``_chronos_active`` holds the running ones, by the event row they run for; a BEFORE trigger's
RAISE(IGNORE) skips the row: the last trigger to fire on a BEFORE event table marks the row
``_chronos_done``, and a row without the mark is skipped.

The copies run the app's SQL, so the guard judges them as the caller's own statements; only
chronos' bookkeeping triggers around them (enter, exit, done, the SET-list markers) are
trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...sqltext import quote_ident, quote_literal, tokens
from ..schema.catalog import TableInfo
from ..schema.constraints import UserTrigger
from .context import CTX, DEPTH_DOWN, DEPTH_UP

FRAME, ROWID, MASK, QUIET, FIRE = (
    "_chronos_frame",
    "_chronos_rowid",
    "_chronos_mask",
    "_chronos_quiet",
    "_chronos_fire",
)
ACTIVE, DONE = "temp._chronos_active", "temp._chronos_done"
ROWID_NAMES = ("rowid", "oid", "_rowid_")


@dataclass(frozen=True)
class Events:
    """A table's own triggers on a branch: (the trigger's number in the branch, the trigger)."""

    n: int
    t: TableInfo
    triggers: tuple[tuple[int, UserTrigger], ...]

    def on(self, timing: str, event: str) -> list[tuple[int, UserTrigger]]:
        return [(k, u) for k, u in self.triggers if u.timing == timing and u.event == event]

    def pushed_at_start(self, event: str) -> list[str]:
        """The timings whose events an UPDATE or DELETE pushes as it starts (OLD is known
        then, and the SET list's columns and the REPLACE flag are read before anything nests)."""
        if event == "INSERT":
            return []
        return [timing for timing in ("BEFORE", "AFTER") if self.on(timing, event)]

    @property
    def watched(self) -> list[str]:
        """The columns UPDATE OF lists name, in a fixed order: column i is bit i of setmask."""
        out: list[str] = []
        for _k, u in self.triggers:
            for c in u.columns:
                real = next((x for x in self.t.column_names if x.lower() == c.lower()), c)
                if real not in out:
                    out.append(real)
        return out[:62]

    def bits(self, u: UserTrigger) -> int:
        watched = [c.lower() for c in self.watched]
        return sum(1 << watched.index(c.lower()) for c in u.columns if c.lower() in watched)


def table_of(n: int, timing: str, event: str) -> str:
    return f"_chronos_e{n}_{timing[0].lower()}{event[0].lower()}"


def _events(n: int, timing: str, event: str) -> str:
    return f"temp.{table_of(n, timing, event)}"


def _top(e: str) -> str:
    return f"(SELECT max({FRAME}) FROM {e})"


def _columns(t: TableInfo) -> list[str]:
    return [quote_ident(c) for c in t.column_names]


# --- the objects -----------------------------------------------------------------------------


def objects(ev: Events) -> tuple[list[str], set[str]]:
    """The event tables and the triggers on them (in the order they must be made: SQLite fires
    the newest first), and the names of chronos' own triggers among them."""
    out: list[str] = []
    trusted: set[str] = set()
    cols = ", ".join(f"{quote_ident(c.name)} {c.decltype}".rstrip() for c in ev.t.columns)
    for timing in ("BEFORE", "AFTER"):
        for event in ("INSERT", "UPDATE", "DELETE"):
            found = ev.on(timing, event)
            if not found:
                continue
            e = _events(ev.n, timing, event)
            out.append(
                f"CREATE TEMP TABLE {table_of(ev.n, timing, event)}({FRAME} INTEGER PRIMARY KEY, "
                f"{ROWID}, {MASK} INTEGER, {QUIET} INTEGER, {FIRE} INTEGER, {cols})"
            )
            head = f"AFTER UPDATE OF {FIRE} ON {table_of(ev.n, timing, event)}"
            if timing == "BEFORE":  # made first: it fires last, once every trigger ran
                name = f"_chronos_d{ev.n}_{table_of(ev.n, timing, event)[-2:]}"
                out.append(
                    f"CREATE TEMP TRIGGER {name} {head} WHEN NEW.{FIRE} BEGIN INSERT INTO "
                    f"{DONE} VALUES ({quote_literal(e)}, NEW.{FRAME}); END"
                )
                trusted.add(name)
            for k, u in found:
                when = _when(ev, k, u)
                exit_, copy, enter = f"_chronos_x{k}", f"_chronos_u{k}", f"_chronos_n{k}"
                out += [
                    f"CREATE TEMP TRIGGER {exit_} {head} WHEN NEW.{FIRE} BEGIN DELETE FROM "
                    f"{ACTIVE} WHERE id = {k} AND frame = NEW.{FRAME}; END",
                    f"CREATE TEMP TRIGGER {copy} {head} WHEN {when} BEGIN "
                    f"{_rowids(ev.t, u.body).rstrip().rstrip(';')}; END",
                    f"CREATE TEMP TRIGGER {enter} {head} WHEN {when} BEGIN INSERT INTO "
                    f"{ACTIVE} VALUES ({k}, NEW.{FRAME}); END",
                ]
                trusted.update((exit_, enter))
    return out, trusted


def _when(ev: Events, k: int, u: UserTrigger) -> str:
    """When a copy fires: its row is fired (not kept quiet), it isn't running already for a
    row further out, the app's WHEN holds, and the SET list names a column of its UPDATE OF."""
    parts = [
        f"NEW.{FIRE}",
        f"NOT EXISTS (SELECT 1 FROM {ACTIVE} WHERE id = {k} AND frame < NEW.{FRAME})",
    ]
    if u.when:
        parts.append(f"({_rowids(ev.t, u.when)})")
    if u.columns:
        parts.append(f"(NEW.{MASK} & {ev.bits(u)}) != 0")
    return " AND ".join(parts)


def _rowids(t: TableInfo, sql: str) -> str:
    """NEW.rowid and OLD.rowid (and oid, _rowid_) read the row's rowid, which an event row
    keeps in a column of its own (unless the table has a column of that name)."""
    own = {c.lower() for c in t.column_names}
    found = tokens(sql)
    for i in range(len(found) - 3, -1, -1):
        (a, ka, _s, _e), (dot, _kd, _s2, _e2), (b, kb, start, end) = found[i : i + 3]
        if (
            ka == "word"
            and a.upper() in ("NEW", "OLD")
            and dot == "."
            and kb == "word"
            and b.lower() in ROWID_NAMES
            and b.lower() not in own
        ):
            sql = sql[:start] + ROWID + sql[end:]
    return sql


def markers(ev: Events, view: str) -> tuple[list[str], set[str]]:
    """For UPDATE OF triggers: a trigger per watched column that marks it set when an UPDATE's
    SET list names it. Made after the view's own UPDATE trigger, so they fire before it."""
    out, names = [], set()
    for i, c in enumerate(ev.watched):
        name = f"_chronos_m{ev.n}_{i}"
        out.append(
            f"CREATE TEMP TRIGGER {name} INSTEAD OF UPDATE OF {quote_ident(c)} ON {view} "
            f"BEGIN UPDATE {CTX} SET setmask = setmask | {1 << i}; END"
        )
        names.add(name)
    return out, names


# --- the steps of a world's INSTEAD OF triggers ----------------------------------------------


def start(ev: Events | None, event: str, old_rowid: str) -> list[str]:
    """An UPDATE's or DELETE's first steps: push OLD for its BEFORE and AFTER triggers."""
    if ev is None:
        return []
    out = []
    quiet = f"(SELECT replacing FROM {CTX})" if event == "DELETE" else "0"
    old = ", ".join(f"OLD.{c}" for c in _columns(ev.t))
    for timing in ev.pushed_at_start(event):
        out.append(
            f"INSERT INTO {_events(ev.n, timing, event)}({ROWID}, {MASK}, {QUIET}, {FIRE}, "
            f"{', '.join(_columns(ev.t))}) VALUES ({old_rowid}, (SELECT setmask FROM {CTX}), "
            f"{quiet}, 0, {old})"
        )
    if event == "UPDATE" and ev.watched:
        out.append(f"UPDATE {CTX} SET setmask = 0")
    return out


def fire(
    ev: Events | None,
    timing: str,
    event: str,
    go: str,
    new: dict[str, str] | None = None,
    new_rowid: str = "NULL",
    stored: str | None = None,
) -> list[str]:
    """Fire a row's triggers of one timing. ``new``: NEW's values as expressions (BEFORE), or
    ``stored``: a FROM ... WHERE clause finding the row as written (AFTER)."""
    if ev is None or not ev.on(timing, event):
        return []
    e = _events(ev.n, timing, event)
    cols = _columns(ev.t)
    top = _top(e)
    steps: list[str] = []
    pushed_here = event == "INSERT"
    # a skipped row fires no AFTER triggers; what was pushed is popped all the same
    when = go if timing == "AFTER" else "1"
    popped = go if pushed_here else "1"
    if pushed_here:  # an INSERT's row of events is pushed as it fires: NEW is known then
        if stored is not None:
            picked = f"{new_rowid}, 0, 0, 0, {', '.join(cols)} {stored} AND {go}"
        else:
            assert new is not None
            vals = ", ".join(new.get(c, "NULL") for c in ev.t.column_names)
            picked = f"{new_rowid}, 0, 0, 0, {vals} WHERE {go}"
        steps.append(
            f"INSERT INTO {e}({ROWID}, {MASK}, {QUIET}, {FIRE}, {', '.join(cols)}) SELECT {picked}"
        )
    if event == "UPDATE" and stored is not None:
        sets = f"({ROWID}, {', '.join(cols)}) = (SELECT {new_rowid}, {', '.join(cols)} {stored})"
    elif event == "UPDATE":
        assert new is not None
        values = ", ".join(f"{q} = {new.get(c, 'NULL')}" for q, c in zip(cols, ev.t.column_names))
        sets = f"{ROWID} = {new_rowid}, {values}"
    else:
        sets = ""
    fired = f"{FIRE} = NOT {QUIET} AND NOT (SELECT replica FROM {CTX})"  # (a merge: no)
    sets = f"{sets}, {fired}" if sets else fired
    steps += [DEPTH_UP, f"UPDATE {e} SET {sets} WHERE {FRAME} = {top} AND {when}", DEPTH_DOWN]
    ids = ", ".join(str(k) for k, _u in ev.on(timing, event))
    if timing == "BEFORE":  # a RAISE(IGNORE) in a BEFORE trigger: the row is skipped
        steps.append(
            f"UPDATE {CTX} SET k = (SELECT {FIRE} FROM {e} WHERE {FRAME} = {top}) AND NOT "
            f"EXISTS (SELECT 1 FROM {DONE} WHERE events = {quote_literal(e)} AND frame = {top})"
        )
        steps.append(f"DELETE FROM {DONE} WHERE events = {quote_literal(e)} AND frame = {top}")
    steps += [
        f"DELETE FROM {ACTIVE} WHERE id IN ({ids}) AND frame >= {top} AND {popped}",
        f"DELETE FROM {e} WHERE {FRAME} = {top} AND {popped}",
    ]
    if timing == "BEFORE":
        steps.append(f"UPDATE {CTX} SET skip = 1 WHERE k")
    return steps
