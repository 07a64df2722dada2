"""Two identical databases: one written on main, the other on a world forked from its main.
Whatever SQLite does on main, the world must do too: the same rows, the same errors, the same
effects of triggers and foreign-key actions; and merged, main must end up as the writes alone
would have made it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chronos_lite
from chronos_lite import ChronosError

WORLD = "w"


def outcome(db: Any, sql: str, branch: str) -> tuple:
    """What a call did, as a comparable value: its tag and rows, or its error's code and text."""
    try:
        out = db.sql(sql, branch=branch)
    except ChronosError as exc:
        text = exc.message.split(" [")[0]
        return ("error", exc.code, text.split("): ", 1)[-1] if "failed (" in text else text)
    last = out.results[-1]
    return ("ok", last.tag, sorted(map(repr, last.rows)))


def dump(db: Any, branch: str) -> dict[str, list[str]]:
    """Every table's rows on a branch, in a stable order (rowids left out: a world's rows keep
    their keys, but a table without one may number new rows differently)."""
    names = set(db.database.tables_for(db.database.resolve(branch)))
    out = {}
    for name in sorted(names):
        try:
            rows = db.sql(f'select * from "{name}"', branch=branch).results[-1].rows
        except ChronosError:
            continue
        out[name] = sorted(map(repr, rows))
    return out


class Twin:
    """``schema`` and ``rows`` (SQL scripts) in two databases; writes go to main of the first
    and to world ``w`` of the second."""

    def __init__(self, folder: Path, schema: str, rows: str = "") -> None:
        self.main = chronos_lite.init(folder / "on-main")
        self.other = chronos_lite.init(folder / "on-world")
        for db in (self.main, self.other):
            db.sql(schema)
            if rows.strip():
                db.sql(rows)
        self.other.fork(WORLD)

    def run(self, sql: str) -> tuple[tuple, tuple]:
        return outcome(self.main, sql, "main"), outcome(self.other, sql, WORLD)

    def same(self, sql: str) -> None:
        """Run ``sql`` on both; assert the same outcome and the same rows after."""
        on_main, on_world = self.run(sql)
        assert on_world == on_main, f"{sql}\n main:  {on_main}\n world: {on_world}"
        assert dump(self.other, WORLD) == dump(self.main, "main"), sql

    def merged(self) -> None:
        """Merge the world: its main must then hold what the first database's main holds."""
        self.other.merge(WORLD)
        assert dump(self.other, "main") == dump(self.main, "main")

    def close(self) -> None:
        self.main.close()
        self.other.close()


def same_then_merged(folder: Path, schema: str, rows: str, statements: list[str]) -> None:
    """Each statement does on a world what it does on main; a merge then makes main what the
    statements alone made it."""
    twin = Twin(folder, schema, rows)
    try:
        for sql in statements:
            twin.same(sql)
        twin.merged()
    finally:
        twin.close()
