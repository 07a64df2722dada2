"""A hostile agent, generated: hypothesis over the MCP stdio protocol in safe mode, and as a
named agent with read, fork and write_own (``--agent``).

One real ``chronos mcp`` process (safe mode, the default; then ``--agent coder``) is sent
sequences of tool calls built from a grammar of the known attacks: writes holding AS OF,
triggers named like chronos' own, writes to main's and chronos' tables by qualified name,
settings in every spelling (PRAGMAs, their table-valued functions, ATTACH, VACUUM, ANALYZE),
schema statements, chronos' world statements, queries that never end, huge values, bad
characters, and every tool with branch names of main, a stranger's world, its own world, a
moment, and nonsense. After every sequence: the server answers, no reply was an internal error,
main and the stranger's world are exactly as they were, and the file passes SQLite's integrity
check.

CI runs a bounded number of sequences; a longer run:

    python3 dev.py fuzz 2000      # CHRONOS_FUZZ_EXAMPLES=2000 and this file
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp_lines import INTERNAL, HttpServer, Server
from strategies import example_settings, examples_from

import chronos_lite
from chronos_lite.storage.governance import reviews

EXAMPLES = examples_from("CHRONOS_FUZZ_EXAMPLES", 40)
LIMIT_MS = 300  # the server's time limit: a spinning query ends quickly

# --- the grammar of attacks ---------------------------------------------------------------------

TABLES = ["users", "orders"]
TARGETS = [
    "users",
    "orders",
    "main.users",
    "main.orders",
    "temp.users",
    "_chronos_events",
    "main._chronos_worlds",
    "_chronos_clock",
    "temp._chronos_ctx",
    "_chronos_o_1",
    "main._chronos_h_1",
    "_chronos_counters",
    "sqlite_sequence",
    "sqlite_master",
]
BRANCHES = ["main", "outside", "mine", "main@-1 seconds", "outside@-1 seconds", "nope"]
WEIRD = ["", " ", "x y", '"; drop table users; --', "ü🙂", "a\u0000b", "\ud800", "%", "*"]

moment = st.sampled_from(["-1 seconds", "-1 hours", "2020-01-01", "tomorrow", "-1e400 s"])
target = st.sampled_from(TARGETS)
table = st.sampled_from(TABLES)
weird = st.sampled_from(WEIRD)
value = st.sampled_from(["1", "'x'", "null", "randomblob(100000)", "zeroblob(900000000)", "$1"])


# find's rankings: words (which build main's text index, chronos' own object), vectors (a
# connection's TEMP index), both, and a text that reads as FTS5 syntax or SQL
RANKINGS = [
    {},
    {"text": "a x"},
    {"text": "' OR 1=1; DROP TABLE users --"},
    {"text": "NEAR(a b) * OR -x"},
    {"vector": [1, 0], "vector_field": "name"},
    {"text": "a", "vector": [1.5, 2], "vector_field": "id"},
]


@st.composite
def write(draw) -> str:
    t = draw(target)
    kind = draw(st.sampled_from(["delete", "update", "insert", "replace", "insert-select"]))
    if kind == "delete":
        return f"delete from {t}" + draw(st.sampled_from(["", " where rowid = 1"]))
    if kind == "update":
        return f"update {t} set rowid = rowid"
    if kind == "insert":
        return f"insert into {t} default values"
    if kind == "replace":
        return f"replace into {t} select * from {draw(table)}"
    return f"insert into {t} select * from {draw(table)} as of '{draw(moment)}'"


@st.composite
def as_of_write(draw) -> str:
    t, m = draw(table), draw(moment)
    return draw(
        st.sampled_from(
            [
                f"delete from {t} where id in (select id from {t} as of '{m}')",
                f"update {t} set id = id where id in (select id from {t} as of '{m}')",
                f"create table copy as select * from {t} as of '{m}'",
                f"with x as (select id from {t} as of '{m}') delete from {t} where id in x",
            ]
        )
    )


@st.composite
def trigger(draw) -> str:
    name = draw(st.sampled_from(["_chronos_x", "_CHRONOS_T1_AI", "_chronos_w_ii_1", "mine"]))
    event = draw(st.sampled_from(["after insert on t", "instead of insert on users"]))
    body = draw(write())
    return f"create temp table t(x); create temp trigger {name} {event} begin {body}; end; " + (
        "insert into t values (1)" if "on t" in event else "insert into users(name) values (1)"
    )


SETTINGS = [
    "pragma foreign_keys = off",
    "pragma writable_schema = 1",
    "pragma journal_mode = delete",
    "pragma user_version = 7",
    "pragma optimize",
    "pragma wal_checkpoint(truncate)",
    "select * from pragma_optimize(0x10002)",
    "select * from main.pragma_optimize",
    "attach ':memory:' as x",
    "detach main",
    "vacuum",
    "vacuum into '/tmp/chronos-fuzz-copy.db'",
    "analyze",
    "reindex",
    "select load_extension('x')",
    "create virtual table temp.v using fts5(a)",
]
SCHEMA = [
    "create table t(a)",
    "create table _chronos_mine(a)",
    "create index i on users(name)",
    "create view v as select 1",
    "create trigger tr after insert on users begin select 1; end",
    "drop table users",
    "drop view users",
    "drop trigger _chronos_w_ii_1",
    "drop table _chronos_events",
    "alter table users rename to _chronos_users",
    "alter table users add column extra int",
]
CHRONOS = [
    "FORK WORLD f",
    "MERGE WORLD outside",
    "MERGE WORLD mine",
    "MERGE WORLD outside DRY RUN",
    "DISCARD WORLD outside",
    "USE WORLD outside",
    "REBASE WORLD outside",
    "RESTORE WORLD main AT '-1 seconds'",
    "UNDO AGENT owner SINCE '-1 hours'",
    "UNDO MERGE outside",
    "CREATE AGENT evil WITH (rights = 'admin')",
    "ALTER AGENT bot SET (rights = 'admin')",
    "DROP AGENT bot",
    "SHOW AGENTS",
    "SHOW AUDIT",
    "CREATE MERGE CHECK k AS select 1",
    "CREATE OR REPLACE MERGE CHECK keep AS delete from users",
    "DROP MERGE CHECK keep",
    "SHOW MERGE CHECKS",
    "CREATE MERGE POLICY p WITH (max_rows = 1)",
    "ALTER MERGE POLICY small SET (max_rows = null)",
    "ALTER AGENT coder SET (policy = null)",
    "DROP MERGE POLICY small CASCADE",
    "SHOW MERGE POLICIES",
    "MARK READER r READS (users.name) CRITICAL",
    "DROP READER keep",
    "SHOW READERS",
    "DIFF outside READERS",
    "SHOW REVIEWS",
    "CHECK READS outside",
    "REVIEW WORLD outside APPROVE REASON 'fine'",
    "SET MODE development",
    "SHOW WORLDS",
    "SHOW HISTORY main",
    "DIFF outside",
]
SPINS = [
    "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n",
    "select count(*) from orders a, orders b, orders c",
    "select group_concat(randomblob(1000000)) from orders",
    "select * from orders, (select randomblob(200000))",
]
READS = [
    "select * from users",
    "select rowid, * from orders limit 3",
    "select 1",
    "explain select 1",
]

statement = st.one_of(
    write(),
    as_of_write(),
    trigger(),
    st.sampled_from(SETTINGS),
    st.sampled_from(SCHEMA),
    st.sampled_from(CHRONOS),
    st.sampled_from(SPINS),
    st.sampled_from(READS),
    weird,
)


@st.composite
def sql_text(draw) -> str:
    parts = draw(st.lists(statement, min_size=1, max_size=3))
    text = "; ".join(parts)
    wrap = draw(st.sampled_from(["", "begin", "savepoint s"]))
    return f"{wrap}; {text}; commit" if wrap == "begin" else text


# its own world most often: there its writes run, and the guard has most to check
branch = st.one_of(st.just("mine"), st.sampled_from(BRANCHES), weird)
name_or_id = st.one_of(
    st.sampled_from(["1", "2", "999", "1/2", "mine", "outside", "[1]", "[2,3]", '["1"]', "[1"]),
    st.sampled_from(['[{"$blob":"00"}]', '[{"$blob":"zz"}]', "[null]", "[Infinity]"]),
    weird,
)
record = st.dictionaries(
    st.sampled_from(["name", "id", "qty", "_chronos_world", "rowid", "x y", "\ud800"]),
    st.sampled_from([1, "x", None, "\u0000", 2**63 - 1, 1.5, "Infinity", {"$blob": "00"}]),
    max_size=3,
)
# rows as only_keys and rows name them: table/id, a table as a JSON string, nonsense
row_key = st.one_of(
    st.sampled_from(["users/1", "orders/201", '"users"/2', "main.users/1", "_chronos_o_1/1"]),
    st.sampled_from(['"users/1', "users/[1", "orders/[201]", "users", "users/x y"]),
    weird,
)


policy_rules = st.dictionaries(
    st.sampled_from(["max_rows", "max_deletes", "tables", "review_columns", "reviewer", "bogus"]),
    st.sampled_from([0, -1, None, "users", ["users"], ["users.name"], ["x y"], "coder", True]),
    max_size=3,
)


@st.composite
def tool_call(draw) -> tuple[str, dict]:
    tool = draw(
        st.sampled_from(
            [
                "sql", "sql", "sql", "sql", "describe", "find", "get", "put", "delete", "fork",
                "set_meta", "branches", "diff", "history", "merge_preview", "rebase",
                "checkpoint", "rollback", "discard", "merge", "restore", "undo_merge",
                "merge_checks", "set_merge_check", "drop_merge_check",
                "merge_policies", "check_merge_policy", "set_merge_policy",
                "drop_merge_policy", "reviews", "review", "check_reads",
                "simulate", "replay",
            ]
        )
    )  # fmt: skip
    b = draw(branch)
    if tool == "sql":
        args: dict = {"sql": draw(sql_text())}
        if draw(st.booleans()):
            args["branch"] = b
        if draw(st.booleans()):
            args["params"] = [draw(st.sampled_from([1, "x", "\u0000", None, {"a": 1}]))]
        return tool, args
    if tool == "find":
        return tool, {
            "table": draw(st.sampled_from([*TABLES, *TARGETS[4:]])),
            "where": draw(st.sampled_from([{}, {"id": 1}, {"name": "x"}, {"rowid": 1}])),
            "branch": b,
            **draw(st.sampled_from(RANKINGS)),
        }
    if tool in ("get", "delete"):
        return tool, {
            "table": draw(st.sampled_from([*TABLES, *TARGETS[4:]])),
            "id": draw(name_or_id),
            "branch": b,
        }
    if tool == "put":
        return tool, {
            "table": draw(table),
            "id": draw(name_or_id),
            "record": draw(record),
            "branch": b,
        }
    if tool == "fork":
        return tool, {"name": draw(st.sampled_from(["f1", "f2", "outside", "main"])), "from": b}
    if tool == "simulate":  # (its script as hostile as sql's; its worlds the session's own)
        return tool, {
            "worlds": draw(st.sampled_from([1, 2, 3, 0])),
            "prefix": draw(st.sampled_from(["s", "mine", "outside", "x y", "a@b"])),
            "script": draw(sql_text()),
            "score": draw(
                st.sampled_from(
                    [
                        "select count(*) from users",
                        "select sum(qty) from orders where id < $1 + 10",
                        "delete from users returning 1",
                        "select * from users",
                        "attach ':memory:' as x",
                        "MERGE WORLD outside",
                    ]
                )
            ),
            "from": b,
            "keep": draw(st.sampled_from([0, 1, "all", -1])),
            "threads": draw(st.sampled_from([0, 1, 2])),
            "seed": draw(st.sampled_from([0, 7])),
        }
    if tool == "replay":
        args = {"world": draw(st.sampled_from(["s_0", "mine_1", "outside", "mine", "main"]))}
        if draw(st.booleans()):
            args["as"] = draw(st.sampled_from(["again", "outside", "mine", "x y"]))
        return tool, args
    if tool == "set_meta":
        return tool, {"branch": b, "meta": draw(record)}
    if tool in ("checkpoint", "rollback"):
        key = "name" if tool == "checkpoint" else "checkpoint"
        return tool, {"branch": b, key: draw(st.sampled_from(["cp", "x y", ""]))}
    if tool == "discard":
        return tool, {"branch": b, "cascade": draw(st.booleans())}
    if tool == "restore":
        return tool, {"branch": b, "at": draw(moment)}
    if tool == "set_merge_check":
        args = {"name": draw(st.sampled_from(["keep", "k2", "x y"])), "query": draw(statement)}
        if draw(st.booleans()):
            args["tables"] = draw(st.lists(st.sampled_from([*TABLES, "x y", ""]), max_size=2))
        return tool, args
    if tool == "drop_merge_check":
        return tool, {"name": draw(st.sampled_from(["keep", "nope", "x y"]))}
    if tool in ("merge_checks", "merge_policies", "reviews"):
        return tool, {}
    if tool in ("check_merge_policy", "set_merge_policy"):
        args = {"name": draw(st.sampled_from(["small", "p2", "x y"]))}
        if tool == "check_merge_policy":
            args["branch"] = b
        if draw(st.booleans()):
            args["rules"] = draw(policy_rules)
        if tool == "set_merge_policy" and draw(st.booleans()):
            args["agents"] = [draw(st.sampled_from(["coder", "bot", "x y"]))]
        return tool, args
    if tool == "drop_merge_policy":
        args = {"name": draw(st.sampled_from(["small", "nope"]))}
        return tool, {**args, "release_agents": draw(st.booleans())}
    if tool == "review":
        verdict = draw(st.sampled_from(["approve", "reject", "pass", "maybe"]))
        return tool, {"branch": b, "verdict": verdict, "reason": draw(weird)}
    if tool == "check_reads":
        return tool, {"branch": b}
    if tool in ("describe", "branches"):
        return tool, ({"branch": b} if tool == "describe" else {})
    if tool in ("merge_preview", "merge", "rebase") and draw(st.booleans()):
        keys = draw(st.lists(row_key, min_size=1, max_size=2))
        choice = draw(st.sampled_from(["ours", "theirs", "delete", {"qty": "Infinity"}]))
        args = {"branch": b, "rows": {k: choice for k in keys}}
        if tool != "rebase":
            args["only_keys"] = keys
        return tool, args
    return tool, {"branch": b}  # diff, history, merge_preview, rebase, merge, undo_merge


# --- the database and its untouchables ----------------------------------------------------------


# The columns of chronos' shadow tables as first read: a column the agent's own world adds is
# kept in them too (a world's schema change), which changes nothing of main's or another's.
_SHADOW_COLUMNS: dict[tuple[Path, str], str] = {}


def _columns(conn: sqlite3.Connection, folder: Path, table: str) -> str:
    key = (folder, table)
    if key not in _SHADOW_COLUMNS:
        names = [r[1] for r in conn.execute(f"pragma table_info({table})")]
        _SHADOW_COLUMNS[key] = ", ".join(f'"{c}"' for c in names)
    return _SHADOW_COLUMNS[key]


def untouchable(folder: Path) -> dict:
    """Main (its tables, their history, its schema) and the stranger's world (its rows, its
    record, its schema changes), read outside chronos."""
    conn = sqlite3.connect(f"file:{folder / 'chronos.db'}?mode=ro", uri=True)
    try:
        out: dict = {}
        for t in TABLES:
            out[t] = conn.execute(f"select * from {t} order by rowid").fetchall()
        ids = dict(conn.execute("select name, id from _chronos_tables"))
        for t in TABLES:
            n = ids[t]
            columns = _columns(conn, folder, f"_chronos_h_{n}")
            out[f"history {t}"] = conn.execute(f"select {columns} from _chronos_h_{n}").fetchall()
        world = conn.execute(
            "select id, wid, name, parent, base, fork_seq, owner, meta, version, state "
            "from _chronos_worlds where name = 'outside'"
        ).fetchall()
        out["outside"] = world
        wid = world[0][0]
        for t in TABLES:
            n = ids[t]
            columns = _columns(conn, folder, f"_chronos_o_{n}")
            out[f"outside {t}"] = conn.execute(
                f"select {columns} from _chronos_o_{n} where _chronos_world in (?, ?) "
                f"order by 1, 2, 3",
                (wid, -wid),
            ).fetchall()
            columns = _columns(conn, folder, f"_chronos_wh_{n}")
            out[f"outside history {t}"] = conn.execute(
                f"select {columns} from _chronos_wh_{n} where _chronos_world = ?", (wid,)
            ).fetchall()
        out["schema"] = conn.execute(
            "select type, name, sql from sqlite_master where name not like '\\_chronos\\_%' "
            "escape '\\' and name not like 'sqlite\\_%' escape '\\' order by name"
        ).fetchall()
        out["outside schema"] = conn.execute(
            "select * from _chronos_schema where world = ?", (wid,)
        ).fetchall()
        out["agents"] = conn.execute("select * from _chronos_agents order by name").fetchall()
        out["merge checks"] = conn.execute("select * from _chronos_merge_checks").fetchall()
        for table in (
            "_chronos_merge_policies",
            "_chronos_agent_policies",
            "_chronos_reviews",
            "_chronos_readers",
        ):
            out[table] = conn.execute(f"select * from {table}").fetchall()
        out["mode"] = conn.execute("select * from _chronos_meta where key = 'mode'").fetchall()
        assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
        return out
    finally:
        conn.close()


# Safe mode, and a named agent with a coding agent's usual rights (the spec's production set):
# both may change only their own worlds. Over stdio (chronos mcp), joined to a process that has
# the folder open as its owner (a chronos mcp --allow-merge hosting it: its socket gives the
# joined session none of its rights), and over HTTP (chronos serve: the agent by its token, and
# under --safe the guest, without one).
MODES = {
    "safe": (),
    "agent": ("--agent", "coder"),
    "joined safe": ("joined",),
    "joined agent": ("joined", "--agent", "coder"),
    "http agent": ("http",),
    "http guest": ("http", "--safe"),
}


@pytest.fixture(scope="module", params=list(MODES))
def agent(tmp_path_factory, request) -> Iterator[tuple[Server | HttpServer, Path, dict]]:
    folder = tmp_path_factory.mktemp("fuzz") / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key autoincrement, name text unique)")
        db.sql("create table orders(id integer primary key, qty int check (qty >= 0))")
        db.sql("insert into users(name) values ('Ada'), ('Bo')")
        db.sql(
            "with recursive n(i) as (select 1 union all select i + 1 from n where i < 200) "
            "insert into orders(qty) select i from n"
        )
        db.fork("outside", meta={"by": "a person"})
        db.sql("update users set name = 'Bo (outside)' where id = 2", branch="outside")
        db.sql("insert into orders(qty) values (7)", branch="outside")
        db.call("agent", action="create", name="bot", rights=["read"])
        coder = db.call(
            "agent", action="create", name="coder", rights=["read", "fork", "write_own"]
        ).data["token"]
        db.call("set_merge_check", name="keep", query="select id from users where name = ''")
        db.call("mark_reader", name="keep", reads=["users.name"], critical=True)
        db.call("set_merge_policy", name="small", rules={"max_rows": 0}, agents=["bot"])
        with db.database.write(
            db.database.main.conn
        ) as conn:  # (outside waits for a person: no reviewer)
            reviews.queue(
                conn, db.database.world("outside").id, "bot", "small", ["it changes 2 rows"], 2
            )
    flags = ("--max-query-ms", str(LIMIT_MS), "--max-result-chars", "4000")
    mode = MODES[request.param]
    if mode[:1] == ("http",):
        token = coder if request.param == "http agent" else None
        server: Server | HttpServer = HttpServer(folder, *mode[1:], *flags, token=token)
    elif mode[:1] == ("joined",):
        host = Server(folder, "--allow-merge")
        host.initialize()  # (it has the folder open: the next chronos mcp joins it)
        server = Server(folder, *mode[1:], *flags)
    else:
        server = Server(folder, *mode, *flags)
    try:
        server.initialize()
        if mode[:1] == ("joined",):
            assert (folder / "chronos.sock").exists()
        assert server.call("fork", {"name": "mine"})["isError"] is False
        yield server, folder, untouchable(folder)
        assert server.close() == 0
    finally:
        server.kill()
        if mode[:1] == ("joined",):
            host.kill()


@example_settings(EXAMPLES, fixture=True, keep=False)
@given(calls=st.lists(tool_call(), min_size=1, max_size=6))
def test_a_hostile_agent_changes_nothing_it_doesnt_own(agent, calls):
    server, folder, before = agent
    for tool, args in calls:
        result = server.call(tool, args)
        if result.get("isError"):
            structured = result["structuredContent"]
            assert structured["code"] != INTERNAL, (tool, args, structured)
            assert not structured["error"].startswith("internal error"), (tool, args, structured)
    server.ping()
    assert untouchable(folder) == before
