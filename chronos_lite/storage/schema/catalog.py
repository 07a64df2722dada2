"""What the user's tables look like: columns, primary key, unique constraints.

Read from SQLite's own pragmas each time the schema changes; the shadow objects (history,
overlays, triggers, world views) are generated from these descriptions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import apsw

from ...sqltext import comma_parts, matching_paren, name_tokens, quote_ident, tokens
from ..fetch import all_rows, one_row
from .constraints import Rules, read_rules
from .virtual import fts_tables

PREFIX = "_chronos_"
ROWID_COL = "_chronos_rowid"


@dataclass(frozen=True)
class Column:
    name: str
    decltype: str
    notnull: bool
    default: str | None
    generated: bool
    expression: str | None = None  # a generated column's expression
    # A column a world renamed keeps its storage name (main's table, history, overlay):
    # ``stored`` is that name, empty when it is the column's own
    stored: str = ""
    collation: str = ""  # its COLLATE sequence, empty for BINARY (a copy of it must keep it)

    def declared(self) -> str:
        """Its type and collation, as a copy of the column declares them."""
        collate = f" COLLATE {self.collation}" if self.collation else ""
        return f"{self.decltype}{collate}".strip()


@dataclass(frozen=True)
class TableInfo:
    """One user table as chronos sees it.

    ``key_kind`` is ``int`` (an INTEGER PRIMARY KEY, the rowid), ``rowid`` (no primary key:
    the hidden rowid is the key), ``single`` (one other primary-key column) or ``composite``.
    """

    name: str
    columns: tuple[Column, ...]
    key_kind: str
    pk: tuple[str, ...]
    uniques: tuple[tuple[str, ...], ...]
    without_rowid: bool
    autoincrement: bool
    sql: str
    # A table a world created lives in the file under an internal name until it merges; a
    # column a world added is not in main's table (main's rows read its default).
    stored_as: str = ""
    world_columns: frozenset[str] = frozenset()
    # the UNIQUE constraints among ``uniques`` (SQLite's own indexes, which have no SQL)
    unique_constraints: tuple[tuple[str, ...], ...] = ()
    rules: Rules = Rules()  # unique rules, foreign keys, declared conflict clauses
    # An FTS5 table with its own content: its rows are its content table's (this one, whose
    # columns c0, c1, ... are its columns and whose id is its rowid); chronos' history triggers
    # are on that table, and a world reads a TEMP FTS5 copy of its rows (``ownfts``).
    fts_content: str = ""

    def col(self, column: str) -> str:
        """A column (or the hidden key column) as chronos' storage names it, quoted: main's
        table, its history, the worlds' overlay and history. The world's own name is read only
        through its views (a column the world renamed is stored under its name on main)."""
        for c in self.columns:
            if c.name == column:
                return quote_ident(c.stored or c.name)
        return quote_ident(column)

    @property
    def renamed(self) -> bool:
        """Whether a column is stored under another name (a world renamed it)."""
        return any(c.stored for c in self.columns)

    def source(self, column: str) -> str:
        """A column as the table chronos' history triggers are on names it."""
        if not self.fts_content:
            return self.col(column)
        if column == ROWID_COL:
            return "id"
        return f"c{self.column_names.index(column)}"

    @property
    def stored(self) -> str:
        """The name of the real table in the file."""
        return self.stored_as or self.name

    def main_columns(self, prefix: str = "", only: list[str] | None = None) -> str:
        """Select-list of the columns (``only``: these of them) from the real table
        (``prefix``: its alias and a dot)."""
        return ", ".join(
            f"{c.default if c.default is not None else 'NULL'} AS {quote_ident(c.name)}"
            if c.name in self.world_columns
            else f"{prefix}{self.source(c.name)} AS {quote_ident(c.name)}"
            if self.fts_content or c.stored
            else prefix + quote_ident(c.name)
            for c in self.columns
            if only is None or c.name in only
        )

    def own_columns(self, with_rowid: bool = False, stored: bool = False) -> str:
        """Select-list of the columns from a copy of the rows (a world's live rows; ``stored``:
        a copy in storage, an overlay or a world's history): a generated column computed from
        the copy's values (``with_rowid``: the hidden rowid too)."""
        out = []
        for c in self.columns:
            if c.expression:
                expr = self.stored_expression(c.expression) if stored else c.expression
                out.append(f"({expr}) AS {quote_ident(c.name)}")
            elif stored and c.stored:
                out.append(f"{quote_ident(c.stored)} AS {quote_ident(c.name)}")
            else:
                out.append(quote_ident(c.name))
        return ", ".join(out) + (f", {quote_ident(ROWID_COL)}" if with_rowid else "")

    def stored_expression(self, expr: str) -> str:
        """An expression over the world's columns (a generated column's) over their storage
        names instead: the names it reads, as SQLite's tokenizer finds them, swapped."""
        if not self.renamed:
            return expr
        by_name = {c.name.lower(): c.stored for c in self.columns if c.stored}
        out, at = [], 0
        for text, kind, start, end in tokens(expr):
            if kind in ("word", "name") and text.lower() in by_name:
                out += [expr[at:start], quote_ident(by_name[text.lower()])]
                at = end
        return "".join(out) + expr[at:]

    def stored_list(self, prefix: str = "", columns: list[str] | None = None) -> str:
        """The columns (``columns``, or all of them) as storage names them, comma-separated,
        each after ``prefix`` (an alias and a dot)."""
        names = self.column_names if columns is None else columns
        return ", ".join(prefix + self.col(c) for c in names)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def generated(self) -> set[str]:
        """Names of generated columns (computed by SQLite, never written)."""
        return {c.name for c in self.columns if c.generated}

    @property
    def writable(self) -> list[Column]:
        return [c for c in self.columns if not c.generated]

    @property
    def key_cols(self) -> tuple[str, ...]:
        """The key's columns in shadow tables (the hidden rowid gets a column of its own)."""
        return (ROWID_COL,) if self.key_kind == "rowid" else self.pk

    def main_key(self, prefix: str = "") -> str:
        """The key of a row of the real table, as an SQL expression (a row value if composite)."""
        if self.key_kind == "rowid":
            return f"{prefix}rowid"
        cols = [prefix + self.col(c) for c in self.pk]
        return cols[0] if len(cols) == 1 else "(" + ", ".join(cols) + ")"


def user_tables(conn: apsw.Connection) -> list[str]:
    """Main's tables chronos versions: the app's tables, and its FTS5 tables with their own
    content (whose rows chronos can follow: see TableInfo.fts_content)."""
    rows = all_rows(
        conn.execute(
            "select name from pragma_table_list where schema = 'main' and type = 'table' "
            "and name not like 'sqlite\\_%' escape '\\' "
            "and name not like '\\_chronos\\_%' escape '\\' "
            # (Litestream's own, made in the file as it replicates: not the app's)
            "and name not like '\\_litestream\\_%' escape '\\'"
        )
    )
    own = [f.name for f in fts_tables(conn) if f.kind == "own"]
    return sorted([r[0] for r in rows] + own)


def table_info(conn: apsw.Connection, name: str) -> TableInfo:
    fts = next((f for f in fts_tables(conn) if f.name == name and f.kind == "own"), None)
    if fts is not None:
        return _fts_info(conn, name)
    q = quote_ident(name)
    cols: list[Column] = []
    pk: list[tuple[int, str]] = []
    for _cid, cname, ctype, notnull, dflt, pkpos, hidden in conn.execute(
        f"pragma main.table_xinfo({q})"
    ):
        if hidden == 1:
            continue
        cols.append(
            Column(
                cname,
                ctype or "",
                bool(notnull),
                dflt,
                hidden in (2, 3),
                collation=_collation(conn, name, cname),
            )
        )
        if pkpos:
            pk.append((pkpos, cname))
    pk_names = tuple(c for _, c in sorted(pk))
    sql = one_row(
        conn.execute(
            "select sql from main.sqlite_schema where type = 'table' and name = ?", (name,)
        )
    )[0]
    if any(c.generated for c in cols):
        expressions = generated_expressions(sql)
        cols = [replace(c, expression=expressions.get(c.name)) if c.generated else c for c in cols]
    row = conn.execute(
        "select wr from pragma_table_list where schema = 'main' and name = ?", (name,)
    ).fetchone()
    without_rowid = bool(row and row[0])
    if not pk_names:
        kind = "rowid"
    elif len(pk_names) > 1:
        kind = "composite"
    else:
        decl = next(c.decltype for c in cols if c.name == pk_names[0])
        kind = "int" if decl.upper() == "INTEGER" and not without_rowid else "single"
    uniques, constraints = [], []
    for _seq, iname, unique, origin, partial in conn.execute(f"pragma main.index_list({q})"):
        if not unique or partial or origin == "pk":
            continue
        icols = [r[2] for r in conn.execute(f"pragma main.index_info({quote_ident(iname)})")]
        if icols and all(c is not None for c in icols) and tuple(icols) != pk_names:
            uniques.append(tuple(icols))
            if origin == "u":
                constraints.append(tuple(icols))
    autoinc = bool(
        conn.execute("select 1 from main.sqlite_schema where name = 'sqlite_sequence'").fetchone()
        and "AUTOINCREMENT" in sql.upper()
    )
    return TableInfo(
        name=name,
        columns=tuple(cols),
        key_kind=kind,
        pk=pk_names,
        uniques=tuple(uniques),
        without_rowid=without_rowid,
        autoincrement=autoinc,
        sql=sql,
        rules=read_rules(conn, "main", name, sql),
        unique_constraints=tuple(constraints),
    )


def _collation(conn: apsw.Connection, table: str, column: str) -> str:
    collation = conn.column_metadata("main", table, column)[1] or ""
    return "" if collation.upper() == "BINARY" else collation


def _fts_info(conn: apsw.Connection, name: str) -> TableInfo:
    """An FTS5 table with its own content, as a table without a key (its rowid is)."""
    cols = [
        Column(r[1], "", False, None, False)
        for r in conn.execute(f"pragma main.table_xinfo({quote_ident(name)})")
        if r[6] == 0
    ]
    sql = one_row(conn.execute("select sql from main.sqlite_schema where name = ?", (name,)))[0]
    return TableInfo(
        name=name,
        columns=tuple(cols),
        key_kind="rowid",
        pk=(),
        uniques=(),
        without_rowid=False,
        autoincrement=False,
        sql=sql,
        stored_as=f"{name}_content",  # (read there: an FTS5 table can't be read while one writes)
        fts_content=f"{name}_content",
    )


def generated_expressions(create_sql: str) -> dict[str, str]:
    """Generated columns' expressions, from the table's CREATE TABLE text:
    ``name type GENERATED ALWAYS AS (expr)`` or ``name AS (expr)``."""
    open_at = create_sql.find("(")
    body = create_sql[open_at + 1 : create_sql.rfind(")")]
    out: dict[str, str] = {}
    for start, end in comma_parts(body):
        part = body[start:end]
        tokens = name_tokens(part)
        upper = [w.upper() for w, _, _ in tokens]
        if not tokens or "AS" not in upper:
            continue
        after_as = tokens[upper.index("AS")][2]
        paren = part.find("(", after_as)
        close = matching_paren(part, paren) if paren >= 0 else None
        if close is not None and not part[after_as:paren].strip():
            out[tokens[0][0]] = part[paren + 1 : close].strip()
    return out


def has_table(conn: apsw.Connection, name: str) -> bool:
    """Whether main's schema holds a table (or any object) of that exact name."""
    return bool(conn.execute("select 1 from main.sqlite_schema where name = ?", (name,)).fetchall())


def check_constraints(create_sql: str) -> list[tuple[str | None, str]]:
    """A table's CHECK constraints from its CREATE TABLE text: (its name, or None; the
    expression as written), column and table constraints alike."""
    found = tokens(create_sql)
    out = []
    for i, (text, kind, _start, _end) in enumerate(found):
        if kind != "word" or text.upper() != "CHECK" or i + 1 >= len(found):
            continue
        if found[i + 1][0] != "(":
            continue
        opened = found[i + 1][2]
        close = matching_paren(create_sql[opened:], 0)  # (depth counts from where it opens)
        if close is None:
            continue
        named = i >= 2 and found[i - 2][0].upper() == "CONSTRAINT"
        out.append((found[i - 1][0] if named else None, create_sql[opened + 1 : opened + close]))
    return out
