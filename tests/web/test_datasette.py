"""datasette-chronos (chronos_lite/web/datasette_plugin.py): Datasette started as a real
subprocess on adopted folders and asked over HTTP shows the app's tables, not chronos', names
each database after its folder, lists the branches and a world's diff (escaped), and leaves
the file as it was. A few details in process, on Datasette's own test client."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest
from datasette.app import Datasette
from helpers import file_dump, run_cli

import chronos_lite
from chronos_lite.errors import ChronosError
from chronos_lite.opening import open_more
from chronos_lite.operations.registry import REGISTRY, Caller
from chronos_lite.web.datasette_plugin import Folder, chronos_tables, list_branches, refuse_writes

DATASETTE = str(Path(sys.executable).with_name("datasette"))
WAIT = 30  # seconds: Datasette's start, its stop, one request
SCRIPT = "<script>alert(1)</script>"


def app_file(path: Path) -> Path:
    """An app's SQLite file as it was before chronos: lower-case tables, a view."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        create table artists(id integer primary key, name text);
        create table albums(id integer primary key, artist_id integer references artists(id),
                            title text);
        create view titles as select title from albums;
        insert into artists values (1, 'Ada'), (2, 'Bob');
        insert into albums values (1, 1, 'First'), (2, 2, 'Second');
        """
    )
    conn.commit()
    conn.close()
    return path


@dataclass
class Served:
    proc: subprocess.Popen
    port: int
    shop: Path

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def json(self, path: str) -> dict:
        status, body = self.get(path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(proc: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"datasette exited {proc.returncode}: {proc.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"datasette didn't answer on port {port} within {WAIT} s")


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Served]:
    """Two adopted folders, shop (a world, w1, that changed rows; an agent) and crm, served by
    one Datasette."""
    tmp = tmp_path_factory.mktemp("datasette")
    shop, crm = tmp / "shop", tmp / "crm"
    run_cli("init", shop, "--from", app_file(tmp / "shop.sqlite"))
    run_cli("init", crm, "--from", app_file(tmp / "crm.sqlite"))
    run_cli(shop, "fork", "w1")
    run_cli(shop, "sql", "-b", "w1", f"update artists set name = '{SCRIPT}' where id = 1")
    run_cli(shop, "sql", "-b", "w1", "insert into albums(artist_id, title) values (2, 'Third')")
    with chronos_lite.open(shop) as db:
        db.call("agent", action="create", name="bot", rights=["read"])
    port = free_port()
    proc = subprocess.Popen(
        [DATASETTE, "serve", shop / "chronos.db", crm / "chronos.db", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_up(proc, port)
        yield Served(proc, port, shop)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=WAIT)
        proc.stderr.close()


def test_each_database_is_named_after_its_folder(served):
    names = [d["name"] for d in served.json("/-/databases.json")]
    assert names == ["shop", "crm"]


def test_the_table_list_is_the_apps(served):
    before = file_dump(served.shop)
    listed = served.json("/shop.json")
    shown = {t["name"] for t in listed["tables"] if not t["hidden"]}
    assert shown == {"albums", "artists"}
    # (chronos' tables aren't even listed as hidden: their pages are refused)
    assert [t["name"] for t in listed["tables"] if t["name"].startswith("_")] == []
    assert [v["name"] for v in listed["views"]] == ["titles"]
    # a table made after Datasette started: its history tables are hidden as well
    run_cli(served.shop, "sql", "create table genres(id integer primary key, name text)")
    listed = served.json("/shop.json")["tables"]
    assert {t["name"] for t in listed if not t["hidden"]} == {"albums", "artists", "genres"}
    assert [t["name"] for t in listed if t["name"].startswith("_")] == []
    assert before != file_dump(served.shop)  # (the create went through chronos, not Datasette)


def test_chronos_tables_are_refused_not_only_hidden(served):
    status, _ = served.get("/shop/_chronos_agents.json")
    assert status == 403
    status, body = served.get("/shop.json?sql=select+salt,hash+from+_chronos_agents")
    assert status == 400 and "prohibited" in body


def test_the_branches_page_lists_main_and_the_world(served):
    branches = served.json("/-/chronos/shop/branches.json")["branches"]
    by_name = {b["name"]: b for b in branches}
    assert list(by_name) == ["main", "w1"]
    assert by_name["w1"]["parent"] == "main" and by_name["w1"]["changes"] == 2
    assert by_name["w1"]["created"].endswith("UTC")
    status, html = served.get("/-/chronos/shop/branches")
    assert status == 200 and "/-/chronos/shop/diff?branch=w1" in html
    status, html = served.get("/shop")  # the database's action menu links to it
    assert status == 200 and "/-/chronos/shop/branches" in html


def test_the_diff_page_shows_the_changed_rows_escaped(served):
    diff = served.json("/-/chronos/shop/diff.json?branch=w1")
    assert diff["count"] == 2
    changed = {(c["table"], c["kind"]): c for c in diff["changes"]}
    assert changed["artists", "update"]["ours"]["name"] == SCRIPT
    assert changed["albums", "insert"]["ours"]["title"] == "Third"
    status, html = served.get("/-/chronos/shop/diff?branch=w1")
    assert status == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and SCRIPT not in html
    assert "Third" in html


def test_a_missing_world_is_refused_by_chronos(served):
    status, body = served.get("/-/chronos/shop/diff.json?branch=nowhere")
    assert status == 400 and "nowhere" in json.loads(body)["error"]
    status, html = served.get(f"/-/chronos/shop/diff?branch={SCRIPT}")
    assert status == 400 and "<script>alert" not in html
    status, _ = served.get("/-/chronos/elsewhere/branches.json")
    assert status == 404


def test_serving_leaves_the_file_as_it_was(served):
    before = file_dump(served.shop)
    served.json("/shop.json")
    served.json("/-/chronos/shop/branches.json")
    served.json("/-/chronos/shop/diff.json?branch=w1")
    served.get("/-/chronos/shop/diff?branch=w1")
    assert file_dump(served.shop) == before


# --- in process ------------------------------------------------------------------------------


def test_a_plain_sqlite_file_keeps_its_name_and_tables(tmp_path):
    path = app_file(tmp_path / "chronos.db")  # named like chronos' file, but not one
    conn = sqlite3.connect(path)
    conn.execute("create table _chronos_mine(id integer primary key)")  # the app's own, here
    conn.close()

    async def ask() -> tuple[list, list]:
        ds = Datasette([str(path)])
        await ds.invoke_startup()
        names = (await ds.client.get("/-/databases.json")).json()
        tables = (await ds.client.get("/chronos.json")).json()["tables"]
        return [d["name"] for d in names], sorted(t["name"] for t in tables)

    names, tables = asyncio.run(ask())
    assert names == ["chronos"]
    assert tables == ["_chronos_mine", "albums", "artists"]


def test_hidden_are_exactly_what_the_catalog_does_not_count_as_the_apps(tmp_path):
    db = chronos_lite.init(tmp_path / "f", app_file(tmp_path / "app.sqlite"))
    db.sql("create virtual table notes using fts5(body)")
    db.close()
    conn = sqlite3.connect(tmp_path / "f" / "chronos.db")
    names = {r[0].lower() for r in conn.execute("select name from sqlite_master")}
    conn.close()
    hidden = chronos_tables(apsw.Connection(str(tmp_path / "f" / "chronos.db")))
    assert {"artists", "albums", "notes", "titles"}.isdisjoint(hidden)
    assert {n for n in hidden if not n.startswith("sqlite_")} == {
        n for n in names if n.startswith("_chronos_") and n in hidden
    }
    assert "_chronos_agents" in hidden and "_chronos_worlds" in hidden


def test_the_plugins_database_commits_no_write(tmp_path):
    chronos_lite.init(tmp_path / "f", app_file(tmp_path / "app.sqlite")).close()
    before = file_dump(tmp_path / "f")
    database = open_more(tmp_path / "f", refuse_writes)
    with pytest.raises((ChronosError, apsw.Error)):  # (turned back at its commit)
        REGISTRY.call(database, "sql", {"sql": "insert into artists values (3, 'Cy')"}, Caller())
    # reads answer, and TEMP objects (a world's session is made of them) are the connection's own
    reply = REGISTRY.call(database, "sql", {"sql": "select count(*) as n from artists"}, Caller())
    assert reply.value.results[-1].rows == [(2,)]
    database.main.conn.execute("create temp table scratch(x); insert into scratch values (1)")
    assert file_dump(tmp_path / "f") == before


def test_a_call_that_would_write_is_refused_and_the_file_kept(tmp_path):
    """A table made outside chronos: chronos' next call would version it (a write), so the
    plugin's pages say so, and answer once a chronos command has run."""
    chronos_lite.init(tmp_path / "f", app_file(tmp_path / "app.sqlite")).close()
    run_cli(tmp_path / "f", "fork", "w")
    conn = sqlite3.connect(tmp_path / "f" / "chronos.db")
    conn.execute("create table outside(id integer primary key, v text)")
    conn.commit()
    conn.close()
    before = file_dump(tmp_path / "f")
    folder = Folder((tmp_path / "f" / "chronos.db").resolve())
    with pytest.raises(ChronosError, match="would have to write"):
        asyncio.run(folder.run(list_branches))
    assert file_dump(tmp_path / "f") == before
    run_cli(tmp_path / "f", "sql", "select 1")
    assert [b["name"] for b in asyncio.run(folder.run(list_branches))] == ["main", "w"]
    assert "outside" not in folder.hidden() and "_chronos_agents" in folder.hidden()


def test_a_diff_leaves_out_tables_datasette_hides_from_the_actor(tmp_path):
    db = chronos_lite.init(tmp_path / "f", app_file(tmp_path / "app.sqlite"))
    db.fork("w")
    db.sql("update artists set name = 'Ann' where id = 1", branch="w")
    db.sql("update albums set title = 'Last' where id = 1", branch="w")
    db.close()
    private = {"databases": {"f": {"tables": {"artists": {"allow": False}}}}}

    async def ask() -> dict:
        ds = Datasette([str(tmp_path / "f" / "chronos.db")], metadata=private)
        await ds.invoke_startup()
        return (await ds.client.get("/-/chronos/f/diff.json?branch=w")).json()

    diff = asyncio.run(ask())
    assert [c["table"] for c in diff["changes"]] == ["albums"] and diff["left_out"] == 1
