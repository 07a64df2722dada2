"""A merge policy's rules on the rows a merge is about to apply (``storage.governance.policies``).

Each broken rule is one reason, worded to follow "it": ``it changes 5 rows (at most 2)``. The
merge (``merge.apply``) asks for them inside its transaction, once its plan is settled, so they
read exactly what it would apply; a merge with reasons is held (``Held``) and rolls back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from ..errors import REFUSED, ChronosError
from ..sqltext import quote_ident
from ..storage.db import Database
from ..storage.fetch import one_row
from ..storage.governance import policies as mergepolicies
from ..storage.governance import readers as declared
from ..storage.governance import reads as kept_reads
from ..storage.governance.policies import Policy
from ..storage.worlds import World
from . import reads as merge_reads
from .plan import Plan

PRODUCTION = "the database is in production mode: every agent's merge waits for a person"


@dataclass
class Hold:
    """Whose merge is judged, and by what: the agent's policy (None: none), and whether the
    database is in production. A merge that breaks a rule is held for a person."""

    agent: str
    policy: Policy | None
    production: bool = False

    @property
    def policy_name(self) -> str | None:
        return self.policy.name if self.policy else None


class Held(ChronosError):
    """The merge would wait for a person (``reasons``); nothing of it stayed."""

    def __init__(self, name: str, hold: Hold | None, reasons: list[str], version: int) -> None:
        self.name, self.hold, self.reasons, self.version = name, hold, reasons, version
        policy = hold.policy_name if hold else None
        super().__init__(
            f"merging {name} needs a person's review ({because(policy, reasons)})", REFUSED
        )


def because(policy: str | None, reasons: list[str], under: str = "") -> str:
    """``merge policy small: it changes 5 rows (at most 2); it deletes 1 row (at most 0)``:
    the rules' reasons under their policy's name (``under``: another name for them)."""
    rules = "; ".join(r for r in reasons if r != PRODUCTION)
    parts = [PRODUCTION] if PRODUCTION in reasons else []
    label = under or (f"merge policy {policy}" if policy else "")
    if rules:
        parts.append(f"{label}: {rules}" if label else rules)
    return "; ".join(parts)


def rows_text(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"


@dataclass
class Counts:
    """What a merge changes, as the rules count it, by the parent's names (``merge.names``)."""

    rows: int = 0
    deletes: int = 0
    tables: set[str] = field(default_factory=set)
    columns: set[str] = field(default_factory=set)  # table.column, as written in the schema
    overwrites: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # a dropped table.column: its values

    @property
    def removed(self) -> int:
        """What max_deletes counts: rows deleted, and values of the columns dropped."""
        return self.deletes + sum(self.dropped.values())


def counts(p: Plan, taken_over: AbstractSet[tuple[int, str]] = frozenset()) -> Counts:
    """``taken_over``: the world's rows a rebase kept over the parent's newer change
    (``storage.governance.holds``): each is an overwrite whenever it merges."""
    names = p.names
    out = Counts(rows=len(p.writes) + sum(s.rows for s in p.schema), deletes=p.deletes)
    columns: dict[int, list[str]] = {}  # (per table: column_names makes a list on each read)
    for o in p.writes:
        c = o.change
        out.tables.add(names.table(c.n, c.table))
        every = columns.get(c.n) or columns.setdefault(c.n, c.t.column_names)
        before, after = c.theirs, o.result
        if before is None or after is None:
            changed = every
        else:
            changed = [k for k in every if before.get(k) != after.get(k)]
        out.columns.update(names.column(c.n, c.t, k) for k in changed)
        if (c.parent_changed and o.outcome != "combined") or (
            taken_over and (c.n, c.id) in taken_over
        ):
            out.overwrites.append(c.where)
    _schema_counts(p, out)
    return out


def _schema_counts(p: Plan, out: Counts) -> None:
    """The schema steps by the parent's names (a rename changes the table or column it
    renames, as the policy names it); a dropped table changes each of its columns, and a
    dropped column each row holding a value in it (and removes that value)."""
    names = p.names
    done: set[tuple[int, str]] = set()
    for s in p.schema:
        n = s.op.table_id
        out.tables.add(names.table(n, s.table))
        if (n, s.op.kind) in done:
            continue
        done.add((n, s.op.kind))
        if s.op.kind == "drop" and n in names.parent:
            pt = names.parent[n][1]
            out.columns.update(f"{names.parent[n][0]}.{c}" for c in pt.column_names)
        elif s.op.kind == "rename_column":
            out.columns.update(f"{names.parent[n][0]}.{c}" for c in names.renamed_columns(n))
        elif s.op.kind == "drop_column":
            for column in names.dropped_columns(n):
                values = _values(p, names.parent[n][0], column)
                out.dropped[f"{names.parent[n][0]}.{column}"] = values
                out.rows += values


def _values(p: Plan, table: str, column: str) -> int:
    """The parent's rows holding a value in this column."""
    source = f"main.{quote_ident(table)}" if p.parent.world is None else quote_ident(table)
    sql = f"select count(*) from {source} where {quote_ident(column)} is not null"
    return int(one_row(p.parent.conn.execute(sql))[0])


def deletes_text(n: Counts) -> str:
    """``deletes 2 rows``, ``drops column users.email, 5 values``, or both with "and"."""
    parts = [f"deletes {rows_text(n.deletes)}"] if n.deletes or not n.dropped else []
    parts += [
        f"drops column {c}, {v} value{'s' if v != 1 else ''}" for c, v in n.dropped.items() if v
    ]
    return " and ".join(parts)


def reasons(db: Database, p: Plan, hold: Hold, n: Counts) -> list[str]:
    """Each rule of the hold's policy the merge breaks (and production's own reason); ``n``:
    what the merge changes."""
    out = [PRODUCTION] if hold.production else []
    if hold.policy is None:
        return out
    rules = hold.policy.rules
    into_main = p.parent.world is None
    out += _limits(rules, n, lambda: _last_hour(db, hold.agent) if into_main else (0, 0))
    age = mergepolicies.age_ms(rules["max_age"])
    forked_ms = int((time.time() - p.world.created) * 1000)
    if age is not None and forked_ms > age:
        out.append(f"its branch was forked {_span(forked_ms)} ago (at most {_span(age)})")
    out += _table_rules(rules, n)
    if not rules["critical"]:
        out += critical_reasons(db, n)
    if rules["check_reads"]:
        out += stale_reasons(db, p.world)
    if not rules["schema"] and p.schema:
        what = "; ".join(s.op.sql(s.table) for s in p.schema)
        out.append(f"it changes the schema ({_short(what)}) (schema is false)")
    if not rules["overwrite"] and n.overwrites:
        out.append(
            f"it overwrites {rows_text(len(n.overwrites))} its parent changed since the fork "
            f"({_listed(n.overwrites)}) (overwrite is false)"
        )
    over = rules["confirm_deletes_over"]
    if over is not None and n.removed > over:
        out.append(
            f"it {deletes_text(n)} (over confirm_deletes_over, {over}: a person confirms the count)"
        )
    return out


def critical_reasons(db: Database, n: Counts) -> list[str]:
    """A reason per critical reader (MARK READER ... CRITICAL) reading a column the merge
    changes or drops (the rule critical, false)."""
    hit = declared.reading(db.main.conn, sorted(n.columns | n.dropped.keys()))
    return [
        f"it changes {', '.join(read)}, which critical reader {reader.name} reads "
        f"(critical is false)"
        for reader, read in hit
        if reader.critical
    ]


def stale_reasons(db: Database, world: World) -> list[str]:
    """The rule check_reads: what the world read must not have changed since its fork (and
    it must have kept what it read)."""
    if not kept_reads.keeps(world.meta):
        return ["it didn't keep what it read (check_reads is true: fork with check_reads)"]
    found = [c.shown() for c in merge_reads.check(db, world).changed]
    if not found:
        return []
    return [
        f"{len(found)} of the reads it kept changed since its fork ({_listed(found)}) "
        "(check_reads is true)"
    ]


def _limits(rules: dict, n: Counts, last_hour: Callable[[], tuple[int, int]]) -> list[str]:
    out = []
    if rules["max_rows"] is not None and n.rows > rules["max_rows"]:
        out.append(f"it changes {rows_text(n.rows)} (at most {rules['max_rows']})")
    most = rules["max_deletes"]
    if most is not None and n.removed > most:
        out.append(
            f"it {deletes_text(n)} (at most {most}{' deletes' if n.removed > n.deletes else ''})"
        )
    if rules["rows_per_hour"] is None and rules["deletes_per_hour"] is None:
        return out
    rows, deletes = last_hour()
    hourly = "with its other merges into main in the last hour"
    if rules["rows_per_hour"] is not None and rows + n.rows > rules["rows_per_hour"]:
        out.append(
            f"{hourly} it changes {rows_text(rows + n.rows)} (at most {rules['rows_per_hour']} "
            f"an hour)"
        )
    # (a dropped column's values count as deletes, this merge's and the earlier ones')
    if rules["deletes_per_hour"] is not None and deletes + n.removed > rules["deletes_per_hour"]:
        out.append(
            f"{hourly} it deletes {rows_text(deletes + n.removed)} (at most "
            f"{rules['deletes_per_hour']} an hour)"
        )
    return out


def _table_rules(rules: dict, n: Counts) -> list[str]:
    out = []
    allowed = {t.lower() for t in rules["tables"]}
    outside = sorted(t for t in n.tables if allowed and t.lower() not in allowed)
    if outside:
        out.append(
            f"it changes {', '.join(outside)}, not in its tables ({', '.join(rules['tables'])})"
        )
    review = {t.lower() for t in rules["review_tables"]}
    held = sorted(t for t in n.tables if t.lower() in review)
    if held:
        out.append(f"it changes {', '.join(held)} (review_tables)")
    columns = {c.lower() for c in rules["review_columns"]}
    touched = sorted(c for c in n.columns if c.lower() in columns)
    if touched:
        out.append(f"it changes {', '.join(touched)} (review_columns)")
    out += [
        f"it drops column {c}, {v} value{'s' if v != 1 else ''} (review_columns)"
        for c, v in sorted(n.dropped.items())
        if c.lower() in columns
    ]
    return out


def _last_hour(db: Database, agent: str) -> tuple[int, int]:
    """Rows and deletes of the agent's merges into main in the last hour."""
    rows, deletes = one_row(
        db.main.conn.execute(
            "select coalesce(sum(rows), 0), coalesce(sum(json_extract(detail, '$.deletes') "
            "+ coalesce(json_extract(detail, '$.dropped_values'), 0)), 0) "
            "from main._chronos_events where world = 0 and kind = 'merge' and actor = ? "
            "and time > ?",
            (agent, time.time() - 3600),
        )
    )
    return int(rows), int(deletes)


def _span(ms: int) -> str:
    seconds = ms // 1000
    if seconds < 120:
        return f"{seconds} s" if seconds else f"{ms} ms"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


def _listed(items: list[str], most: int = 3) -> str:
    more = len(items) - most
    return ", ".join(items[:most]) + (f" and {more} more" if more > 0 else "")


def _short(text: str, most: int = 120) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."
