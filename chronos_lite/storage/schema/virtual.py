"""What main's virtual tables are: their modules, and an FTS5 table's parts (its columns, and
where its content is: its own, an external table's, or none). Read from the statement text
SQLite stored; ``world.fts`` gives a world its copies of them."""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from ...sqltext import comma_parts, tokens
from ..fetch import all_rows, one_row


@dataclass(frozen=True)
class Fts:
    """An FTS5 table of main: its columns and where its content is (``content`` None: its own;
    '': none; else the table holding it, whose ``content_rowid`` column is the rowid)."""

    name: str
    sql: str
    columns: tuple[str, ...]
    content: str | None
    content_rowid: str

    @property
    def kind(self) -> str:
        if self.content is None:
            return "own"
        return "contentless" if self.content == "" else "external"


def virtual_tables(conn: apsw.Connection) -> dict[str, str]:
    """Main's virtual tables (chronos' left out): name -> the module they use."""
    out = {}
    for name, sql in all_rows(
        conn.execute(
            "select name, sql from main.sqlite_schema where type = 'table' "
            "and sql like 'create virtual table%' and name not like '\\_chronos\\_%' escape '\\'"
        )
    ):
        found = tokens(sql)
        using = next(
            (i for i, (t, k, _s, _e) in enumerate(found) if k == "word" and t.upper() == "USING"),
            None,
        )
        out[name] = found[using + 1][0].lower() if using is not None else ""
    return out


def fts_tables(conn: apsw.Connection) -> list[Fts]:
    """Main's FTS5 tables, each in its parts."""
    out = []
    for name, module in virtual_tables(conn).items():
        if module != "fts5":
            continue
        row = one_row(conn.execute("select sql from main.sqlite_schema where name = ?", (name,)))
        out.append(_parse(name, row[0]))
    return out


def _parse(name: str, sql: str) -> Fts:
    inside = sql[sql.index("(") + 1 : sql.rindex(")")]
    columns: list[str] = []
    options: dict[str, str] = {}
    for start, end in comma_parts(inside):
        part = inside[start:end]
        found = tokens(part)
        if not found:
            continue
        if any(t == "=" and k == "punct" for t, k, _s, _e in found):
            key = found[0][0].lower()
            options[key] = found[-1][0] if found[-1][1] in ("string", "name", "word") else ""
            if found[-1][1] == "punct":  # (content='' reads as a string of nothing)
                options[key] = ""
        else:
            columns.append(found[0][0])
    content = options.get("content")
    return Fts(
        name,
        sql,
        tuple(columns),
        None if content is None else content,
        options.get("content_rowid", "rowid"),
    )


def refusal(name: str, module: str, fts: Fts | None) -> str:
    """Why a world can't write one of main's virtual tables, and what to do instead."""
    if fts is not None and fts.kind == "contentless":
        why = "a contentless FTS5 table keeps no rows a world could copy"
    else:
        kind = f"a virtual table ({module})" if module else "a virtual table"
        why = f"{kind} keeps its rows where chronos can't version them"
    return (
        f"{name} is one of main's virtual tables: {why}, so a world reads it as main has it "
        f"and can't change it; change it on main"
    )
