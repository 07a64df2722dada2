"""The one error type every front end knows how to show.

A ChronosError carries a SQLSTATE-style code where one fits, a message that says how to fix the
call, and optional data (conflict rows, for example). MCP turns it into ``isError: true``, the
CLI into a one-line message and a non-zero exit, the shell prints it and goes on.
"""

from __future__ import annotations

from typing import Any

BAD_ARGUMENT = "22023"
NOT_FOUND = "P0002"
REFUSED = "42501"
UNIQUE_VIOLATION = "23505"
FOREIGN_KEY_VIOLATION = "23503"
CHECK_VIOLATION = "23514"
CONFLICT = "40001"
SQL_ERROR = "42000"
IN_USE = "55006"

TOO_BIG = "a number is too large for SQLite: integers are 64-bit (-2**63 to 2**63-1)"
OWN_TABLES = (
    "chronos' own tables (_chronos_*) can't be changed with SQL, and no table, view, index or "
    "trigger may take a _chronos_ name: use the operations (fork, discard, set_meta, ...)"
)
LITESTREAM_TABLES = (
    "Litestream's own tables (_litestream_*) can't be changed with SQL: they keep its place in "
    "the file as it replicates (a change would break the replica)"
)


class ChronosError(Exception):
    """A failure a user can act on: ``message`` says how to fix the call; nothing was changed."""

    def __init__(self, message: str, code: str = BAD_ARGUMENT, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data

    def __str__(self) -> str:
        return self.message


_SQLITE_CODES = {
    "UNIQUE constraint failed": UNIQUE_VIOLATION,
    "FOREIGN KEY constraint failed": FOREIGN_KEY_VIOLATION,
    "CHECK constraint failed": CHECK_VIOLATION,
    "NOT NULL constraint failed": "23502",
}


def from_sqlite(exc: Exception) -> ChronosError:
    """An SQLite error as a ChronosError carrying the SQLSTATE that fits it."""
    message = str(exc)
    code = next((c for p, c in _SQLITE_CODES.items() if message.startswith(p)), SQL_ERROR)
    if message.startswith("NOT NULL constraint failed: _chronos_o_"):
        message = (
            "a world can't change or delete a row whose primary key is NULL (SQLite "
            "allows one in a non-INTEGER key); change that row on main"
        )
    return ChronosError(message, code)
