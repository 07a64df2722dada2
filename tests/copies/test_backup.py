"""backup, verify and hash: a copy taken while others write holds every write acknowledged
before it began, opens as a database with its worlds and history, and is checked before it
takes its name; a SIGKILL half way leaves the source as it was and no folder that looks like a
database; a branch's hash is equal for equal contents whatever their history."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from datetime import datetime

import pytest
from helpers import CHRONOS, run_cli

import chronos_lite
from chronos_lite import Caller, ChronosError


@pytest.fixture
def shop(db):
    db.sql("create table items(id integer primary key, name text, price real)")
    db.sql(
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < 2000) "
        "insert into items(name, price) select 'item ' || i, i * 0.25 from n"
    )
    db.sql("create table tags(name text, note)")  # (no primary key: rows as a multiset)
    db.sql("insert into tags values ('a', null), ('b', x'00ff'), ('c', 1.5)")
    db.fork("w1")
    db.sql(
        "update items set price = 0 where id <= 10; delete from tags where name = 'b'", branch="w1"
    )
    db.fork("w2")
    return db


def test_a_backup_opens_with_every_branch_and_verifies(shop, tmp_path):
    reply = shop.call("backup", to=str(tmp_path / "copy"))
    assert reply.text.startswith(f"backed up {shop.database.folder} to {tmp_path / 'copy'}")
    assert "3 branches (main, w1, w2)" in reply.text and "checked: integrity ok" in reply.text
    with chronos_lite.open(tmp_path / "copy") as copy:
        assert sorted(b.name for b in copy.branches()) == ["w1", "w2"]
        assert copy.call("diff", branch="w1").text == shop.call("diff", branch="w1").text
        assert copy.call("history", branch="w1").data == shop.call("history", branch="w1").data
        verified = copy.call("verify")
        assert verified.data["ok"] is True and verified.data["integrity"] == ["ok"]
        assert [b["same"] for b in verified.data["branches"]] == [True, True, True]
        assert "the copy is sound" in verified.text
        copy.sql("insert into items(name) values ('after')")  # (an ordinary database)
    shop.sql("update items set price = 9 where id = 1")  # the source moves on
    with chronos_lite.open(tmp_path / "copy") as copy:
        assert copy.call("verify").data["ok"] is False  # (the copy changed since)
        copy.sql("delete from items where name = 'after'")
        assert copy.call("verify").data["ok"] is True  # (as copied: the source's history)
        now = copy.call("verify", against=str(shop.database.folder))
        assert now.data["ok"] is False
        main = now.data["branches"][0]
        assert main["branch"] == "main" and main["why"] == (
            "differs: items (2000 rows in the copy, 2000 in the source)"
        )


def test_the_hash_is_the_content_whatever_its_history(shop):
    main = shop.call("hash").value
    assert shop.call("hash", branch="w2").value.hash == main.hash  # (forked, unchanged)
    w1 = shop.call("hash", branch="w1").value
    assert w1.hash != main.hash
    assert [t.rows for t in w1.tables] == [2000, 2]
    shop.sql("update items set price = id * 0.25 where id <= 10", branch="w1")  # (back as it was)
    shop.sql("insert into tags values ('b', x'00ff')", branch="w1")  # (a new rowid: the same row)
    assert shop.call("hash", branch="w1").value.hash == main.hash
    then = datetime.fromtimestamp(time.time()).isoformat(timespec="microseconds")
    time.sleep(0.01)
    shop.sql("update items set price = 1 where id = 1")
    before = shop.call("hash", branch=f"main@{then}").value
    assert before.hash == main.hash and shop.call("hash").value.hash != main.hash
    shop.sql("update tags set note = 1.0 where name = 'a'", branch="w2")  # (no type: kept)
    shop.sql("update tags set note = 1 where name = 'a'", branch="w1")  # the integer: not 1.0
    assert shop.query("select note from tags where name = 'a'", branch="w1") == [{"note": 1}]
    assert shop.call("hash", branch="w1").value.tables[1].hash != (
        shop.call("hash", branch="w2").value.tables[1].hash
    )
    shop.sql("update tags set note = 1.0 where name = 'a'", branch="w1")
    assert shop.call("hash", branch="w1").value.tables[1].hash == (
        shop.call("hash", branch="w2").value.tables[1].hash
    )
    text = shop.call("hash", branch="w2").text
    assert text.startswith(shop.call("hash", branch="w2").value.hash + "  w2 (2 tables, ")


def test_bad_calls_say_how_and_change_nothing(shop, tmp_path, folder):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    cases = [
        ({"to": str(folder / "inside")}, "can't go into the database's own folder"),
        ({"to": str(tmp_path / "other")}, "exists already (it holds something)"),
        ({"to": str(tmp_path / "other"), "replace": True}, "holds no chronos database"),
    ]
    for args, said in cases:
        with pytest.raises(ChronosError) as info:
            shop.call("backup", **args)
        assert said in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "shop"]
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"
    with pytest.raises(ChronosError) as info:
        shop.call("verify", against=str(tmp_path / "other"))
    assert "holds no chronos database" in str(info.value)
    with pytest.raises(ChronosError) as info:
        shop.call("verify", against=f"{folder}@")
    assert "nothing after '@'" in str(info.value)
    with pytest.raises(ChronosError) as info:
        shop.call("hash", branch="nope")
    assert "nope" in str(info.value)
    plain = shop.call("verify")  # (not a copy: checked on its own)
    assert plain.data["ok"] is True and plain.data["against"] is None


def test_agents_and_safe_mode_may_hash_but_not_back_up_or_verify(shop, tmp_path):
    shop.call("agent", action="create", name="reader", rights=["read"])
    shop.call("agent", action="create", name="boss", rights=["admin", "read"])
    reader, boss = Caller(name="reader", mode="agent"), Caller(name="boss", mode="agent")
    safe = Caller(mode="safe")
    assert shop.call("hash", reader).value.hash == shop.call("hash", safe).value.hash
    for caller in (reader, safe):
        for name, args in (("backup", {"to": str(tmp_path / "c")}), ("verify", {})):
            with pytest.raises(ChronosError) as info:
                shop.call(name, caller, **args)
            assert info.value.code == "42501"
    assert not (tmp_path / "c").exists()
    shop.call("backup", boss, to=str(tmp_path / "c"))
    assert shop.call("verify", boss, against=str(tmp_path / "c")).data["ok"] is True


def test_a_backup_during_a_write_storm_holds_every_acknowledged_write(shop, tmp_path, folder):
    shop.close()
    acked: dict[str, list[tuple[int, float]]] = {"main": [], "w1": [], "w2": []}
    stop = threading.Event()

    def write(branch: str) -> None:
        with chronos_lite.open(folder) as db:
            i = 0
            while not stop.is_set() and i < 5000:
                i += 1
                db.sql(
                    "insert into items(id, name) values ($1, 'storm')", 100_000 + i, branch=branch
                )
                acked[branch].append((100_000 + i, time.time()))

    writers = [threading.Thread(target=write, args=(b,), daemon=True) for b in acked]
    for w in writers:
        w.start()
    time.sleep(0.3)
    began = time.time()
    with chronos_lite.open(folder) as db:
        reply = db.call("backup", to=str(tmp_path / "copy"))
    stop.set()
    for w in writers:
        w.join(timeout=60)
        assert not w.is_alive()
    assert reply.data["moment"] >= began
    with chronos_lite.open(tmp_path / "copy") as copy:
        for branch, writes in acked.items():
            before = {i for i, at in writes if at < began}
            assert before, branch  # (the storm had written before the backup began)
            rows = copy.query("select id from items where name = 'storm'", branch=branch)
            assert before <= {r["id"] for r in rows}
        assert copy.call("verify").data["ok"] is True  # (main exactly as copied)


def test_sigkill_during_a_backup_leaves_no_copy_that_looks_complete(db, folder, tmp_path):
    db.sql("create table big(id integer primary key, body text)")
    db.sql(
        "with recursive n(i) as (select 1 union all select i + 1 from n where i < 150000) "
        "insert into big(body) select printf('%0200d', i) from n"
    )
    db.fork("w")
    source_hash = db.call("hash").value.hash
    db.close()
    dest = tmp_path / "copy"
    for delay in (0.05, 0.3, 0.8):
        proc = subprocess.Popen([CHRONOS, str(folder), "backup", str(dest)], start_new_session=True)
        try:
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
        if dest.exists():  # (it finished before the kill: then it is whole)
            assert run_cli(dest, "verify").stdout.count("the copy is sound") == 1
            break
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".copy.partial")]
        assert all(not (tmp_path / p / "chronos.db").exists() or p for p in leftovers)
    with chronos_lite.open(folder) as again:
        assert again.call("hash").value.hash == source_hash
        assert again.call("verify").data["integrity"] == ["ok"]
    if not dest.exists():
        assert "backed up" in run_cli(folder, "backup", dest).stdout
    assert [p.name for p in tmp_path.iterdir() if ".partial" in p.name] == []


def test_the_cli_backs_up_hashes_and_verifies(shop, folder, tmp_path):
    shop.close()
    out = run_cli(folder, "backup", tmp_path / "copy").stdout
    assert out.startswith(f"backed up {folder}")
    branches = run_cli(tmp_path / "copy", "branches").stdout
    assert "w1" in branches and "w2" in branches
    hashed = run_cli(folder, "hash", "-b", "w1").stdout
    assert hashed.split()[0] == run_cli(tmp_path / "copy", "hash", "-b", "w1").stdout.split()[0]
    checked = run_cli(tmp_path / "copy", "verify", "--against", str(folder))
    assert "the copy is sound" in checked.stdout
    again = run_cli(folder, "backup", tmp_path / "copy", check=False)
    assert again.returncode == 1 and "exists already" in again.stderr


def test_the_python_api_backs_up_verifies_and_hashes(shop, tmp_path):
    made = shop.backup(tmp_path / "copy")
    assert made["to"] == str(tmp_path / "copy") and made["bytes"] > 0
    with chronos_lite.open(tmp_path / "copy") as copy:
        assert copy.verify().ok is True
        assert copy.hash("w1").hash == shop.hash("w1").hash
        assert copy.verify(against=str(shop.folder)).ok is True
