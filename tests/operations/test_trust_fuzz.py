"""The trust layer, generated: an agent with write_main, merge_own, merge and restore, under a
random merge policy (every rule), merge checks, a reviewer and production mode, sent sequences
of forks, writes (renames, DROP COLUMN), rebases, whole and partial merges, merges ``into``,
set_meta, restore, rollback, UNDO AGENT, undo_merge, reviews and a person's approvals.

The oracle reads main itself (sqlite3, outside chronos) before and after each call, so it
needs no model of the rules' arithmetic: what a merge actually changed in main (rows, deletes,
tables, columns, schema, renames traced back to main's names) must be allowed by the agent's
policy, its declared scope, the merge checks and the mode; a refused or held call leaves main
exactly as it was, and a held world waits in reviews with a reason. The agent may not touch
main by any other way (writes, restore, rollback, undo) while a policy or production holds it.
After every step: no internal error, the file passes its integrity check, and every refusal
and every change of main by the agent is in the audit trail.

Most sequences call the Python API in-process; a few drive ``chronos mcp --agent bot``.

    python3 dev.py fuzz 5000      # CHRONOS_TRUST_FUZZ_EXAMPLES=5000, and the safe-mode fuzz
"""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import event, example, given
from hypothesis import strategies as st
from mcp_lines import INTERNAL, Server
from strategies import example_settings, examples_from

import chronos_lite
from chronos_lite import REGISTRY, ChronosError

EXAMPLES = examples_from("CHRONOS_TRUST_FUZZ_EXAMPLES", 250)
STDIO_EXAMPLES = max(5, EXAMPLES // 25)

# Findings known to be open, each skipping its one check (a name, or a narrower case of it as
# "max_deletes/drop_column"): none now. Name one here only with an open issue about it.
KNOWN_OPEN: set[str] = set()


def known(finding: str) -> bool:
    """Whether a finding is open (its name, or a narrower case of it, in KNOWN_OPEN)."""
    return any(finding == k or finding.startswith(k + "/") for k in KNOWN_OPEN)


# --- the grammar ---------------------------------------------------------------------------------

WORLDS = ["w1", "w2", "w3", "w4", "w5"]
TABLE_RENAMES = {"goods": "items", "memos": "notes"}  # a world's new name -> main's
COLUMN_RENAMES = {("items", "title"): "name"}
WORLD_SQL = [
    "update items set qty = qty + 1 where id = 1",
    "update items set qty = 150 where id = 2",  # breaks the merge check
    "update items set name = 'n' where id = 3",
    "update items set grp = 2 where id = 1",
    "delete from items where id = 4",
    "delete from items where id in (1, 2)",
    "insert into items(grp, name, qty) values (1, 'new', 5)",
    "update notes set body = 'b' where id = 1",
    "delete from notes where id = 2",
    "alter table items rename column name to title",
    "update items set title = 't' where id = 2",
    "alter table items rename to goods",
    "update goods set qty = 150 where id = 3",
    "alter table notes rename to memos",
    "update memos set body = 'm' where id = 1",
    "alter table items drop column name",
    "alter table items drop column qty",
    "alter table items add column extra int",
    "alter table items rename column name to title; update items set title = 't' where id = 2",
    "alter table items rename to goods; update goods set qty = 150 where id = 3",
    "alter table items rename to goods; update goods set name = 'g' where id = 1",
    "alter table notes rename to memos; update memos set body = 'm' where id = 1",
]
MAIN_SQL = [  # a person's writes to main: the check never finds rows after them
    "update items set qty = 7 where id = 1",
    "update items set name = 'main' where id = 3",
    "delete from items where id = 2",
    "update notes set body = 'main' where id = 1",
    "insert into items(grp, name, qty) values (2, 'p', 1)",
]
SCOPES = [None, {"may_change": "items.qty"}, {"may_change": "items"}, {"tenant": "grp = 1"}]
META = [{"may_change": None, "tenant": None}, {"may_change": "items, notes"}, {"tenant": "1"}]
CHECK = "select id from items where qty > 100"
# the agent reaching main other than by a merge (only rollback to 'start' needs setup)
ON_MAIN = [  # (operation, arguments, the finding's name if main changes)
    ("restore", {"branch": "main", "at": "-1 hours"}, "restore_main"),
    ("rollback", {"branch": "main", "checkpoint": "start"}, "restore_main"),
    ("undo_agent", {"agent": "owner", "since": "-1 hours"}, "restore_main"),
    ("undo_agent", {"agent": "bot", "since": "-1 hours"}, "restore_main"),
    ("undo_merge", {"branch": "w1"}, "restore_main"),
    ("sql", {"sql": "RESTORE WORLD main AT '-1 hours'"}, "restore_main"),
    ("sql", {"sql": "UNDO AGENT owner SINCE '-1 hours'"}, "restore_main"),
    ("put", {"table": "items", "id": "1", "record": {"id": 1, "grp": 1, "name": "x"}}, "write"),
    ("delete", {"table": "notes", "id": "1"}, "write"),
    ("sql", {"sql": "update items set qty = 0"}, "write"),
    ("insert", {"table": "notes", "file": "NOTES_CSV"}, "write"),
]

world = st.integers(0, 3)  # one of the worlds open then (in the order they were forked)
merge_args = st.one_of(
    *[st.just({})] * 4,
    st.sampled_from([{"resolve": "ours"}, {"resolve": "theirs"}, {"into": "main"}]),
    st.builds(lambda w: {"into": w}, world),
    st.sampled_from([{"only_tables": ["items"]}, {"only_tables": ["notes"]}]),
    st.sampled_from([{"only_keys": ["items/1"]}, {"only_keys": ["items/2", "notes/1"]}]),
    st.just({"rows": {"items/1": "ours", "items/2": "ours"}, "resolve": "ours"}),
)
# a task from start to end: the bot forks a world from main, writes it, and merges it (main
# changed meanwhile, a rebase, its meta changed, a review of the held merge: each may happen)
episode = st.tuples(
    st.just("episode"),
    st.fixed_dictionaries(
        {"sql": st.lists(st.sampled_from(WORLD_SQL), min_size=1, max_size=3), "merge": merge_args},
        optional={
            "scope": st.sampled_from(SCOPES[1:]),
            "main": st.sampled_from(MAIN_SQL),
            "rebase": st.sampled_from(["ours", "theirs"]),
            "meta": st.sampled_from(META),
            "review": st.sampled_from(["bot", "lead"]),
        },
    ),
)
step = st.one_of(
    *[episode] * 4,
    st.tuples(st.just("fork"), st.sampled_from(["bot", "bot", "owner"]), st.integers(-3, 2),
              st.sampled_from(SCOPES)),  # (from main, or from an open world)
    *[st.tuples(st.just("write"), world, st.sampled_from(WORLD_SQL))] * 5,
    st.tuples(st.just("main_write"), st.sampled_from(MAIN_SQL)),
    st.tuples(st.just("rebase"), world, st.sampled_from(["fail", "ours", "theirs"])),
    *[st.tuples(st.just("merge"), world, merge_args)] * 3,
    st.tuples(st.just("set_meta"), world, st.sampled_from(META)),
    st.tuples(st.just("find"), world, st.sampled_from([{}, {"id": 1}, {"name": "a"},
                                                       {"text": "a b"}])),
    st.tuples(st.just("on_main"), st.sampled_from(range(len(ON_MAIN)))),
    st.tuples(st.just("own_history"), world,
              st.sampled_from(["checkpoint", "rollback", "restore"])),
    st.tuples(st.just("review"), st.sampled_from(["bot", "lead"]), world,
              st.sampled_from(["approve", "approve", "reject", "pass"])),
    st.tuples(st.just("approve"), world),
    st.tuples(st.just("mode"), st.sampled_from(["production", "development"])),
)  # fmt: skip
rules = st.fixed_dictionaries(
    {
        "max_rows": st.sampled_from([None, None, 0, 1, 2, 4]),
        "max_deletes": st.sampled_from([None, None, 0, 1, 2]),
        "rows_per_hour": st.sampled_from([None, None, None, 2, 5]),
        "deletes_per_hour": st.sampled_from([None, None, None, 0, 1]),
        "max_age": st.sampled_from([None, "1h"]),
        "tables": st.sampled_from([[], [], ["items"], ["notes"], ["items", "notes"]]),
        "review_tables": st.sampled_from([[], [], ["items"], ["notes"]]),
        "review_columns": st.sampled_from([[], ["items.name"], ["items.qty"], ["notes.body"]]),
        "schema": st.sampled_from([True, True, True, False]),
        "overwrite": st.booleans(),
        "require_scope": st.booleans(),
        "confirm_deletes_over": st.sampled_from([None, None, None, 0, 1, 2]),
        "reviewer": st.sampled_from([None, "lead", "bot"]),
    },
)
config = st.fixed_dictionaries(
    {
        "rules": st.one_of(st.none(), rules, rules),
        "production": st.sampled_from([False, False, False, True]),
        "check": st.sampled_from([None, [], ["items"]]),  # none; on every merge; on items'
        "scope": st.sampled_from(SCOPES),  # w1's, the bot's world forked first
        "rights": st.one_of(
            st.just({"write_main", "merge_own", "merge", "restore"}),
            st.just({"write_main", "merge_own", "merge", "restore"}),
            st.sets(st.sampled_from(["write_main", "merge_own", "merge", "restore"])),
        ),
    }
)

# --- main as it is, and what a call changed in it --------------------------------------------


def main_state(folder: Path) -> dict[str, Any]:
    """Main's schema and every row of its tables, read outside chronos (and the file checked)."""
    conn = sqlite3.connect(f"file:{folder / 'chronos.db'}?mode=ro", uri=True)
    try:
        assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
        mine = "name not like '\\_chronos%' escape '\\' and name not like 'sqlite\\_%' escape '\\'"
        out: dict[str, Any] = {
            "schema": conn.execute(f"select type, name, sql from sqlite_master where {mine} "
                                   "order by name").fetchall()
        }  # fmt: skip
        for (t,) in conn.execute(f"select name from sqlite_master where type = 'table' and {mine}"):
            cols = [r[1] for r in conn.execute(f'pragma table_info("{t}")')]
            rows = conn.execute(f'select * from "{t}"').fetchall()
            out[t] = (cols, {r[0]: dict(zip(cols, r, strict=True)) for r in rows})
        return out
    finally:
        conn.close()


def check_finds(folder: Path) -> bool:
    """Whether the merge check's query finds rows in main (or can't run there any more)."""
    conn = sqlite3.connect(f"file:{folder / 'chronos.db'}?mode=ro", uri=True)
    try:
        return bool(conn.execute(CHECK).fetchall())
    except sqlite3.Error:
        return True
    finally:
        conn.close()


@dataclass
class Changes:
    """What landed in main, by main's own names (a renamed table or column is its old name)."""

    rows: int = 0
    deletes: int = 0
    tables: set[str] = field(default_factory=set)
    columns: set[str] = field(default_factory=set)  # table.column
    keys: set[tuple[str, Any]] = field(default_factory=set)
    pairs: list[tuple[dict | None, dict | None]] = field(default_factory=list)  # before, after
    schema: bool = False
    renamed: bool = False  # a table or column of main's has another name now
    dropped: bool = False  # a column of main's is gone

    def finding(self, rule: str) -> str:
        """The rule's name, and how the change came about where renames or drops were part."""
        return rule + "/rename" * self.renamed + "/drop_column" * self.dropped


def changes(before: dict, after: dict) -> Changes:
    out = Changes(schema=before["schema"] != after["schema"])
    seen = set()
    for name, (cols_a, rows_a) in _tables(after):
        t = TABLE_RENAMES.get(name, name) if name not in before else name
        seen.add(t)
        if t not in before:  # a table of its own: every row a change
            out.tables.add(name)
            out.rows += len(rows_a)
            continue
        if t != name:
            out.tables.add(t)
            out.renamed = True
        cols_b, rows_b = before[t]
        named = {c: c if c in cols_b else COLUMN_RENAMES.get((t, c), c) for c in cols_a}
        out.columns |= {f"{t}.{m}" for c, m in named.items() if c != m}
        out.renamed |= any(c != m for c, m in named.items())
        for c in set(cols_b) - set(named.values()):  # dropped: its values are removed
            out.tables.add(t)
            out.columns.add(f"{t}.{c}")
            out.dropped = True
            out.deletes += any(r[c] is not None for r in rows_b.values())
        for key in rows_b.keys() | rows_a.keys():
            b, a = rows_b.get(key), rows_a.get(key)
            a = {named[c]: v for c, v in a.items()} if a is not None else None
            if b is None or a is None:
                touched = list(cols_b if a is None else a)
                out.deletes += a is None
            else:
                touched = [c for c in a if a[c] != b.get(c)]
            if touched:
                out.rows += 1
                out.tables.add(t)
                out.columns |= {f"{t}.{c}" for c in touched}
                out.keys.add((t, key))
                out.pairs.append((b, a))
    for t in set(_names(before)) - seen:  # dropped
        out.tables.add(t)
        out.deletes += len(before[t][1])
    return out


def _names(state: dict) -> list[str]:
    return [k for k in state if k != "schema"]


def _tables(state: dict) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in state.items() if k != "schema"]


def outside_scope(c: Changes, scope: dict) -> bool:
    """Whether what landed goes outside a world's declared scope (as declared at its fork)."""
    parts = [p.strip() for p in str(scope.get("may_change") or "").split(",") if p.strip()]
    if parts:
        for col in c.columns:
            if col.split(".")[0] not in parts and col not in parts:
                return True
        if any(t not in parts and not any(p.startswith(t + ".") for p in parts) for t in c.tables):
            return True
    if scope.get("tenant") == "grp = 1":  # (its other tenant, "1", holds every row)
        return any(row is not None and row.get("grp") != 1 for pair in c.pairs for row in pair)
    return False


# --- one sequence ----------------------------------------------------------------------------


@dataclass
class Outcome:
    ok: bool
    text: str
    code: str | None = None


@dataclass
class World:
    owner: str
    parent: str
    scope: dict  # as declared at the fork: under require_scope, what it's held to
    meta: dict  # its scope now (set_meta may change it, or take it out)
    overwrites: set = field(default_factory=set)  # main's rows changed since, not taken
    kept: set = field(default_factory=set)  # of those, kept "ours" by a rebase
    meta_set: bool = False  # set_meta changed its meta since


class Run:
    """One database, one agent ``bot`` (its calls in-process or over stdio), a reviewer ``lead``
    and the person (the owner, in-process); each step checked against what main became."""

    def __init__(self, folder: Path, db: Any, cfg: dict, server: Server | None) -> None:
        self.folder, self.db, self.server = folder, db, server
        self.lead = db.as_agent("lead")
        self.bot = db.as_agent("bot")
        self.production = cfg["production"]
        self.checked = cfg["check"] is not None  # a merge check is set
        policies = db.call("merge_policies").data["policies"]
        self.rules = policies[0]["rules"] if cfg["rules"] is not None else None
        self.worlds: dict[str, World] = {}
        self.hourly = [0, 0]  # rows, deletes the bot's own merges put in main
        self.main = main_state(folder)

    # calls
    def call(self, who: str, op: str, **args: Any) -> Outcome:
        if who == "bot" and self.server is not None:
            return self._over_stdio(op, args)
        caller = {"bot": self.bot, "lead": self.lead}.get(who)
        try:
            return Outcome(True, self.db.call(op, caller, **args).text)
        except ChronosError as exc:
            assert exc.code != INTERNAL and not str(exc).startswith("internal error"), (op, exc)
            return Outcome(False, str(exc), exc.code)

    def _over_stdio(self, op: str, args: dict) -> Outcome:
        assert self.server is not None
        result = self.server.call(op, args)
        if not result.get("isError"):
            return Outcome(True, result["content"][0]["text"])
        error = result["structuredContent"]
        assert error["code"] != INTERNAL and not error["error"].startswith("internal"), error
        return Outcome(False, error["error"], error["code"])

    def audited(self) -> int:
        conn = sqlite3.connect(f"file:{self.folder / 'chronos.db'}?mode=ro", uri=True)
        try:
            return conn.execute(
                "select count(*) from _chronos_audit where agent = 'bot'"
            ).fetchone()[0]
        finally:
            conn.close()

    def act(self, who: str, op: str, **args: Any) -> tuple[Outcome, Changes]:
        """A call, with main read before and after it, and the bot's audit entry checked."""
        before, n = self.main, self.audited()
        clean = self.checked and not check_finds(self.folder)
        out = self.call(who, op, **args)
        event(f"{who} {op}: {'ok' if out.ok else out.code}")
        self.main = main_state(self.folder)
        landed = changes(before, self.main)
        changed = before != self.main
        if changed:
            self._parent_changed(landed, args.get("branch") if op == "merge" else None)
        if changed and op in ("merge", "review") and clean and not known(landed.finding("check")):
            assert not check_finds(self.folder), (
                f"{landed.finding('check')}: a merge broke the merge check: {out}"
            )
        if who == "bot" and not out.text.startswith("unknown tool"):  # (MCP: not listed to it)
            kept = (not out.ok and (out.code == "42501" or not REGISTRY.get(op).read_only)) or (
                out.ok and changed
            )
            assert self.audited() >= n + kept, f"no audit entry for {op} {args}: {out}"
        if not out.ok:
            assert not changed, f"refused, yet main changed: {op} {args}: {out}"
        return out, landed

    def _parent_changed(self, landed: Changes, merged: str | None) -> None:
        for name, w in self.worlds.items():
            if w.parent == "main" and name != merged:
                w.overwrites |= landed.keys

    @property
    def held_back(self) -> bool:
        """Whether the bot may change main only by a merge (a policy, or production mode)."""
        return self.rules is not None or self.production

    # steps
    def step(self, kind: str, *a: Any) -> None:
        """One step; a world given by number is the open world it picks."""
        if kind in ("write", "set_meta", "rebase", "merge", "own_history", "approve", "find"):
            a = (self.pick(a[0]), *a[1:])
        if kind == "review":
            a = (a[0], self.pick(a[1]), *a[2:])
        if kind == "merge" and isinstance(a[1].get("into"), int):
            a = (a[0], {"into": self.pick(a[1]["into"])})
        getattr(self, kind)(*a)

    def pick(self, i: int) -> str:
        """The i-th open world (a name never forked if none is open)."""
        names = list(self.worlds)
        return names[i % len(names)] if names else "w9"

    def fork(self, who: str, parent: int, scope: dict | None) -> None:
        name = next((w for w in WORLDS if w not in self.worlds), "w1")
        self.fork_world(who, name, "main" if parent < 0 else self.pick(parent), scope)

    def episode(self, task: dict) -> None:
        name = next((w for w in WORLDS if w not in self.worlds), "w1")
        self.fork_world("bot", name, "main", task.get("scope"))
        for sql in task["sql"]:
            self.write(name, sql)
        if "main" in task:
            self.main_write(task["main"])
        if "rebase" in task:
            self.rebase(name, task["rebase"])
        if "meta" in task:
            self.set_meta(name, task["meta"])
        self.merge(name, {k: v for k, v in task["merge"].items() if k != "into"})
        if "review" in task:
            self.review(task["review"], name, "approve")

    def fork_world(self, who: str, name: str, parent: str, scope: dict | None) -> None:
        out, _ = self.act(
            who, "fork", name=name, **{"from": parent}, **({"meta": scope} if scope else {})
        )
        if out.ok:
            self.worlds[name] = World(who, parent, scope or {}, dict(scope or {}))

    def write(self, name: str, sql: str) -> None:
        w = self.worlds.get(name)
        self.act(w.owner if w else "bot", "sql", branch=name, sql=sql)

    def main_write(self, sql: str) -> None:
        self.act("owner", "sql", sql=sql)

    def set_meta(self, name: str, meta: dict) -> None:
        w = self.worlds.get(name)
        if self.act(w.owner if w else "bot", "set_meta", branch=name, meta=meta)[0].ok and w:
            w.meta_set = True
            w.meta = {k: v for k, v in {**w.meta, **meta}.items() if v is not None}

    def find(self, name: str, where: dict) -> None:
        """A read on the bot's world or another's (it changes nothing anywhere; a text find
        makes or brings up main's text index, chronos' own object, not the app's rows)."""
        if "text" in where:
            self.act("bot", "find", table="items", branch=name, text=where["text"])
        else:
            self.act("bot", "find", table="items", branch=name, where=where)

    def mode(self, mode: str) -> None:
        if self.act("owner", "mode", mode=mode)[0].ok:
            self.production = mode == "production"

    def rebase(self, name: str, resolve: str) -> None:
        w = self.worlds.get(name)
        out, _ = self.act(w.owner if w else "bot", "rebase", branch=name, resolve=resolve)
        if out.ok and w is not None and w.parent == "main":
            differ = changes(self.main, self.world_state(name)).keys
            w.overwrites &= differ  # (rows now as main's aren't overwritten; those kept "ours" are)
            w.kept |= w.overwrites

    def world_state(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": None}
        for t in ("items", "notes", *TABLE_RENAMES):
            try:
                (r,) = self.db.call("sql", branch=name, sql=f'select * from "{t}"').data["results"]
            except ChronosError:
                continue
            out[t] = (
                r["columns"],
                {row[0]: dict(zip(r["columns"], row, strict=True)) for row in r["rows"]},
            )
        return out

    def merge(self, name: str, args: dict) -> None:
        w = self.worlds.get(name)
        out, landed = self.act("bot", "merge", branch=name, **args)
        into_main = args.get("into", w.parent if w else None) == "main"
        held = "queued" in out.text
        event(f"merge: {'landed' if landed.rows else 'held' if held else out.code or 'ok'}")
        if not into_main:
            assert not landed.rows and not landed.schema, f"a merge into {args} changed main"
        if out.ok and into_main and w is not None:
            broken = self.broken(landed, w)
            assert not broken, f"merged {name} {args} into main breaking {broken}: {out.text}"
            self.hourly[0] += landed.rows
            self.hourly[1] += landed.deletes
        if out.ok and not set(args) & {"only_keys", "only_tables", "into"}:
            self.worlds.pop(name, None)
        if not out.ok and held:
            reasons = self.review_of(name)
            assert reasons and all(reasons), f"held, yet not in reviews with a reason: {out.text}"

    def broken(self, c: Changes, w: World) -> list[str]:
        """The rules what landed breaks (their findings' names), for the bot's own merge into
        main."""
        out = ["production"] if self.production and c.rows + c.schema else []
        r = self.rules or {}
        limits = [("max_rows", c.rows), ("max_deletes", c.deletes),
                  ("rows_per_hour", self.hourly[0] + c.rows),
                  ("deletes_per_hour", self.hourly[1] + c.deletes),
                  ("confirm_deletes_over", c.deletes)]  # fmt: skip
        out += [k for k, n in limits if r.get(k) is not None and n > r[k]]
        if r.get("tables") and not c.tables <= set(r["tables"]):
            out.append("tables")
        if c.tables & set(r.get("review_tables", [])):
            out.append("review_tables")
        if c.columns & set(r.get("review_columns", [])):
            out.append("review_columns")
        if r and not r["schema"] and c.schema:
            out.append("schema")
        out = [c.finding(rule) for rule in out]
        overwritten = c.keys & w.overwrites
        if r and not r["overwrite"] and overwritten:
            out.append("overwrite/rebase" if overwritten & w.kept else "overwrite")
        if r.get("require_scope") and outside_scope(c, w.scope):
            out.append(c.finding("scope/set_meta" if w.meta_set else "scope"))
        elif outside_scope(c, w.meta):
            out.append(c.finding("scope"))
        return [b for b in out if not known(b)]

    def review_of(self, name: str) -> list[str] | None:
        for r in self.db.call("reviews").data["reviews"]:
            if r["world"] == name:
                return r["reasons"]
        return None

    def on_main(self, i: int) -> None:
        op, args, finding = ON_MAIN[i]
        if args.get("file") == "NOTES_CSV":
            (self.folder.parent / "notes.csv").write_text("id,body\n7,csv\n")
            args = {**args, "file": str(self.folder.parent / "notes.csv")}
        out, landed = self.act("bot", op, **args)
        if self.held_back and finding not in KNOWN_OPEN:
            assert not (landed.rows or landed.schema), f"{op} {args} changed main: {out.text}"

    def own_history(self, name: str, op: str) -> None:
        args = {"checkpoint": {"name": "cp"}, "rollback": {"checkpoint": "cp"}}.get(
            op, {"at": "-1 hours"}
        )
        self.act("bot", op, branch=name, **args)

    def review(self, who: str, name: str, verdict: str) -> None:
        w = self.worlds.get(name)
        reasons = self.review_of(name) or []
        out, landed = self.act(who, "review", branch=name, verdict=verdict, reason="fuzz")
        if out.ok and (landed.rows or landed.schema):
            if w is not None and w.owner == who and "own_review" not in KNOWN_OPEN:
                raise AssertionError(f"{who} approved its own world {name}")
            if any("production" in r for r in reasons) and "production_review" not in KNOWN_OPEN:
                raise AssertionError(f"agent {who} approved a production hold of {name}")
            self.worlds.pop(name, None)

    def approve(self, name: str) -> None:
        held = [r for r in self.db.call("reviews").data["reviews"] if r["world"] == name]
        if held:
            out, _ = self.act("owner", "merge", branch=name, version=held[0]["version"])
            if out.ok:
                self.worlds.pop(name, None)
                assert self.review_of(name) is None, f"approved, still in reviews: {out.text}"


# --- the database, and the tests ---------------------------------------------------------------

_TEMPLATE: list[Path] = []


def template() -> Path:
    """The tables, their rows and the agents, made once: each sequence starts from a copy."""
    if not _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="chronos-trust-")) / "shop"
        db = chronos_lite.init(folder)
        db.sql("create table items(id integer primary key, grp int, name text, qty int)")
        db.sql("create table notes(id integer primary key, body text)")
        db.sql("insert into items values (1, 1, 'a', 1), (2, 1, 'b', 2), (3, 2, 'c', 3)")
        db.sql("insert into items values (4, 2, 'd', 4)")
        db.sql("insert into notes values (1, 'x'), (2, 'y')")
        db.call("agent", action="create", name="bot", rights=["read"])
        db.call("agent", action="create", name="lead", rights=["read"])
        db.call("checkpoint", branch="main", name="start")
        _TEMPLATE.append(folder)
    return _TEMPLATE[0]


def database(cfg: dict, into: Path) -> Any:
    """A copy of the template with this sequence's rights, policy, check and mode."""
    folder = into / "shop"
    folder.mkdir()
    source = sqlite3.connect(template() / "chronos.db")
    copy = sqlite3.connect(folder / "chronos.db")
    source.backup(copy)
    source.close()
    copy.close()
    db = chronos_lite.open(folder)
    rights = ["read", "fork", "write_own", *sorted(cfg["rights"])]
    db.call("agent", action="alter", name="bot", rights=rights)
    if cfg["check"] is not None:
        on = {"tables": cfg["check"]} if cfg["check"] else {}
        db.call("set_merge_check", name="small_qty", query=CHECK, **on)
    if cfg["rules"] is not None:
        db.call("set_merge_policy", name="p", rules=cfg["rules"], agents=["bot"])
    if cfg["production"]:
        db.call("mode", mode="production")
    return db


def run_steps(cfg: dict, steps: list, over_stdio: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = database(cfg, Path(tmp))
        server = Server(db.folder, "--agent", "bot") if over_stdio else None
        try:
            if server is not None:
                server.initialize()
            run = Run(db.folder, db, cfg, server)
            run.fork_world("bot", "w1", "main", cfg["scope"])
            for s in steps:
                run.step(*s)  # (an apsw.Error out of a call is a bug: it fails the test)
            if server is not None:
                assert server.close() == 0
        finally:
            if server is not None:
                server.kill()
            db.close()  # (its connections and files: a long run would run out of descriptors)


@example_settings(EXAMPLES, keep=False)
@given(cfg=config, steps=st.lists(step, min_size=6, max_size=24))
def test_an_agent_under_a_policy_changes_main_only_by_an_allowed_merge(cfg, steps):
    run_steps(cfg, steps, over_stdio=False)


@example_settings(STDIO_EXAMPLES, keep=False)
@given(cfg=config, steps=st.lists(step, min_size=6, max_size=24))
@example(  # (found by this test: the server's agent read the mode as its pager last saw it, so
    # a person's `mode production` didn't bind its next restore of main)
    cfg={
        "rules": None,
        "production": False,
        "check": None,
        "scope": None,
        "rights": {"merge", "merge_own", "restore", "write_main"},
    },
    steps=[
        ("write", 0, "update items set qty = qty + 1 where id = 1"),
        ("approve", 0),
        ("find", 0, {}),
        ("mode", "production"),
        ("fork", "owner", 0, None),
        ("on_main", 0),
    ],
)
def test_the_same_over_mcp_stdio(cfg, steps):
    run_steps(cfg, steps, over_stdio=True)
