"""Several processes writing one folder at once: two worlds, and an app writing main.

Each writer is its own OS process (as two agents and an app would be). They open the folder,
wait at a common gate so their writes really overlap, then each makes many write calls, each its
own transaction. No writer may see 'database is locked' (or any error); afterwards each world
holds exactly main's rows as at its fork plus its own, main holds only its own rows, and every
integer id allocated anywhere is distinct (the shared counter).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import chronos_lite

CHRONOS = str(Path(sys.executable).with_name("chronos"))
SCHEMA = "create table t(id integer primary key, who text not null, seq int not null, note text)"
SEEDS = 5

WORLD_WRITER = r"""
import json, sys, time
from pathlib import Path
import chronos_lite

folder, world, count, gate = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
db = chronos_lite.open(folder)
db.query("select count(*) from t", branch=world)  # the world's session is built before the gate
print("ready", flush=True)
while not gate.exists():
    time.sleep(0.002)
start = time.time()
for i in range(count):
    if i % 10 == 9:
        # one call, several statements, one transaction; it also changes rows from main
        db.sql(
            "insert into t(who, seq) values ($1, $2); "
            "insert into t(who, seq, note) values ($1, $3, 'multi'); "
            "update t set note = $1 where who = 'seed'",
            world, i, 10_000 + i, branch=world,
        )
    else:
        db.sql("insert into t(who, seq) values ($1, $2)", world, i, branch=world)
end = time.time()
db.close()
print(json.dumps({"start": start, "end": end}), flush=True)
"""

MAIN_WRITER = r"""
import json, sqlite3, sys, time
from pathlib import Path

path, count, gate = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
conn = sqlite3.connect(path, timeout=60)
conn.execute("select count(*) from t").fetchall()
print("ready", flush=True)
while not gate.exists():
    time.sleep(0.002)
start = time.time()
ids = []
for i in range(count):
    cur = conn.execute("insert into t(who, seq) values ('main', ?)", (i,))
    conn.commit()
    ids.append(cur.lastrowid)
end = time.time()
conn.close()
print(json.dumps({"start": start, "end": end, "ids": ids}), flush=True)
"""


def _rows(db: chronos_lite.Chronos, branch: str = "main") -> list[dict]:
    return db.query("select * from t order by id", branch=branch)


def _bag(rows: list[dict]) -> Counter:
    return Counter((r["who"], r["seq"], r["note"]) for r in rows)


def _seeded(folder: Path) -> chronos_lite.Chronos:
    db = chronos_lite.init(folder)
    db.sql(SCHEMA)
    for i in range(SEEDS):
        db.sql("insert into t(who, seq) values ('seed', $1)", i)
    return db


def _reports(procs: dict[str, subprocess.Popen]) -> dict[str, dict]:
    """Each writer's closing report; every writer must have exited 0 without a word on stderr."""
    reports = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{name} exited {proc.returncode}:\n{err}"
        assert err == "", f"{name} wrote to stderr:\n{err}"
        reports[name] = json.loads(out.strip().splitlines()[-1])
    return reports


def _stop(procs: dict[str, subprocess.Popen]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_worlds_and_main_written_by_three_processes_at_once(tmp_path: Path) -> None:
    count = 200
    folder = tmp_path / "db"
    gate = tmp_path / "go"
    db = _seeded(folder)
    db.fork("wa")
    # main moves on between the two forks: wa must not see this row, wb must
    db.sql("insert into t(who, seq) values ('between', 0)")
    db.fork("wb")
    seeds = _bag(_rows(db, "wa"))
    between = Counter({("between", 0, None): 1})
    before_ids = [r["id"] for r in _rows(db)]
    db.close()

    procs = {
        "wa": _start([WORLD_WRITER, str(folder), "wa", str(count), str(gate)]),
        "wb": _start([WORLD_WRITER, str(folder), "wb", str(count), str(gate)]),
        "main": _start([MAIN_WRITER, str(folder / "chronos.db"), str(count), str(gate)]),
    }
    try:
        for name, proc in procs.items():
            line = proc.stdout.readline()
            assert line.strip() == "ready", f"{name}: {line!r} {proc.stderr.read()}"
        gate.touch()
        reports = _reports(procs)
    finally:
        _stop(procs)

    # the writers really ran at the same time
    assert max(r["start"] for r in reports.values()) < min(r["end"] for r in reports.values())

    db = chronos_lite.open(folder)
    try:
        multi = range(9, count, 10)
        for world, also in (("wa", Counter()), ("wb", between)):
            own = Counter({(world, i, None): 1 for i in range(count)})
            own.update({(world, 10_000 + i, "multi"): 1 for i in multi})
            from_main = Counter({("seed", i, world): 1 for i in range(SEEDS)}) + also
            rows = _rows(db, world)
            assert _bag(rows) == from_main + own, f"rows of {world}"
        main_rows = _rows(db)
        main_own = Counter({("main", i, None): 1 for i in range(count)})
        assert _bag(main_rows) == seeds + between + main_own
        assert sorted(reports["main"]["ids"]) == sorted(
            r["id"] for r in main_rows if r["who"] == "main"
        )

        ids = list(before_ids) + reports["main"]["ids"]
        for world in ("wa", "wb"):
            ids += [r["id"] for r in _rows(db, world) if r["who"] == world]
        assert len(ids) == len(set(ids)) == len(before_ids) + count + 2 * (count + len(multi))
    finally:
        db.close()


def test_worlds_keep_writing_while_another_process_forks_discards_and_changes_schema(
    tmp_path: Path,
) -> None:
    """While two worlds are written, this process forks and discards other worlds (from main
    and from one of the busy worlds), and main's schema changes through chronos and through
    the stdlib: every world writer goes on without an error and loses nothing."""
    count = 500  # long enough that this process's changes land while both writers run
    folder = tmp_path / "db"
    gate = tmp_path / "go"
    db = _seeded(folder)
    db.fork("wa")
    db.fork("wb")
    seeds = _bag(_rows(db, "wa"))
    db.close()
    procs = {w: _start([WORLD_WRITER, str(folder), w, str(count), str(gate)]) for w in ("wa", "wb")}
    try:
        for name, proc in procs.items():
            line = proc.stdout.readline()
            assert line.strip() == "ready", f"{name}: {line!r} {proc.stderr.read()}"
        gate.touch()
        started = time.time()
        db = chronos_lite.open(folder)
        app = sqlite3.connect(folder / "chronos.db", timeout=60)
        try:
            for i in range(12):
                db.fork(f"x{i}", "wa" if i % 2 else "main")
                db.sql("insert into t(who, seq) values ($1, 0)", f"x{i}", branch=f"x{i}")
                if i % 3 == 0:
                    db.sql(f"create table extra{i}(id integer primary key, v text)")
                elif i % 3 == 1:
                    app.execute(f"create table app{i}(id integer primary key, v text)")
                    app.commit()
                else:
                    db.sql(f"alter table t add column c{i} text")
                db.discard(f"x{i}")
        finally:
            app.close()
            db.close()
        ended = time.time()
        reports = _reports(procs)
    finally:
        _stop(procs)
    # this process's changes came while both worlds were being written
    assert max(r["start"] for r in reports.values()) < ended
    assert started < min(r["end"] for r in reports.values())

    db = chronos_lite.open(folder)
    try:
        multi = range(9, count, 10)
        for world in ("wa", "wb"):
            own = Counter({(world, i, None): 1 for i in range(count)})
            own.update({(world, 10_000 + i, "multi"): 1 for i in multi})
            from_main = Counter({("seed", i, world): 1 for i in range(SEEDS)})
            assert _bag(_rows(db, world)) == from_main + own, f"rows of {world}"
        assert _bag(_rows(db)) == seeds
        assert [w.name for w in db.database.worlds()] == ["wa", "wb"]
    finally:
        db.close()


CLI_LOOP = r"""
set -u
for i in $(seq 1 "$N"); do
    if [ $((i % 5)) -eq 0 ]; then
        sql="insert into t(who, seq) values ('$WHO', $i);
             insert into t(who, seq) values ('$WHO', -$i)"
    else
        sql="insert into t(who, seq) values ('$WHO', $i)"
    fi
    if [ "$BRANCH" = main ]; then
        "$CHRONOS" "$FOLDER" sql "$sql" > /dev/null || exit 1
    else
        "$CHRONOS" "$FOLDER" sql -b "$BRANCH" "$sql" > /dev/null || exit 1
    fi
done
"""


def test_two_worlds_and_main_written_through_the_cli_at_once(tmp_path: Path) -> None:
    count = 20
    folder = tmp_path / "db"
    db = _seeded(folder)
    db.fork("wc")
    db.fork("wd")
    seeds = _bag(_rows(db, "wc"))
    before_ids = [r["id"] for r in _rows(db)]
    db.close()

    procs = {}
    for branch in ("wc", "wd", "main"):
        env = dict(
            os.environ, N=str(count), WHO=branch, BRANCH=branch, CHRONOS=CHRONOS, FOLDER=str(folder)
        )
        procs[branch] = subprocess.Popen(
            ["bash", "-c", CLI_LOOP],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    started = time.time()
    try:
        for branch, proc in procs.items():
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"loop on {branch} exited {proc.returncode}:\n{err}"
            assert err == "", f"loop on {branch} wrote to stderr:\n{err}"
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert time.time() - started < 60

    def own(who: str) -> Counter:
        out = Counter({(who, i, None): 1 for i in range(1, count + 1)})
        out.update({(who, -i, None): 1 for i in range(5, count + 1, 5)})
        return out

    db = chronos_lite.open(folder)
    try:
        assert _bag(_rows(db, "wc")) == seeds + own("wc")
        assert _bag(_rows(db, "wd")) == seeds + own("wd")
        assert _bag(_rows(db)) == seeds + own("main")
        ids = list(before_ids)
        for branch in ("wc", "wd", "main"):
            ids += [r["id"] for r in _rows(db, branch) if r["who"] == branch]
        assert len(ids) == len(set(ids)) == len(before_ids) + 3 * sum(own("x").values())
    finally:
        db.close()
