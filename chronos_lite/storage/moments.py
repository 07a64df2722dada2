"""Moments: a time to read at (``'-15 minutes'``, ``'2026-11-30 10:00'``), shown and checked
against the retention window, and the history seq a table was at then.

Main's history numbers each change of a table (its seq) and stamps it with the time: the table
as it was at a moment is the table as of the last seq stamped at or before it.
"""

from __future__ import annotations

import re
import time

import apsw

from ..errors import BAD_ARGUMENT, ChronosError
from . import worlds
from .shadow import SEQ, TIME, history_table

UNITS = {
    "second": 1,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "week": 7 * 86400,
}
# a unit as people write it: in full, plural, or short as in `-5 min`, `-1h`, `-2d`
_ALIASES = {
    **{a: "second" for a in ("seconds", "second", "secs", "sec", "s")},
    **{a: "minute" for a in ("minutes", "minute", "mins", "min", "m")},
    **{a: "hour" for a in ("hours", "hour", "hrs", "hr", "h")},
    **{a: "day" for a in ("days", "day", "d")},
    **{a: "week" for a in ("weeks", "week", "wks", "wk", "w")},
}
_UNIT = "|".join(sorted(_ALIASES, key=len, reverse=True))
_AGO = re.compile(
    rf"^\s*-\s*(\d+(?:\.\d+)?)\s*({_UNIT})\s*$|"
    rf"^\s*(\d+(?:\.\d+)?)\s*({_UNIT})\s+ago\s*$",
    re.IGNORECASE,
)
_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d")
HELP = (
    "give a time ('2026-11-30 10:00', local time, or ISO 8601 with a zone), a time ago "
    "('-15 minutes', '-5 min', '-1h', '2 hours ago') or 'now'"
)


def parse_moment(text: str, now: float | None = None) -> float:
    """A moment as Unix seconds."""
    now = time.time() if now is None else now
    if text.strip().lower() == "now":
        return now
    m = _AGO.match(text)
    if m:
        amount = float(m.group(1) or m.group(3))
        unit = _ALIASES[(m.group(2) or m.group(4)).lower()]
        return now - amount * UNITS[unit]
    from datetime import datetime  # (here and in show_moment: most starts read no moment)

    cleaned = text.strip().replace("T", " ")
    if cleaned.endswith("Z"):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        moment = None
        for fmt in _FORMATS:
            try:
                moment = datetime.strptime(cleaned, fmt)
                break
            except ValueError:
                continue
    if moment is None:
        raise ChronosError(f"'{text}' isn't a moment: {HELP}", BAD_ARGUMENT)
    return moment.timestamp()  # naive: local time


def show_moment(when: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")


def exact_moment(when: float) -> str:
    """A moment as ``name@when`` reads it again, to the microsecond (local time)."""
    from datetime import datetime

    return datetime.fromtimestamp(when).isoformat(sep=" ", timespec="microseconds")


_SEQ_AT: dict[tuple[str, int, float], int] = {}


def seq_at(conn: apsw.Connection, n: int, when: float) -> int:
    """The table's last history seq stamped at or before ``when`` (0: before any). Walks back
    from the newest change, so its cost is the number of changes since the moment; a moment
    long enough ago that no write can still be stamped before it is remembered."""
    key = (conn.filename, n, when)
    if key in _SEQ_AT:
        return _SEQ_AT[key]
    seq = _seq_at(conn, n, when)
    if when < time.time() - 1:
        if len(_SEQ_AT) > 4096:
            _SEQ_AT.clear()
        _SEQ_AT[key] = seq
    return seq


def _seq_at(conn: apsw.Connection, n: int, when: float) -> int:
    h = f"main.{history_table(n)}"
    row = conn.execute(
        f"select {SEQ} from {h} where {TIME} <= ? order by {SEQ} desc limit 1", (when,)
    ).fetchone()
    return row[0] if row else 0


# --- the retention window --------------------------------------------------------------------

DEFAULT_RETENTION = 7 * 86400.0


def retention(conn: apsw.Connection) -> float:
    """How long history is kept, in seconds (``config retention``; 7 days by default)."""
    row = conn.execute("select value from main._chronos_meta where key = 'retention'").fetchone()
    return float(row[0]) if row else DEFAULT_RETENTION


def show_span(seconds: float) -> str:
    for unit in ("week", "day", "hour", "minute"):
        size = UNITS[unit]
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds:g} seconds"


def checked_moment(db, text: str, when: float | None = None) -> float:
    """A moment to read at: in the retention window (else refused, naming the oldest moment
    kept); a moment still to come reads as now. ``when``: already known (a checkpoint's)."""
    when = parse_moment(text) if when is None else when
    now = time.time()
    kept = retention(db.main.conn)
    oldest = now - kept
    if when < oldest:
        raise ChronosError(
            f"'{text}' ({show_moment(when)}) is before the oldest moment kept, "
            f"{show_moment(oldest)}: history is kept for {show_span(kept)} "
            f"(chronos <folder> config retention '30 days' keeps more)",
            BAD_ARGUMENT,
        )
    return min(when, now)


_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(second|minute|hour|day|week)s?\s*$", re.IGNORECASE)


def parse_span(text: str) -> float:
    """A length of time ('7 days', '12 hours') in seconds."""
    m = _SPAN.match(text)
    if not m:
        raise ChronosError(
            f"'{text}' isn't a length of time: give a number and a unit, e.g. '7 days', "
            f"'12 hours', '2 weeks'",
            BAD_ARGUMENT,
        )
    seconds = float(m.group(1)) * UNITS[m.group(2).lower()]
    if seconds < 60:
        raise ChronosError("keep history for a minute at least", BAD_ARGUMENT)
    return seconds


def check_world_moment(conn: apsw.Connection, world: worlds.World, when: float, asked: str) -> None:
    """A world reads as it was only since its fork, or its last rebase."""
    since = worlds.readable_since(conn, world)
    if when < since:
        raise ChronosError(
            f"'{asked}': {world.name} didn't exist then as it is now (it was forked, or "
            f"last rebased, at {show_moment(since)}); give a later moment",
            BAD_ARGUMENT,
        )
