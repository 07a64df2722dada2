"""Safe mode holds, tried as a hostile agent would, through the real `chronos mcp` process.

One test per escape the issue found (AS OF writes, a `_chronos_`-named trigger, a query that
never ends, a result too big to hold, a transaction left open, ANALYZE through a pragma
function, the file replaced under the server, faults answered as internal errors): each is
refused or bounded with a clear error, nothing changes (the whole file's dump is compared),
and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from helpers import file_dump, run_cli
from mcp_lines import Server, tool_error

import chronos_lite

LIMIT_MS = 1500  # the servers' time limit here (the default is 30 s)


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Path]:
    """orders (1200 rows), users, and a world 'outside' a person forked and changed."""
    folder = tmp_path / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("create table orders(id integer primary key, qty int, user_id int)")
        db.sql("insert into users(name) values ('Ada'), ('Bo')")
        db.sql(
            "with recursive n(i) as (select 1 union all select i + 1 from n where i < 1200) "
            "insert into orders(qty, user_id) select i, 1 + i % 2 from n"
        )
        db.fork("outside", meta={"by": "a person"})
        db.sql("update users set name = 'Bo (outside)' where id = 2", branch="outside")
    yield folder


@pytest.fixture
def serve(shop: Path) -> Iterator:
    started: list[Server] = []

    def start(*flags: str) -> Server:
        server = Server(shop, "--max-query-ms", str(LIMIT_MS), *flags)
        server.initialize()
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def refused(server: Server, args: dict, code: str, *words: str) -> str:
    result = server.call("sql", args)
    text = tool_error(result)
    assert result["structuredContent"]["code"] == code, (args, text)
    for word in words:
        assert word in text, (args, text)
    return text


def ok(server: Server, tool: str, args: dict) -> dict:
    result = server.call(tool, args)
    assert result["isError"] is False, (tool, args, result["content"][0]["text"])
    return result


# --- 1. a write that holds AS OF ---------------------------------------------------------------


def test_writes_holding_as_of_are_refused_off_the_agents_own_worlds(serve, shop):
    server = serve()
    ok(server, "fork", {"name": "mine"})
    time.sleep(0.05)
    then = datetime.fromtimestamp(time.time()).isoformat(sep=" ")
    before = file_dump(shop)
    writes = [
        f"delete from orders where id in (select id from orders as of '{then}')",
        f"update orders set qty = 0 where id in (select id from orders as of '{then}')",
        f"insert into orders(qty) select qty from orders as of '{then}'",
        f"create table copy as select * from orders as of '{then}'",
        f"with x as (select id from users as of '{then}') delete from users where id in x",
        f"select 1; delete from orders where id in (select id from orders as of '{then}')",
        f"replace into users select * from users as of '{then}'",
    ]
    for sql in writes:
        for where in ({}, {"branch": "main"}, {"branch": "outside"}):
            refused(server, {"sql": sql, **where}, "42501", "safe mode")
    refused(server, {"sql": writes[0], "branch": f"main@{then}"}, "42501", "can only be read")
    assert file_dump(shop) == before
    # reads with AS OF work everywhere, and the same write works on the agent's own world
    result = ok(server, "sql", {"sql": f"select count(*) from orders as of '{then}'"})
    assert result["structuredContent"]["results"][0]["rows"] == [[1200]]
    result = ok(server, "sql", {"sql": writes[0], "branch": "mine"})
    assert result["content"][0]["text"] == "DELETE 1200"
    with chronos_lite.open(shop) as db:
        assert db.query("select count(*) as n from orders") == [{"n": 1200}]
        assert db.query("select count(*) as n from orders", branch="outside") == [{"n": 1200}]
        assert db.query("select count(*) as n from orders", branch="mine") == [{"n": 0}]
    server.ping()


# --- 2. triggers named like chronos' own ---------------------------------------------------------


def test_user_triggers_are_never_trusted_and_chronos_names_are_refused(serve, shop):
    server = serve()
    ok(server, "fork", {"name": "mine"})
    # (the world's own users: its view and triggers, which the attacks aim at)
    ok(server, "sql", {"sql": "update users set name = name where id = 1", "branch": "mine"})
    before = file_dump(shop)
    attacks = [
        # the issue's: a TEMP trigger named _chronos_... writing main and chronos' tables
        "create temp table t(x); create temp trigger _chronos_x after insert on t begin "
        "delete from main.orders; update main.users set name = 'PWNED'; end; "
        "insert into t values (1)",
        "create temp table t(x); create temp trigger _chronos_x after insert on t begin "
        "delete from _chronos_events; end; insert into t values (1)",
        "create temp trigger _CHRONOS_y after insert on users begin select 1; end",
        "create temp view _chronos_v as select 1",
        "create temp table _chronos_mine(x)",
        # a trigger of any other name is checked like the statement that fires it
        "create temp table t(x); create temp trigger x after insert on t begin "
        "delete from main.orders; end; insert into t values (1)",
        "create temp table t(x); create temp trigger x after insert on t begin "
        "delete from _chronos_events; end; insert into t values (1)",
        "create temp table t(x); create temp trigger x after insert on t begin "
        "update main._chronos_worlds set owner = 'me'; end; insert into t values (1)",
        # a trigger on chronos' own tables, which chronos itself writes unchecked
        "create temp trigger x after insert on main._chronos_events begin select 1; end",
        # chronos' own objects on the connection: its views and triggers, its context
        # (users: the world's native copy, a TEMP table with trusted triggers: world.native)
        "drop table temp.users",
        "alter table temp.users add column x",
        "create unique index temp.u on users(name)",
        "drop trigger temp._chronos_w_nu_1",
        "drop trigger _chronos_w_nu_1",
        "create temp trigger x after insert on users begin delete from main.orders; end; "
        "insert into users(name) values ('x')",
        "update temp._chronos_ctx set seq = 0",
        "delete from main._chronos_events",
        "update sqlite_sequence set seq = 0",
        "update temp.sqlite_sequence set seq = 0",
        "update main.sqlite_sequence set seq = 0",
    ]
    for sql in attacks:
        text = refused(server, {"sql": sql, "branch": "mine"}, "42501")
        assert "safe mode" not in text or "settings" in text, (sql, text)
    assert file_dump(shop) == before
    with chronos_lite.open(shop) as db:
        assert db.query("select name from users order by id") == [
            {"name": "Ada"},
            {"name": "Bo"},
        ]
        assert [e["by"] for e in db.call("history", branch="main").data["events"]][0].startswith(
            "safe:"
        )
    # the agent's own world still works as a copy: its rows through its views
    ok(server, "sql", {"sql": "update users set name = 'Ada W' where id = 1", "branch": "mine"})
    server.ping()


# --- 3. time, cancellation and the write lock ---------------------------------------------------

FOREVER = "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"


def test_a_query_that_never_ends_stops_at_the_time_limit(serve, shop):
    server = serve()
    started = time.monotonic()
    text = refused(server, {"sql": FOREVER}, "57014", f"{LIMIT_MS:,} ms", "--max-query-ms")
    took = time.monotonic() - started
    assert LIMIT_MS / 1000 <= took < LIMIT_MS / 1000 + 10, took
    assert "statement timeout" in text
    result = ok(server, "sql", {"sql": "select count(*) from orders"})
    assert result["structuredContent"]["results"][0]["rows"] == [[1200]]


def test_notifications_cancelled_stops_the_call_it_names(shop):
    server = Server(shop, "--max-query-ms", "0")  # no limit: only the cancel stops it
    try:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "tools/call",
                "params": {"name": "sql", "arguments": {"sql": FOREVER}},
            }
        )
        time.sleep(0.3)  # it runs
        started = time.monotonic()
        server.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}
        )
        server.ping()  # answered at once, and nothing for the cancelled request before it
        assert time.monotonic() - started < 5
        # a request cancelled before it starts is skipped; the one after it is answered
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 77,
                "method": "tools/call",
                "params": {"name": "sql", "arguments": {"sql": FOREVER}},
            }
        )
        server.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77}}
        )
        server.ping()
        assert not server.pending()
        # a cancel for what is finished, or unknown, changes nothing
        server.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        result = server.call("sql", {"sql": "select 1 as one"})
        assert result["structuredContent"]["results"][0]["rows"] == [[1]]
        assert server.close() == 0
    finally:
        server.kill()


def test_a_spinning_call_on_the_agents_world_holds_the_write_lock_only_to_its_limit(serve, shop):
    server = serve()
    ok(server, "fork", {"name": "mine"})
    spin = f"update users set name = 'S'; {FOREVER}"
    server.send(
        {
            "jsonrpc": "2.0",
            "id": "spin",
            "method": "tools/call",
            "params": {"name": "sql", "arguments": {"sql": spin, "branch": "mine"}},
        }
    )
    time.sleep(0.3)  # it holds the write lock now
    started = time.monotonic()
    person = run_cli(shop, "sql", "update users set name = 'Ada P' where id = 1")
    assert person.stdout.strip() == "UPDATE 1"
    assert time.monotonic() - started < LIMIT_MS / 1000 + 10
    reply = server.read()
    assert reply["id"] == "spin" and "statement timeout" in tool_error(reply["result"])
    with chronos_lite.open(shop) as db:
        assert db.query("select name from users where id = 1") == [{"name": "Ada P"}]
        # the world's update rolled back with the call; it sees main as of its fork
        assert db.query("select name from users where id = 1", branch="mine") == [{"name": "Ada"}]


def test_a_writer_that_cant_get_the_lock_is_told_who_holds_it(serve, shop):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('begin immediate'); print('held', flush=True); time.sleep(60)",
            str(shop / "chronos.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        server = serve("--allow-merge")
        before = file_dump(shop)
        text = refused(
            server, {"sql": "update users set name = 'x'"}, "55P03", "the database is busy"
        )
        assert f"process {holder.pid}" in text and "try again" in text
        text = tool_error(server.call("fork", {"name": "w"}))
        assert "the database is busy" in text
    finally:
        holder.kill()
        holder.wait()
    assert file_dump(shop) == before
    ok(server, "sql", {"sql": "update users set name = 'x' where id = 1"})


# --- 4. results too big to hold -------------------------------------------------------------


def test_a_result_has_a_budget_in_characters_and_the_server_stays_small(serve, shop):
    with chronos_lite.open(shop) as db:
        db.sql("create table blobs(id integer primary key, b blob, t text)")
        db.sql("insert into blobs values (1, randomblob(300000), 'short')")
    server = serve()
    result = ok(server, "get", {"table": "blobs", "id": "1"})
    assert len(json.dumps(result)) < 60_000 and result["structuredContent"]["cut"] == ["b"]
    assert "are only their first" in result["content"][0]["text"]
    assert result["structuredContent"]["row"]["t"] == "short"
    for sql in [
        "select id, randomblob(200000) from orders",
        "select id, hex(randomblob(2000)) as h from orders",
        "select group_concat(name, '') from users",
    ]:
        result = ok(server, "sql", {"sql": sql})
        line = json.dumps(result)
        assert len(line) < 60_000, (sql, len(line))  # text and data each within 24,000
    result = ok(server, "sql", {"sql": "select id, randomblob(200000) as b from orders"})
    text = result["content"][0]["text"]
    assert "this row alone is larger than a reply holds" in text and "substr(b" in text
    assert result["structuredContent"]["results"][0]["cut"] == ["b"]
    result = ok(server, "sql", {"sql": "select id, hex(randomblob(200)) as h from orders"})
    shown = len(result["structuredContent"]["results"][0]["rows"])
    assert 10 < shown < 1000
    assert f"page with LIMIT {shown} OFFSET {shown}" in result["content"][0]["text"]
    # past SQLite's memory limit: a clear error, and the server goes on
    text = refused(server, {"sql": "select zeroblob(900000000)"}, "53200", "--max-memory-mb")
    # (an aggregate's: a few big rows, so that memory runs out long before the time limit; an
    # aggregate still going when the time limit stops it is stopped by the time limit, 57014)
    for sql in ["select length(group_concat(zeroblob(100000000))) from orders where id < 4"]:
        refused(server, {"sql": sql}, "53200")
    status = Path(f"/proc/{server.proc.pid}/status")
    if status.exists():
        peak_kb = int(status.read_text().split("VmHWM:")[1].split()[0])
        assert peak_kb < 700 * 1024, peak_kb
    server.ping()
    assert "memory" in text


# --- 5. a transaction left open -------------------------------------------------------------


def test_analyze_after_a_write_leaves_no_transaction_open(serve, shop):
    server = serve("--allow-merge")
    result = ok(server, "sql", {"sql": "insert into users(name) values ('Cy'); analyze"})
    assert result["content"][0]["text"] == "INSERT 0 1\nANALYZE"
    ok(server, "sql", {"sql": "insert into users(name) values ('Di'); analyze; select 1"})
    ok(server, "sql", {"sql": "vacuum"})
    text = tool_error(server.call("sql", {"sql": "insert into users(name) values ('E'); vacuum"}))
    assert "VACUUM runs outside any transaction" in text
    # another process writes at once: nothing holds the file
    app = sqlite3.connect(shop / "chronos.db", timeout=1)
    app.execute("insert into users(name) values ('App')")
    app.commit()
    app.close()
    result = ok(server, "sql", {"sql": "select name from users order by id"})
    names = [r[0] for r in result["structuredContent"]["results"][0]["rows"]]
    assert names == ["Ada", "Bo", "Cy", "Di", "App"]
    run_cli(shop, "sql", "insert into users(name) values ('Fy'); analyze")
    run_cli(shop, "sql", "insert into users(name) values ('Gu')")


# --- 6. ANALYZE through a pragma function ---------------------------------------------------


def test_table_valued_pragmas_that_change_anything_are_refused(serve, shop):
    server = serve()
    ok(server, "fork", {"name": "mine"})
    before = file_dump(shop)
    for sql in [
        "select * from pragma_optimize(0x10002)",
        "select * from pragma_optimize",
        "select * from main.pragma_optimize(-1)",
        "select count(*) from orders where id in (select 1 from pragma_optimize)",
        "pragma optimize",
        "pragma wal_checkpoint(truncate)",
        "pragma incremental_vacuum",
        "pragma writable_schema = 1",
        "analyze",
        "vacuum",
        "reindex",
        "attach ':memory:' as x",
    ]:
        for where in ({}, {"branch": "mine"}, {"branch": "outside"}):
            refused(server, {"sql": sql, **where}, "42501", "safe mode", "settings")
    for sql in [  # settings SQLite has no table-valued form of: its own error
        "select * from pragma_wal_checkpoint('truncate')",
        "select * from pragma_user_version(7)",
    ]:
        tool_error(server.call("sql", {"sql": sql}))
    assert file_dump(shop) == before
    with chronos_lite.open(shop) as db:
        assert not db.query("select name from sqlite_master where name like 'sqlite_stat%'")
    result = ok(server, "sql", {"sql": "select name from pragma_table_info('users')"})
    assert result["structuredContent"]["results"][0]["rows"] == [["id"], ["name"]]
    ok(server, "sql", {"sql": "select * from pragma_integrity_check"})


# --- 7. the file deleted or replaced under the server --------------------------------------


@pytest.mark.parametrize("how", ["deleted", "replaced", "overwritten"])
def test_a_file_deleted_or_replaced_under_the_server_is_refused(serve, shop, tmp_path, how):
    server = serve("--allow-merge")
    ok(server, "sql", {"sql": "insert into users(name) values ('Cy')"})
    copy = tmp_path / "copy.db"
    shutil.copy(shop / "chronos.db", copy)
    path = shop / "chronos.db"
    if how == "deleted":
        path.unlink()
    elif how == "replaced":
        os.replace(copy, path)
    else:  # in place: the same inode, no longer a database
        with open(path, "r+b") as f:
            f.write(b"not a database at all, not even close.")
    for tool, args in [
        ("sql", {"sql": "insert into users(name) values ('lost?')"}),
        ("put", {"table": "users", "id": "9", "record": {"name": "lost?"}}),
        ("fork", {"name": "w"}),
        ("get", {"table": "users", "id": "1"}),
    ]:
        result = server.call(tool, args)
        text = tool_error(result)
        code = result["structuredContent"]["code"]
        assert code == ("XX002" if how == "overwritten" else "58P01"), text
        assert ("no longer a SQLite database" if how == "overwritten" else how) in text
    server.ping()


# --- 8. faults and bad characters -------------------------------------------------------------


def test_bad_characters_are_refused_as_22021(serve, shop):
    server = serve()
    before = file_dump(shop)
    lines = [
        ("sql", {"sql": "select 1\u0000"}),
        ("sql", {"sql": "select '\ud800'"}),
        ("sql", {"sql": "select $1", "params": ["\udfff"]}),
        ("get", {"table": "users", "id": "1", "branch": "ma\ud800in"}),
        ("get", {"table": "us\u0000ers", "id": "1"}),
        ("get", {"table": "users", "id": "1\u0000"}),
        ("describe", {"table": "\ud83d"}),
        ("fork", {"name": "w\u0000"}),
        ("fork", {"name": "w", "meta": {"\ud800": 1}}),
        ("diff", {"branch": "outside\ud800"}),
    ]
    for tool, args in lines:
        result = server.call(tool, args)
        text = tool_error(result)
        assert result["structuredContent"]["code"] == "22021", (tool, args, text)
        assert "NUL" in text or "surrogate" in text
    # a NUL is a character of a value: as a parameter it is stored and read back
    result = ok(
        server, "sql", {"sql": "select length(cast($1 as blob)) as n", "params": ["a\u0000b"]}
    )
    assert result["structuredContent"]["results"][0]["rows"] == [[3]]
    assert file_dump(shop) == before


def test_faults_of_the_file_get_their_own_codes(serve, shop):
    server = serve("--allow-merge")
    # disk full: the file may grow no further (SQLite's SQLITE_FULL, as on a full disk)
    pages = json.dumps(ok(server, "sql", {"sql": "pragma page_count"})["structuredContent"])
    count = json.loads(pages)["results"][0]["rows"][0][0]
    ok(server, "sql", {"sql": f"pragma max_page_count = {count}"})
    before = file_dump(shop)
    result = server.call(
        "sql", {"sql": "insert into users(name) select hex(randomblob(5000)) from orders"}
    )
    text = tool_error(result)
    assert result["structuredContent"]["code"] == "53100" and "disk is full" in text, text
    assert file_dump(shop) == before
    ok(server, "sql", {"sql": "pragma max_page_count = 1073741823"})
    ok(server, "sql", {"sql": "insert into users(name) values ('after')"})


def test_a_corrupt_page_is_told_as_one_and_the_server_serves_on(shop, tmp_path):
    """A damaged page of the file (garbage written over the orders table's root page)."""
    app = sqlite3.connect(shop / "chronos.db")
    app.execute("pragma wal_checkpoint(truncate)")  # every page in the file itself
    root, size = app.execute(
        "select rootpage, (select page_size from pragma_page_size) from sqlite_master "
        "where name = 'orders'"
    ).fetchone()
    app.close()
    with open(shop / "chronos.db", "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\x0d" + os.urandom(size - 1))  # (a leaf page's type, then garbage)
    server = Server(shop)
    try:
        server.initialize()
        result = server.call("sql", {"sql": "select sum(qty) from orders"})
        text = tool_error(result)
        assert result["structuredContent"]["code"] == "XX001", text
        assert "is corrupt" in text and "pragma integrity_check" in text
        result = ok(server, "sql", {"sql": "select name from users order by id"})
        assert result["structuredContent"]["results"][0]["rows"] == [["Ada"], ["Bo"]]
        server.ping()
    finally:
        server.kill()
