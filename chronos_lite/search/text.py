"""Text search: FTS5 indexes of a table's string fields, ranked by BM25, on any branch.

**Main's index** is an FTS5 table in the file (``_chronos_ft<n>``, contentless: it keeps the
words, not a second copy of the rows), made when a find first needs it or ahead by ``chronos
<db> index <table>``. No trigger keeps it: every write to main, an app's own through a plain
``sqlite3`` connection included, already leaves its rows' history (chronos' pure-SQL triggers),
so a find first brings the index up to the history (the words of each row changed since are
taken out as they were, and put in as they are). An index whose fields changed, whose history
was pruned past it, or that is damaged is made again, with a note saying so.

**A branch's index** (a world, ``name@when``) is a TEMP copy of main's, its pages copied as
they are, with the rows the branch shows otherwise put right: so its BM25 statistics are the
branch's own, as a plain SQLite copy of the branch's rows would have them. A table whose key
isn't an integer (see ``docs``) is indexed on the connection for the branch as it is.
"""

from __future__ import annotations

import json

import apsw

from .. import progress
from ..errors import BAD_ARGUMENT, ChronosError
from ..sqltext import quote_ident
from ..storage.codec import affinity
from ..storage.db import Database, Session
from ..storage.fetch import one_row
from ..storage.schema.catalog import ROWID_COL, TableInfo
from ..storage.shadow import OP, SEQ, history_table
from . import docs as docsmod
from .docs import Docs
from .temp import keep_temp, temp_names

TOKENIZE = "unicode61 remove_diacritics 2"
REGISTRY = "_chronos_search"
CHUNK = 20_000  # rows a build indexes between progress reports


def text_fields(t: TableInfo) -> list[str]:
    """The fields text search reads: the columns whose declared type gives them TEXT affinity
    (TEXT, VARCHAR(n), CHAR, CLOB, ...)."""
    return [c.name for c in t.columns if affinity(c.decltype) == "TEXT"]


def query(text: str) -> str:
    """The FTS5 query of ``text``: each word a quoted string, any of them (OR): a row matching
    more of the words, and rarer ones, ranks first (BM25)."""
    words = [w for w in text.split() if any(ch.isalnum() for ch in w)]
    if not words:
        raise ChronosError(
            f"text {text!r} has no words to find: give one or more words (letters or digits)",
            BAD_ARGUMENT,
        )
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def main_name(n: int) -> str:
    return f"_chronos_ft{n}"


def _branch_name(n: int) -> str:
    return f"_chronos_fw{n}"


def _create(conn: apsw.Connection, qualified: str, fields: int) -> None:
    cols = ", ".join(f"c{i}" for i in range(fields))
    conn.execute(f"DROP TABLE IF EXISTS {qualified}")
    conn.execute(
        f"CREATE VIRTUAL TABLE {qualified} USING fts5({cols}, content='', tokenize='{TOKENIZE}')"
    )


def _insert(fts: str, fields: int, select: str) -> str:
    cols = ", ".join(f"c{i}" for i in range(fields))
    return f"INSERT INTO {fts}(rowid, {cols}) {select}"


def _remove(fts: str, fields: int, select: str) -> str:
    bare = fts.split(".")[-1]
    cols = ", ".join(f"c{i}" for i in range(fields))
    return f"INSERT INTO {fts}({bare}, rowid, {cols}) {select}"


# --- main's index, in the file ---------------------------------------------------------------


def _shape(t: TableInfo) -> str:
    return json.dumps([t.key_kind, [t.col(c) for c in text_fields(t)]])


def _registered(conn: apsw.Connection, n: int) -> tuple[str, int] | None:
    try:
        row = conn.execute(
            f"SELECT shape, seq FROM main.{REGISTRY} WHERE table_id = ? AND kind = 'text'", (n,)
        ).fetchone()
    except apsw.SQLError:  # (no index made yet: no registry)
        return None
    exists = conn.execute(
        "SELECT 1 FROM main.sqlite_schema WHERE name = ?", (main_name(n),)
    ).fetchone()
    return (row[0], row[1]) if row and exists else None


def _history_now(conn: apsw.Connection, n: int) -> int:
    return one_row(conn.execute(f"SELECT coalesce(max({SEQ}), 0) FROM main.{history_table(n)}"))[0]


def current(conn: apsw.Connection, t: TableInfo, n: int) -> bool:
    """Whether main's index of the table holds main's rows as they are on this connection."""
    found = _registered(conn, n)
    return found is not None and found == (_shape(t), _history_now(conn, n))


def main_index(db: Database, t: TableInfo, n: int, notes: list[str]) -> str:
    """Main's index of the table, brought up to main's rows (made first if need be)."""
    conn = db.main.conn
    if current(conn, t, n):
        return f"main.{main_name(n)}"
    with db.write(conn):
        found = _registered(conn, n)
        now = _history_now(conn, n)
        if found is not None and found[0] == _shape(t):
            if found[1] == now:
                return f"main.{main_name(n)}"
            if _caught_up(conn, t, n, found[1]):
                _stamp(conn, n, _shape(t), now)
                return f"main.{main_name(n)}"
            notes.append(
                f"the text index of {t.name} missed writes its history no longer has: made again"
            )
        elif found is not None:
            notes.append(f"the text fields of {t.name} changed: its text index made again")
        build(conn, t, n)
    return f"main.{main_name(n)}"


def index_now(db: Database, t: TableInfo, n: int, notes: list[str]) -> int | None:
    """Main's index of the table made or brought up to date now; the rows it holds (None: the
    table's key isn't an integer, so each connection indexes it at its first text find)."""
    if not docsmod.integer_keyed(t):
        return None
    main_index(db, t, n, notes)
    return int(
        one_row(db.main.conn.execute(f"SELECT count(*) FROM main.{main_name(n)}_docsize"))[0]
    )


def build(conn: apsw.Connection, t: TableInfo, n: int) -> None:
    """Main's index of the table made from its rows (in the caller's write transaction)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS main.{REGISTRY}(table_id INTEGER NOT NULL, kind TEXT NOT "
        "NULL, shape TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (table_id, kind))"
    )
    fields = [t.col(c) for c in text_fields(t)]
    fts = f"main.{main_name(n)}"
    _create(conn, fts, len(fields))
    source = f"main.{quote_ident(t.stored)}"
    total = one_row(conn.execute(f"SELECT count(*) FROM {source}"))[0]
    last, done = None, 0
    while True:  # (in rowid order, a chunk at a time: progress, and each statement short)
        after = "" if last is None else f"WHERE rowid > {last} "
        chunk = one_row(
            conn.execute(
                f"SELECT max(rowid), count(*) FROM (SELECT rowid FROM {source} {after}"
                f"ORDER BY rowid LIMIT {CHUNK})"
            )
        )
        if not chunk[1]:
            break
        lo = "" if last is None else f"rowid > {last} AND "
        conn.execute(
            _insert(
                fts,
                len(fields),
                f"SELECT rowid, {', '.join(fields)} FROM {source} WHERE {lo}rowid <= {chunk[0]}",
            )
        )
        last, done = chunk[0], done + chunk[1]
        if total > CHUNK:
            progress.report(f"indexing {t.name} for text search", done, total)
    _stamp(conn, n, _shape(t), _history_now(conn, n))


def _stamp(conn: apsw.Connection, n: int, shape: str, seq: int) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO main.{REGISTRY} VALUES (?, 'text', ?, ?)", (n, shape, seq)
    )


def _caught_up(conn: apsw.Connection, t: TableInfo, n: int, since: int) -> bool:
    """The words of the rows main changed after history position ``since`` taken out as they
    were then (each key's first record after it: its row then, or its absence) and put in as
    they are. False: history before some of those changes was pruned (make the index again)."""
    h = f"main.{history_table(n)}"
    first = one_row(conn.execute(f"SELECT min({SEQ}) FROM {h} WHERE {SEQ} > ?", (since,)))[0]
    if first is not None and first > since + 1:  # (records after the stamp were pruned)
        return False
    key = quote_ident(ROWID_COL) if t.key_kind == "rowid" else quote_ident(t.pk[0])
    fields = text_fields(t)
    fts = f"main.{main_name(n)}"
    was = ", ".join(f"h.{quote_ident(c)}" for c in fields)
    conn.execute(
        _remove(
            fts,
            len(fields),
            f"SELECT 'delete', h.{key}, {was} FROM {h} AS h JOIN "
            f"(SELECT min({SEQ}) AS s FROM {h} WHERE {SEQ} > ? GROUP BY {key}) AS f "
            f"ON h.{SEQ} = f.s WHERE h.{OP} = 1",
        ),
        (since,),
    )
    now = ", ".join(t.col(c) for c in fields)
    conn.execute(
        _insert(
            fts,
            len(fields),
            f"SELECT rowid, {now} FROM main.{quote_ident(t.stored)} "
            f"WHERE rowid IN (SELECT {key} FROM {h} WHERE {SEQ} > ?)",
        ),
        (since,),
    )
    return True


def damaged(error: apsw.Error) -> bool:
    """Whether an error reading an index says the index is damaged."""
    return isinstance(error, apsw.CorruptError) or "fts5" in str(error).lower()


def forget(db: Database, session: Session, d: Docs, fts: str) -> None:
    """The damaged index ``fts`` a find read dropped, so that the next find makes it again: a
    branch's copy on its connection, and main's too if main's is damaged (a copy starts as its
    pages); main's own."""
    session.search.pop(("text", d.n), None)
    if fts.startswith("temp."):
        session.conn.execute(f"DROP TABLE IF EXISTS {fts}")
        if d.mapped or _sound(db.main.conn, d.n):
            return
    with db.write() as conn:
        conn.execute(f"DROP TABLE IF EXISTS main.{main_name(d.n)}")
        conn.execute(f"DELETE FROM main.{REGISTRY} WHERE table_id = ? AND kind = 'text'", (d.n,))


def _sound(conn: apsw.Connection, n: int) -> bool:
    """Whether main's index of table ``n`` passes FTS5's integrity check (or there is none)."""
    if _registered(conn, n) is None:
        return True
    q = main_name(n)
    try:
        conn.execute(f"INSERT INTO main.{q}({q}) VALUES ('integrity-check')")
    except apsw.Error as exc:
        return not damaged(exc)
    return True


# --- a branch's index ------------------------------------------------------------------------


def branch_index(db: Database, session: Session, d: Docs, notes: list[str]) -> str:
    """The index of the table's rows on the session's branch (an FTS5 table's name)."""
    if not d.mapped and (session.world is None or d.own):  # (main's rows: main's index)
        return main_index(db, d.t, d.n, notes)
    cache = session.search.get(("text", d.n))
    fts = f"temp.{_branch_name(d.n)}"
    if cache == (d.state, _shape(d.t)) and temp_names(session.conn, _branch_name(d.n)):
        return fts
    delta = docsmod.delta_keys(session, d)
    main_t = db.tables().get(d.t.name, (0, None))[1] if delta is not None else None
    copied = (
        delta is not None
        and main_t is not None
        and _shape(main_t) == _shape(d.t)
        and _copy_main(db, session, d, main_t, delta, notes)
    )
    if not copied:
        _index_anew(session.conn, d, docsmod.joined(session, d))
    keep_temp(session, _branch_name(d.n))
    session.search[("text", d.n)] = (d.state, _shape(d.t))
    return fts


def _copy_main(
    db: Database, session: Session, d: Docs, main_t: TableInfo, delta: str, notes: list[str]
) -> bool:
    """Main's index copied page for page, then the rows the branch shows otherwise put right:
    main's words of them out, the branch's in. False: main's index didn't stay current long
    enough to copy (writers kept ahead of it), or the connection is inside a transaction that
    began before it was (the caller indexes the branch's rows anew)."""
    conn, n = session.conn, d.n
    for _attempt in range(3):
        main_index(db, main_t, n, notes)
        conn.execute("SAVEPOINT _chronos_copy")
        try:
            if current(conn, main_t, n):  # (in this snapshot: what the copy reads)
                _copy_pages(conn, d, main_t, delta)
                return True
        except BaseException:
            conn.execute("ROLLBACK TO _chronos_copy")
            raise
        finally:
            conn.execute("RELEASE _chronos_copy")
    return False


def _copy_pages(conn: apsw.Connection, d: Docs, main_t: TableInfo, delta: str) -> None:
    n, fields = d.n, text_fields(d.t)
    fts = f"temp.{_branch_name(n)}"
    _create(conn, fts, len(fields))
    for part in ("data", "idx", "docsize", "config"):
        conn.execute(f"DELETE FROM temp.{_branch_name(n)}_{part}")
        conn.execute(
            f"INSERT INTO temp.{_branch_name(n)}_{part} SELECT * FROM main.{main_name(n)}_{part}"
        )
    was = ", ".join(main_t.col(c) for c in text_fields(main_t))
    conn.execute(
        _remove(
            fts,
            len(fields),
            f"SELECT 'delete', rowid, {was} FROM main."
            f"{quote_ident(main_t.stored)} WHERE rowid IN ({delta})",
        )
    )
    now = ", ".join(quote_ident(c) for c in fields)
    conn.execute(
        _insert(
            fts,
            len(fields),
            f"SELECT {d.docid}, {now} FROM {d.source} WHERE {d.docid} IN ({delta})",
        )
    )


def _index_anew(conn: apsw.Connection, d: Docs, joined: str) -> None:
    """The branch's rows indexed on the connection (numbered in key order first, if their key
    isn't an integer)."""
    fields = text_fields(d.t)
    fts = f"temp.{_branch_name(d.n)}"
    _create(conn, fts, len(fields))
    now = ", ".join(f"s.{quote_ident(c)}" for c in fields)
    if not d.mapped:
        conn.execute(_insert(fts, len(fields), f"SELECT s.{d.docid}, {now} FROM {d.source} AS s"))
        return
    conn.execute(_insert(fts, len(fields), f"SELECT m.docid, {now} FROM {joined}"))
