"""The parent's names for what a merge changes.

Merge policies, declared scopes and merge checks name tables and columns as the parent (main)
has them; a world may have renamed them since its fork. A renamed table keeps its id, a renamed
column its storage name, so each is found under the parent's name by those.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..storage.schema.catalog import TableInfo

Tables = dict[str, tuple[int, TableInfo]]


@dataclass
class Names:
    parent: dict[int, tuple[str, TableInfo]]  # the parent's tables, by id
    world: dict[int, tuple[str, TableInfo]]  # the world's
    _columns: dict[int, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, parent: Tables, world: Tables) -> Names:
        return cls(
            {n: (name, t) for name, (n, t) in parent.items()},
            {n: (name, t) for name, (n, t) in world.items()},
        )

    def table(self, n: int, name: str) -> str:
        """Table ``n`` by the parent's name (``name``, the world's, if the parent hasn't it)."""
        return self.parent[n][0] if n in self.parent else name

    def column(self, n: int, t: TableInfo, column: str) -> str:
        """``table.column`` by the parent's names (``t``: the world's table ``n``)."""
        if n not in self.parent:
            return f"{t.name}.{column}"
        names = self._columns.get(n)
        if names is None:
            pt = self.parent[n][1]
            by_stored = {pt.col(c): c for c in pt.column_names}
            names = {c: by_stored.get(t.col(c), c) for c in t.column_names}
            self._columns[n] = names
        return f"{self.parent[n][0]}.{names.get(column, column)}"

    def renamed_columns(self, n: int) -> list[str]:
        """The parent's columns of table ``n`` the world has under another name."""
        if n not in self.parent or n not in self.world:
            return []
        pt, t = self.parent[n][1], self.world[n][1]
        theirs = {pt.col(c): c for c in pt.column_names}
        return [theirs[t.col(c)] for c in t.column_names if theirs.get(t.col(c)) not in (None, c)]

    def dropped_columns(self, n: int) -> list[str]:
        """The parent's columns of table ``n`` the world no longer has (it dropped them)."""
        if n not in self.parent or n not in self.world:
            return []
        pt, t = self.parent[n][1], self.world[n][1]
        kept = {t.col(c) for c in t.column_names}
        return [c for c in pt.column_names if pt.col(c) not in kept]
