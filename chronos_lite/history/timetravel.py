"""Reading the past: ``<table> AS OF '<moment>'`` in a statement, rewritten to read a TEMP view
of the table as it was (moments themselves are ``storage.moments``; ``name@when`` sessions are
``storage.db``'s).

Main's history keeps each row's image before every change, numbered per table (its seq) and
stamped with the time of the change. The table as it was at a moment is the table as of the last
seq stamped at or before it: for each key, the first image after that seq, else the live row.
That is ``world.views.main_as_of``.
"""

from __future__ import annotations

import functools
import re
import time

from ..errors import BAD_ARGUMENT, ChronosError
from ..sqltext import all_words, keywords, quote_ident, tokens, top_level_words
from ..storage import moments
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.schema import virtual as ftsinfo
from ..storage.schema.catalog import ROWID_COL, TableInfo
from ..storage.shadow import DEAD, OP, SEQ, TIME, WORLD, history_table, world_history_table
from ..storage.world import state as worldstate
from ..storage.world import views as worldviews
from ..storage.world.views import key_view
from ..storage.worlds import World


def past_name(n: int, seq: int) -> str:
    return f"_chronos_asof_{n}_{seq}"


@functools.lru_cache(maxsize=256)  # the same query text comes again and again
def as_of_clauses(sql: str) -> list[tuple[int, int, str, int, int]]:
    """Each ``<table> AS OF '<moment>'`` in a statement, outside strings and comments:
    (start of the table name, end of the name, the moment's text, start of AS, end of clause).
    """
    out = []
    found = tokens(sql)
    for i in range(len(found) - 3):
        name, as_, of, moment = found[i : i + 4]
        if (
            as_[0].upper() == "AS"
            and as_[1] == "word"
            and of[0].upper() == "OF"
            and of[1] == "word"
            and moment[1] == "string"
            and name[1] in ("word", "name")
        ):
            out.append((name[2], name[3], moment[0], as_[2], moment[3]))
    return out


def count_then(n: int, t, seq: int) -> str:
    """``count(*)`` of main's table as of history seq ``seq``: the count now, plus for each key
    changed since whether it existed then less whether it exists now (cost: the changes)."""
    h = f"main.{history_table(n)}"
    keys = [quote_ident(c) for c in t.key_cols]
    same = " AND ".join(f"h2.{k} = k.{k}" for k in keys)
    if t.key_kind == "rowid":
        now = f"m.rowid = k.{keys[0]}"
    else:
        now = " AND ".join(f"m.{quote_ident(c)} = k.{quote_ident(c)}" for c in t.pk)
    return (
        f"SELECT (SELECT count(*) FROM main.{quote_ident(t.stored)}) + coalesce((SELECT "
        f"sum((SELECT h2.{OP} FROM {h} AS h2 WHERE {same} AND h2.{SEQ} > {seq} ORDER BY "
        f"h2.{SEQ} LIMIT 1) - EXISTS (SELECT 1 FROM main.{quote_ident(t.stored)} AS m WHERE "
        f"{now})) FROM (SELECT DISTINCT {', '.join(keys)} FROM {h} NOT INDEXED "
        f"WHERE {SEQ} > {seq}) AS k), "
        f'0) AS "count(*)"'
    )


def world_count_then(session: Session, n: int, t: TableInfo, world: World, when: float) -> str:
    """``count(*)`` of a world's table as it was at ``when``: its count now, plus for each key
    the world changed since whether the key had a row then less whether it has one now (cost:
    the world's changes since). A key's row then is its entry as the world's history says it
    was (the first record after ``when``), or, where it had none, main's row as of the fork."""
    wh, h = f"main.{world_history_table(n)}", f"main.{history_table(n)}"
    main = f"main.{quote_ident(t.stored)}"
    keys = [t.col(c) for c in t.key_cols]
    same = " AND ".join(f"x.{k} = k.{k}" for k in keys)
    same_h = " AND ".join(f"h.{k} = k.{k}" for k in keys)
    if t.key_kind == "rowid":
        in_main = f"m.rowid = k.{keys[0]}"
        now = f"v.{quote_ident(ROWID_COL)} = k.{keys[0]}"
    else:
        in_main = " AND ".join(f"m.{t.col(c)} = k.{t.col(c)}" for c in t.pk)
        now = " AND ".join(f"v.{quote_ident(c)} = k.{t.col(c)}" for c in t.key_cols)
    at_fork = (
        f"coalesce((SELECT h.{OP} FROM {h} AS h WHERE {same_h} AND h.{SEQ} > "
        f"{world.base.get(n, 0)} ORDER BY h.{SEQ} LIMIT 1), "
        f"EXISTS (SELECT 1 FROM {main} AS m WHERE {in_main}))"
    )
    then = (
        f"(SELECT CASE WHEN x.{OP} = 0 THEN {at_fork} ELSE x.{DEAD} = 0 END FROM {wh} AS x "
        f"WHERE x.{WORLD} = {world.id} AND {same} AND x.{TIME} > {when!r} "
        f"ORDER BY x.{TIME}, x.rowid LIMIT 1)"
    )
    rows = f"temp.{key_view(n)}" if t.key_kind == "rowid" else quote_ident(t.name)
    count = (
        worldstate.count_select(session.conn, t, n, "n", n in session.whole, n in session.native)
        if n in session.materialized
        else f"SELECT count(*) FROM {main}"
    )
    return (
        f"SELECT ({count}) + coalesce((SELECT sum({then} - EXISTS (SELECT 1 FROM {rows} AS v "
        f"WHERE {now})) FROM (SELECT DISTINCT {', '.join(keys)} FROM {wh} "
        f'WHERE {WORLD} = {world.id} AND {TIME} > {when!r}) AS k), 0) AS "count(*)"'
    )


# --- AS OF in a statement: read through views of the tables as they were ---------------------


def as_of(db: Database, session: Session, stmt: str) -> str:
    """``<table> AS OF '<moment>'`` read through a TEMP view of the table as it was then (on a
    world, the world's table then)."""
    clauses = as_of_clauses(stmt)
    if not clauses:
        return stmt
    world = session.world if session.world is not None and session.world.id else None
    key = (stmt, db.schema_version(), (world.id, world.fork_seq) if world else 0)
    hit = session.rewrites.get(key)
    if hit is not None and time.time() < hit[1] and _views_there(session, hit[0]):
        return hit[0]
    rewritten = _rewrite_as_of(db, session, stmt, clauses, world)
    times = [moments.parse_moment(c[2]) for c in clauses]
    if all(m < time.time() - 1 for m in times):  # a past that can't change: remembered
        if len(session.rewrites) > 1024:
            session.rewrites.clear()
        kept = moments.retention(db.main.conn)
        session.rewrites[key] = (rewritten, min(times) + kept)  # until it leaves the window
    return rewritten


def _views_there(session: Session, rewritten: str) -> bool:
    """The kept views a remembered rewrite names are still there (at most 32 are kept, and a
    world's views are rebuilt when its schema moves)."""
    names = re.findall(r'temp\."(_chronos_asof_[^"]+)"', rewritten)
    if not names:
        return True
    marks = ", ".join("?" for _ in names)
    found = one_row(
        session.conn.execute(
            f"select count(*) from temp.sqlite_schema where name in ({marks})", names
        )
    )[0]
    return found == len(set(names))


def _table(
    db: Database, session: Session, name: str, world: World | None, moment: str
) -> tuple[int, TableInfo]:
    """The table an AS OF clause reads; one of main's virtual tables (an FTS5 index), which
    isn't one, is refused saying how to read it as it was: on the branch as it was."""
    try:
        found = db.table(name, world)
        if not found[1].fts_content:  # (an FTS5 table with its own content is one of them)
            return found
    except ChronosError:
        if name.lower() not in {v.lower() for v in ftsinfo.virtual_tables(session.conn)}:
            raise
    branch = world.name if world is not None else "main"
    raise ChronosError(
        f"AS OF reads a table as it was; {name} is a virtual table: read the whole branch "
        f"as it was instead (-b '{branch}@{moment}', or branch=\"{branch}@{moment}\"), "
        f"where {name} is indexed as its rows were then",
        BAD_ARGUMENT,
    )


def _rewrite_as_of(
    db: Database, session: Session, stmt: str, clauses: list, world: World | None
) -> str:
    if len(clauses) == 1 and _COUNT_ALL.match(stmt):
        start, end, moment, _as_at, _end = clauses[0]
        n, t = _table(db, session, _name_at(stmt, start, end), world, moment)
        when = moments.checked_moment(db, moment)
        if world is None:
            return count_then(n, t, moments.seq_at(session.conn, n, when))
        moments.check_world_moment(db.main.conn, world, when, moment)
        return world_count_then(session, n, t, world, when)
    out, at = [], 0
    listing = _a_listing(stmt, clauses)
    for start, end, moment, _as_at, clause_end in clauses:
        n, t = _table(db, session, _name_at(stmt, start, end), world, moment)
        when = moments.checked_moment(db, moment)
        if world is None:
            seq = moments.seq_at(session.conn, n, when)
            view = f"{past_name(n, seq)}_{db.schema_version()}"
            select = worldviews.main_as_of(t, n, seq)
        else:
            moments.check_world_moment(db.main.conn, world, when, moment)
            view = (
                f"_chronos_asof_w{world.id}_{n}_{int(when * 1e6)}_{world.fork_seq}_"
                f"{db.schema_version()}"
            )
            select = worldviews.world_at(t, n, world.id, world.base.get(n, 0), when)
        if listing:
            view, select = f"{view}_ordered", worldviews.in_key_order(t, select)
        if not session.conn.execute(
            "select 1 from temp.sqlite_schema where name = ?", (view,)
        ).fetchone():
            session.conn.execute(f"CREATE TEMP VIEW {quote_ident(view)} AS {select}")
            db.keep_view(session, view)  # a past that never changes: kept for the next calls
        head = stmt[at:start]
        if head.rstrip().endswith("."):  # main.users AS OF ...: the schema goes too
            head = head.rstrip()[:-1].rstrip()
            head = head[: len(head) - len(head.split()[-1])] if head.split() else head
        out.append(f"{head}temp.{quote_ident(view)}{_alias(stmt, clause_end, t.name)}")
        at = clause_end
    out.append(stmt[at:])
    return "".join(out)


# What makes a statement more than a listing of one table's rows: its rows then come in the
# order it says, or grouped, joined, aggregated, where a key order would cost a sort for nothing
_NOT_A_LISTING = frozenset(
    "GROUP ORDER JOIN UNION INTERSECT EXCEPT DISTINCT WINDOW OVER WITH VALUES COUNT SUM AVG MIN "
    "MAX TOTAL GROUP_CONCAT STRING_AGG JSON_GROUP_ARRAY JSON_GROUP_OBJECT".split()
)


def _a_listing(stmt: str, clauses: list) -> bool:
    """Whether ``stmt`` lists one table's rows as they were (``select * from t AS OF ...
    [where ...] [limit ...]``): they come in key order then, as a scan of the table gives
    them. Only the order depends on it; anything else reads the past view as it is."""
    if len(clauses) != 1 or keywords(stmt, 1) != ["SELECT"] or all_words(stmt) & _NOT_A_LISTING:
        return False
    start, clause_end = clauses[0][0], clauses[0][4]
    froms = [at for word, at, _end in top_level_words(stmt[:start]) if word == "FROM"]
    after = stmt[clause_end:]
    stops = [at for word, at, _end in top_level_words(after) if word in ("WHERE", "LIMIT")]
    rest = after[: stops[0]] if stops else after
    # the one table of its FROM: no list of tables before it or after it
    return bool(froms) and "," not in stmt[froms[-1] : start] + rest


# select count(*) from <table> AS OF '<moment>': counted from the changes since, as SQLite counts
# a table now without reading its rows
_COUNT_ALL = re.compile(
    r"^\s*select\s+count\(\s*\*\s*\)\s+from\s+(?:main\s*\.\s*)?(?:\"[^\"]+\"|\w+)\s+"
    r"as\s+of\s+'[^']*'\s*;?\s*$",
    re.IGNORECASE,
)


def _name_at(stmt: str, start: int, end: int) -> str:
    text = stmt[start:end]
    return text[1:-1].replace('""', '"') if text[:1] in '"`[' else text


_NOT_ALIASES = {
    "WHERE",
    "JOIN",
    "LEFT",
    "RIGHT",
    "FULL",
    "INNER",
    "CROSS",
    "NATURAL",
    "ON",
    "USING",
    "GROUP",
    "ORDER",
    "LIMIT",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "WINDOW",
    "HAVING",
    "AS",
}


def _alias(stmt: str, at: int, name: str) -> str:
    """`` AS <name>`` unless the query gives the table an alias of its own after the clause."""
    words = keywords(stmt[at:], 1)
    rest = stmt[at:].lstrip()
    if rest[:1].isalpha() or rest[:1] in '"`[':
        if not words or words[0] not in _NOT_ALIASES or words[0] == "AS":
            return ""
    return f" AS {quote_ident(name)}"
