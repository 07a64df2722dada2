"""A table read apart (bigger than ``whole_rows``) copied whole on its world's connection when
its reads show that a copy costs less than reading it apart: SQLite's plan of each new read
text is asked once (``EXPLAIN QUERY PLAN``).

* A join that would read the table whole into a temporary table each time it runs (SQLite
  flattens no UNION ALL view into a join under GROUP BY or DISTINCT, nor an aggregate: its plan
  says MATERIALIZE, or CO-ROUTINE, beside another table): copied before the second such read.
* A read that scans all of main's rows of the table (its plan: ``SCAN _m``, the view's arm of
  main's rows): its time is counted; once the reads have taken as long as a copy would (about
  ``COPY_S`` a row), the table is copied, so that what the reads cost is at most about twice
  what they would cost on main plus the copy.

A one-shot call pays its read as it is; a server, the shell or a program copies once.
"""

from __future__ import annotations

import apsw

from ...sqltext import name_tokens, quote_ident
from ..fetch import all_rows, one_row
from .placement import Session

COPY_S = 1.5e-6  # what copying a row whole costs, its indexes with it (0.7-1.5 us measured)
# Tables of fewer rows are left as they are: reading them apart costs little whatever the read
# (and a test database reads its small tables apart with ``whole_rows`` 0)
LEAST_ROWS = 10_000


def before_read(session: Session, stmt: str, binds: dict) -> tuple[set[int], frozenset[int]]:
    """Before a read on a world: the tables to copy whole now (a join would read them whole for
    the second time), and those the read scans in full (``after_read`` counts its time)."""
    apart = _apart(session)
    if not apart:
        return set(), frozenset()
    found = session.reads.get(stmt)
    if found is None:
        found = _plan(session, stmt, binds, apart)
        if len(session.reads) > 512:
            session.reads.clear()
        session.reads[stmt] = found
    joined, scanned = found
    joined = frozenset(n for n in joined if _rows(session, n) >= LEAST_ROWS)
    for n in joined:
        session.read_whole[n] = session.read_whole.get(n, 0) + 1
    big = frozenset(n for n in scanned if _rows(session, n) >= LEAST_ROWS)
    return {n for n in joined if session.read_whole[n] >= 2}, big


def after_read(session: Session, scanned: frozenset[int], seconds: float) -> set[int]:
    """A read that scanned these tables in full took ``seconds``: the tables whose full scans
    have now taken as long as copying them would."""
    out = set()
    for n in scanned:
        session.scan_time[n] = session.scan_time.get(n, 0.0) + seconds
        if session.scan_time[n] >= _rows(session, n) * COPY_S:
            out.add(n)
    return out


def _apart(session: Session) -> dict[str, int]:
    """The world's tables read apart, by name (lower case)."""
    schema = session.schema
    if schema is None or session.past or session.materialized <= session.whole:
        return {}  # (every table main's own or a whole copy: the usual case, at no cost)
    return {
        t.name.lower(): n
        for _name, (n, t) in schema.tables.items()
        if n in session.materialized and n not in session.whole
    }


def _plan(
    session: Session, stmt: str, binds: dict, apart: dict[str, int]
) -> tuple[frozenset[int], frozenset[int]]:
    """What SQLite's plan of a read reads whole: (the tables a join reads into a temporary
    table or co-routine, the tables whose main rows it scans in full)."""
    try:
        plan = all_rows(session.conn.execute(f"EXPLAIN QUERY PLAN {stmt}", binds))
    except apsw.Error:  # (it fails as it runs, with its own error)
        return frozenset(), frozenset()
    details = [str(r[-1]) for r in plan]
    top = [str(r[-1]) for r in plan if r[1] == 0]
    joined: set[int] = set()
    if sum(d.startswith(("SCAN ", "SEARCH ")) for d in top) >= 2:  # (a join)
        for d in top:
            if d.startswith(("MATERIALIZE ", "CO-ROUTINE ")):
                name = d.split(" ", 1)[1].lower()
                if name in apart:
                    joined.add(apart[name])
    scanned: set[int] = set()
    if any(d == "SCAN _m" or d.startswith("SCAN _m ") for d in details):
        words = {text.lower() for text, _start, _end in name_tokens(stmt)}
        scanned = {n for name, n in apart.items() if name in words}
    return frozenset(joined), frozenset(scanned)


def _rows(session: Session, n: int) -> int:
    """Main's rows of table ``n`` (SQLite's b-tree count, once per placement)."""
    if n not in session.main_rows:
        assert session.schema is not None  # (a placed world: it has tables read apart)
        t = next(t for m, t in session.schema.tables.values() if m == n)
        main = f"main.{quote_ident(t.stored)}"
        session.main_rows[n] = one_row(session.conn.execute(f"SELECT count(*) FROM {main}"))[0]
    return session.main_rows[n]
