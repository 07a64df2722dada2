"""What a user's statement may touch, decided by SQLite's authorizer on what SQLite prepares.

Every statement a caller sends runs under the connection's ``Guard`` (installed once: setting an
authorizer empties SQLite's statement cache). The guard sees each action SQLite compiles (after
every rewrite chronos made, ``AS OF`` included) and the actions of nested preparations while the
statement runs (a ``pragma_...`` table-valued function prepares its PRAGMA then). It decides by
the call's ``Access``:

* reads (SELECT, reading a table, calling a function, a read-only PRAGMA) always run, but for
  the agents' token hashes (``SECRET``), which no statement reads;
* a call without write access (safe mode off its own worlds, a branch as it was) runs nothing
  else: no row write, no schema change, no transaction statement, no setting;
* settings (a PRAGMA that sets, ATTACH, DETACH, ANALYZE, REINDEX) need ``settings`` access;
  what reaches past the guard, another file (ATTACH, VACUUM INTO) or SQLite's own record of the
  schema (PRAGMA writable_schema), is the database's own user's only (``owner``): an agent, an
  admin too, could read through it what no statement reads;
* whatever the access, chronos' own objects (``_chronos_*``) are written only by chronos'
  triggers, no statement creates an object in chronos' namespace or a trigger on its tables, and
  a world's statement never writes main's tables by their qualified name.

An app's trigger fired by chronos' own SQL (a put, a merge writing main) was never judged: its
body isn't checked when it is created, only when a statement that fires it is prepared. So
there too it reads no token hash and writes none of chronos' tables (``TriggerRefused``).

Chronos' triggers are trusted by identity: the names chronos gave the triggers it made on this
connection (main's history triggers, a world's INSTEAD OF triggers), which no statement can
create, since names starting ``_chronos_`` are refused in every schema. A statement SQLite
calls a write but for which the authorizer saw no action to classify (VACUUM) is refused
without write and settings access, never run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import apsw

from ..errors import REFUSED, ChronosError
from .schema.catalog import PREFIX

OK, DENY = apsw.SQLITE_OK, apsw.SQLITE_DENY

READS = {apsw.SQLITE_SELECT, apsw.SQLITE_READ, apsw.SQLITE_FUNCTION, apsw.SQLITE_RECURSIVE}
ROW_WRITES = {apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE, apsw.SQLITE_DELETE}
SETTINGS = {  # (as a refusal names them)
    apsw.SQLITE_ATTACH: "ATTACH",
    apsw.SQLITE_DETACH: "DETACH",
    apsw.SQLITE_ANALYZE: "ANALYZE",
    apsw.SQLITE_REINDEX: "REINDEX",
    apsw.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
    apsw.SQLITE_DROP_VTABLE: "DROP VIRTUAL TABLE",
}
CREATES = {
    apsw.SQLITE_CREATE_INDEX,
    apsw.SQLITE_CREATE_TABLE,
    apsw.SQLITE_CREATE_TEMP_INDEX,
    apsw.SQLITE_CREATE_TEMP_TABLE,
    apsw.SQLITE_CREATE_TEMP_TRIGGER,
    apsw.SQLITE_CREATE_TEMP_VIEW,
    apsw.SQLITE_CREATE_TRIGGER,
    apsw.SQLITE_CREATE_VIEW,
    apsw.SQLITE_CREATE_VTABLE,
}
DROPS = {
    apsw.SQLITE_DROP_INDEX,
    apsw.SQLITE_DROP_TABLE,
    apsw.SQLITE_DROP_TEMP_INDEX,
    apsw.SQLITE_DROP_TEMP_TABLE,
    apsw.SQLITE_DROP_TEMP_TRIGGER,
    apsw.SQLITE_DROP_TEMP_VIEW,
    apsw.SQLITE_DROP_TRIGGER,
    apsw.SQLITE_DROP_VIEW,
    apsw.SQLITE_DROP_VTABLE,
}
# What changes the TEMP schema (beside SQLite's own writes of sqlite_temp_master)
TEMP_DDL = {
    apsw.SQLITE_CREATE_TEMP_INDEX,
    apsw.SQLITE_CREATE_TEMP_TABLE,
    apsw.SQLITE_CREATE_TEMP_TRIGGER,
    apsw.SQLITE_CREATE_TEMP_VIEW,
    apsw.SQLITE_DROP_TEMP_INDEX,
    apsw.SQLITE_DROP_TEMP_TABLE,
    apsw.SQLITE_DROP_TEMP_TRIGGER,
    apsw.SQLITE_DROP_TEMP_VIEW,
}
TEMP_SCHEMA = {"sqlite_temp_master", "sqlite_temp_schema"}
# SQLite writes these itself for a schema statement (no statement may write them directly, short
# of PRAGMA writable_schema, a setting).
SCHEMA_TABLES = {"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"}
# Creating an index or a trigger names the table it is on (the action's second argument).
INDEXES = {apsw.SQLITE_CREATE_INDEX, apsw.SQLITE_CREATE_TEMP_INDEX}
ON_TABLE = {
    apsw.SQLITE_CREATE_INDEX,
    apsw.SQLITE_CREATE_TEMP_INDEX,
    apsw.SQLITE_CREATE_TEMP_TRIGGER,
    apsw.SQLITE_CREATE_TRIGGER,
}

# What no statement reads, whoever sends it: the agents' token hashes and their salts.
SECRET = {"_chronos_agents": ("salt", "hash")}
# Who the agents are and what they did: read in SQL only with settings access (an admin).
ADMIN_TABLES = {"_chronos_agents", "_chronos_audit"}
# The system tables that read any branch (vtab/): only for a caller that may read every branch.
BRANCH_TABLES = {"chronos_worlds", "chronos_diff", "chronos_conflicts", "chronos_history"}

# PRAGMAs that only read: these take an argument (a table's name)...
READ_WITH_ARGUMENT = {
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
}
# ...and these read only bare: with "= v" or "(v)" they set.
READ_BARE = READ_WITH_ARGUMENT | {
    "database_list",
    "collation_list",
    "function_list",
    "module_list",
    "pragma_list",
    "compile_options",
    "schema_version",
    "user_version",
    "application_id",
    "page_count",
    "page_size",
    "freelist_count",
    "encoding",
    "data_version",
    "foreign_keys",
}
# PRAGMAs that reach past the guard: SQLite's record of the schema written as rows (a table of
# chronos' renamed to be read, in this file or a copy attached).
OWNER_PRAGMAS = {"writable_schema"}


def reading_pragma(name: str, argument: str | None) -> bool:
    name = name.lower()
    return name in READ_WITH_ARGUMENT or (argument is None and name in READ_BARE)


@dataclass(frozen=True)
class Denial:
    """Why the guard refused an action: ``kind`` is ``write`` (the call may only read),
    ``settings``, ``own`` (chronos' objects), ``main`` (main's table from a world),
    ``secret`` (a token's hash), ``read`` (another branch, for a caller that may read only
    its own), ``admin`` (the agents and the audit trail) or ``owner`` (another file, SQLite's
    record of the schema: the database's own user's only); ``name`` what the action named."""

    kind: str
    name: str = ""


@dataclass(frozen=True)
class Access:
    """What a call's statements may do (decided by the rights before the call runs).
    ``refusal`` turns a write or settings denial into the caller's error."""

    write: bool = True
    settings: bool = True
    refusal: Callable[[Denial], ChronosError] | None = None
    branches: bool = True  # may read other branches through SQL (chronos_diff('w'), ...)
    # the database's own user: ATTACH, VACUUM INTO, PRAGMA writable_schema (never an agent)
    owner: bool = False

    @property
    def mark(self) -> str:
        """What a user's statement is prepared under, before its text: SQLite's statement cache
        (which doesn't ask the authorizer again) then never hands a statement authorized for one
        access to a call with another, nor one chronos prepared unchecked to a user."""
        return _MARKS[self.write, self.settings, self.branches, self.owner]


_MARKS = {
    (w, s, b, o): f"/* chronos: user sql ({'write' if w else 'read'}, {'all' if s else 'rows'}"
    f"{'' if b else ', own branches'}{', owner' if o else ''}) */\n"
    for w in (True, False)
    for s in (True, False)
    for b in (True, False)
    for o in (True, False)
}
OWNER = Access(owner=True)


class TriggerRefused(ChronosError):
    """An app's trigger or view, run by chronos' own SQL, did what no statement may."""

    def __init__(self, name: str, denial: Denial) -> None:
        what = (
            f"read {denial.name}, which no statement reads"
            if denial.kind == "secret"
            else f"write chronos' own table {denial.name}"
        )
        shown = name if not _ours(name) else "<name>"  # (a world's copy of one: chronos' name)
        super().__init__(
            f"the app's trigger or view {shown} tried to {what}: nothing was changed; a person "
            f'drops it (chronos <folder> sql "drop trigger {shown}", or drop view)',
            REFUSED,
        )


@dataclass
class Guard:
    """A connection's authorizer: checks only while a user's statement runs (``access`` set)."""

    world: bool = False
    access: Access | None = None
    trusted: frozenset[str] = frozenset()  # the triggers chronos made on this connection
    own_temp: frozenset[str] = frozenset()  # chronos' TEMP objects here (lower case)
    # main's virtual tables' own tables (lower case, as SQLite lists them): their module
    # prepares its writes as it connects, even to be read
    shadows: frozenset[str] = frozenset()
    denied: Denial | None = None
    # a statement running unjudged (VACUUM: it asks nothing) for this access: only the file it
    # attaches (VACUUM INTO's) is checked
    unjudged: Access | None = None
    calls: int = 0  # actions asked about in this statement (0: SQLite's cache had it prepared)
    acted: bool = False  # an action other than a read was allowed in this statement
    altered: bool = False  # an ALTER TABLE was allowed in this statement
    dropping: str = ""  # the table a DROP TABLE allowed in this statement drops (lower case)
    # a statement that may change the TEMP schema was prepared (by anyone) since the flag was
    # last cleared: what a connection derived of it may be stale (Database's quiet check)
    temp_changed: bool = False
    _classified: dict[str, bool] = field(default_factory=dict)  # statement text -> acted

    def classify(self, text: str) -> bool | None:
        """Whether the statement ``text`` (about to run) does more than read, as the guard saw
        it prepared: now, or when SQLite prepared it before (its cache doesn't ask again).
        None: no action of it was ever there to see (VACUUM asks none)."""
        if self.calls:
            if len(self._classified) > 4096:
                self._classified.clear()
            self._classified[text] = self.acted
            return self.acted
        return self._classified.get(text)

    def done(self) -> None:
        """The user's statement ended: chronos' own SQL runs unchecked again."""
        self.access = self.unjudged = None

    def __call__(
        self, op: int, one: str | None, two: str | None, db: str | None, trigger: str | None
    ) -> int:
        access = self.access
        if _changes_temp(op, (one or "").lower(), db):
            self.temp_changed = True
        if self.world and op in ROW_WRITES and db == "main":
            # nothing on a world's connection writes main's tables, chronos' own triggers and
            # SQL included: a table the world reads as main's own is made the world's first
            # (a user's statement then runs again; chronos' code does it before it writes)
            name = (one or "").lower()
            if not _ours(name) and name not in SCHEMA_TABLES:
                if access is None and name in self.shadows:
                    pass  # (a module connecting as chronos reads: a user's statement is retried)
                elif name != "sqlite_sequence" or trigger not in self.trusted:
                    if self.denied is None:
                        self.denied = Denial("main", one or "")
                    return DENY
        if trigger is not None and trigger in self.trusted:
            return OK
        if access is None:
            return self._unjudged(op, one or "", two or "", trigger)
        self.calls += 1
        denial = self._decide(op, one or "", two or "", db, access)
        if denial is None:
            return OK
        if self.denied is None:  # the first reason is the one to tell
            self.denied = denial
        return DENY

    def _unjudged(self, op: int, one: str, two: str, trigger: str | None) -> int:
        """Chronos' own SQL runs unchecked, but for an app's trigger it fires (never judged:
        ``TriggerRefused``), and a statement let run unjudged (VACUUM) attaches a file (VACUUM
        INTO's) only for the database's own user."""
        unjudged = self.unjudged
        if op == apsw.SQLITE_ATTACH and one and unjudged is not None and not unjudged.owner:
            self.denied = self.denied or Denial("owner", "VACUUM INTO")
            return DENY
        if trigger is not None:
            if op == apsw.SQLITE_READ and _secret(one, two):
                raise TriggerRefused(trigger, Denial("secret", f"{one}.{two}"))
            if op in ROW_WRITES and _ours(one):
                raise TriggerRefused(trigger, Denial("own", one))
        return OK

    def _decide(self, op: int, one: str, two: str, db: str | None, access: Access) -> Denial | None:
        if op in READS:
            if op == apsw.SQLITE_READ and _secret(one, two):
                return Denial("secret", f"{one}.{two}")
            if op == apsw.SQLITE_READ and not access.branches and one.lower() in BRANCH_TABLES:
                return Denial("read", one)
            if op == apsw.SQLITE_READ and not access.settings and one.lower() in ADMIN_TABLES:
                return Denial("admin", one)
            return None
        if op == apsw.SQLITE_PRAGMA:
            if reading_pragma(one, two or None):
                return None
            if not access.settings:
                return Denial("settings", f"PRAGMA {one}")
            if one.lower() in OWNER_PRAGMAS and not access.owner:
                return Denial("owner", f"PRAGMA {one}")
            self.acted = True
            return None
        if op in ROW_WRITES and one.lower() in SCHEMA_TABLES:
            return None  # SQLite's record of a schema statement: judged by its own action
        if op == apsw.SQLITE_CREATE_TABLE and one.lower().startswith("sqlite_stat"):
            return None if access.settings else Denial("settings", "ANALYZE")  # (its tables)
        own = self._own_object(op, one, two)
        if own is not None:
            return own
        if self.world and op in ROW_WRITES and db == "main" and not _ours(one):
            return Denial("main", one)
        if self.world and op in ROW_WRITES and db == "temp" and one.lower() == "sqlite_sequence":
            return Denial("own", one)  # (the world's native copies' key counters: chronos')
        if op in SETTINGS:
            if not access.settings:
                return Denial("settings", SETTINGS[op])
            if op == apsw.SQLITE_ATTACH and not access.owner:
                return Denial("owner", "ATTACH")
        elif not access.write:
            return Denial("write", one)
        self.acted = True
        if op == apsw.SQLITE_ALTER_TABLE:
            self.altered = True
        return None

    def _own_object(self, op: int, one: str, two: str) -> Denial | None:
        """Chronos' objects: written only by its triggers, never created, dropped or altered."""
        if op in CREATES:
            if _ours(one) or (op in ON_TABLE and _ours(two)):
                return Denial("own", one if _ours(one) else two)
            if op in INDEXES and two.lower() in self.own_temp:  # (a world's native copy has
                return Denial("own", two)  # main's indexes: a UNIQUE one of its own isn't main's)
            return None
        if op in DROPS:
            if op == apsw.SQLITE_DROP_TRIGGER and two.lower() == self.dropping:
                return None  # the table's own triggers go with it (a history trigger, say)
            if _ours(one) or one.lower() in self.own_temp:
                return Denial("own", one)
            if op in (apsw.SQLITE_DROP_TABLE, apsw.SQLITE_DROP_TEMP_TABLE):
                self.dropping = one.lower()
            return None
        if op == apsw.SQLITE_ALTER_TABLE:  # (database, table)
            return Denial("own", two) if _ours(two) or two.lower() in self.own_temp else None
        if op in ROW_WRITES and _ours(one):
            return Denial("own", one)
        return None


def _changes_temp(op: int, one: str, db: str | None) -> bool:
    """Whether an action changes the TEMP schema: a TEMP object made or dropped (a virtual one
    too), a TEMP table altered, or SQLite's own write of the TEMP schema table."""
    if op in TEMP_DDL or (op == apsw.SQLITE_ALTER_TABLE and one == "temp"):
        return True
    if db != "temp":
        return False
    return op in CREATES or op in DROPS or (op in ROW_WRITES and one in TEMP_SCHEMA)


def _ours(name: str) -> bool:
    """Chronos' own objects, and Litestream's (its bookkeeping in the file as it replicates:
    no statement writes them, or replication breaks)."""
    return name.lower().startswith((PREFIX, "_litestream_"))


def _secret(table: str, column: str) -> bool:
    return column.lower() in SECRET.get(table.lower(), ())


def install(conn: apsw.Connection, world: bool = False) -> Guard:
    """The connection's guard (installed on first use; kept for the connection's life)."""
    guard = conn.authorizer
    if isinstance(guard, Guard):
        return guard
    guard = Guard(world=world)
    conn.authorizer = guard
    return guard


def checking(conn: apsw.Connection, access: Access) -> Guard:
    """The connection's guard, set to check a user's statement under ``access`` (chronos' own
    SQL runs unchecked otherwise); ``guard.done()`` after it."""
    guard = install(conn)
    guard.access, guard.denied, guard.acted, guard.altered = access, None, False, False
    guard.unjudged = None
    guard.dropping, guard.calls = "", 0
    return guard


def main_table_message(name: str) -> str:
    return (
        f"main.{name} is main's table: on a branch, write the branch's rows by their unqualified "
        f"name ({name}); main changes when the branch merges"
    )
