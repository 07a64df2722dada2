"""A merge killed with SIGKILL at a random moment is all or nothing.

A child process (its own interpreter, as an agent's would be) opens a copy of a prepared folder
and merges a world with ~22k changed rows (updates, inserts and deletes in an integer-keyed and
a text-keyed table) into its parent: main, or (second test) the world it was forked from. The
test kills it at moments spread over the merge's measured duration (a few after it ends). After
each kill the folder is opened again, and:

* ``PRAGMA integrity_check`` is ok;
* the parent holds all of the merge or none of it (both states computed before);
* all of it: the world is gone; none of it: the world is open with its diff as before;
* a merge of a world still open then succeeds and gives the all-of-it state (a kill after the
  merge flagged its world makes the next plain merge say it was interrupted: that is by design,
  and the merge is then confirmed);
* branches the merge doesn't touch (main under a world parent, another world) are unchanged.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import chronos_lite
from chronos_lite import ChronosError

CHILD = r"""
import json, sys, time
import chronos_lite

folder, world, parent = sys.argv[1:4]
db = chronos_lite.open(folder)
db.diff(world)  # sessions and tables ready: the kill lands in the merge, not in the imports
print("go", flush=True)
start = time.perf_counter()
db.merge(world)
print(json.dumps({"took": time.perf_counter() - start}), flush=True)
db.close()
"""

SCHEMA = """
create table a(id integer primary key, v text, n int);
create table b(k text primary key, v text, n int);
"""
SEED = """
with recursive s(i) as (select 1 union all select i + 1 from s where i < 30000)
insert into a select i, 'v' || i, i % 7 from s;
with recursive s(i) as (select 1 union all select i + 1 from s where i < 8000)
insert into b select 'k' || i, 'v' || i, i % 5 from s;
"""
# ~22k changes: 15k updates, 2k deletes, 2k inserts in a; 1.6k updates, 1.6k deletes, 1k
# inserts in b
CHANGES = """
update a set v = v || '!', n = n + 1 where id % 2 = 0;
delete from a where id % 15 = 1;
with recursive s(i) as (select 30001 union all select i + 1 from s where i < 32000)
insert into a select i, 'new' || i, 0 from s;
update b set n = n + 10 where n = 0;
delete from b where n = 1;
with recursive s(i) as (select 1 union all select i + 1 from s where i < 1000)
insert into b select 'new' || i, 'x', 0 from s;
"""


def tmp_root() -> str | None:
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@pytest.fixture
def work():
    path = Path(tempfile.mkdtemp(prefix="chronos-crash-", dir=tmp_root()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def dump(db: chronos_lite.Chronos, branch: str) -> tuple[list[tuple], list[tuple]]:
    a = db.sql("select * from a order by id", branch=branch).results[-1].rows
    b = db.sql("select * from b order by k", branch=branch).results[-1].rows
    return [tuple(r) for r in a], [tuple(r) for r in b]


def diff_of(db: chronos_lite.Chronos, world: str) -> list[tuple]:
    return sorted((c.table, str(c.key), c.kind, str(c.ours)) for c in db.diff(world).changes)


@dataclass
class Prepared:
    folder: Path
    world: str
    parent: str
    bystander: str  # another open world the merge must not touch
    before: tuple
    after: tuple
    main: tuple  # main's rows (when the parent is a world: main must not move)
    diff: list[tuple]
    bystander_diff: list[tuple]


def prepare(work: Path, nested: bool) -> Prepared:
    folder = work / "prepared"
    db = chronos_lite.init(folder)
    db.sql(SCHEMA)
    db.sql(SEED)
    parent = "main"
    if nested:
        parent = "p"
        db.fork("p")
        db.sql("update a set n = -1 where id % 10 = 3; delete from b where n = 4", branch="p")
    db.fork("x", None if parent == "main" else parent)
    db.sql("update a set v = 'x' where id <= 100; insert into b values ('xx', 'x', 0)", branch="x")
    db.fork("w", None if parent == "main" else parent)
    db.sql(CHANGES, branch="w")
    prepared = Prepared(
        folder,
        "w",
        parent,
        "x",
        dump(db, parent),
        (),
        dump(db, "main"),
        diff_of(db, "w"),
        diff_of(db, "x"),
    )
    assert len(prepared.diff) > 20_000
    db.close()
    # the all-of-it state: the same merge, run here to the end on a copy
    shutil.copytree(folder, work / "expected")
    db = chronos_lite.open(work / "expected")
    db.merge("w")
    prepared.after = dump(db, parent)
    db.close()
    assert prepared.after != prepared.before
    return prepared


def start_child(folder: Path, p: Prepared) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder), p.world, p.parent],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if line != "go\n":
        proc.kill()
        raise AssertionError(f"child did not start: {line!r} {proc.stderr.read()}")
    return proc


def merge_duration(work: Path, p: Prepared) -> float:
    """How long the child's merge takes here (the slower of two runs to the end)."""
    took = []
    for i in range(2):
        folder = work / f"timing{i}"
        shutil.copytree(p.folder, folder)
        proc = start_child(folder, p)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        took.append(float(out.split('"took": ')[1].rstrip("}\n")))
        shutil.rmtree(folder)
    return max(took)


def check_after_kill(folder: Path, p: Prepared, label: str) -> str:
    """The folder a killed merge left: all of it or none of it; returns which."""
    db = chronos_lite.open(folder)
    try:
        # through chronos' own connection: a stdlib sqlite3 connection closed in this process
        # would delete the WAL under it (two SQLite libraries; see docs/storage.md)
        check = db.database.main.conn.execute("pragma integrity_check").fetchall()
        assert check == [("ok",)], (label, check)
        state = dump(db, p.parent)
        open_worlds = {w.name for w in db.database.worlds()}
        assert diff_of(db, p.bystander) == p.bystander_diff, label
        if p.parent != "main":
            assert dump(db, "main") == p.main, f"{label}: main moved"
        if state == p.after:
            assert p.world not in open_worlds, f"{label}: merged, but {p.world} is still open"
            return "all"
        assert state == p.before, f"{label}: {p.parent} holds part of the merge"
        assert p.world in open_worlds, f"{label}: {p.world} is gone but nothing was merged"
        assert diff_of(db, p.world) == p.diff, f"{label}: {p.world}'s changes moved"
        outcome = "none"
        try:
            db.merge(p.world)
        except ChronosError as exc:
            # the kill came after the merge flagged the world: the next plain merge says so
            assert exc.code == "40001" and "interrupted" in exc.message, (label, exc)
            outcome = "none, flagged"
            db.call("merge", branch=p.world, confirm=True)
        assert dump(db, p.parent) == p.after, f"{label}: the merge after the kill"
        assert p.world not in {w.name for w in db.database.worlds()}, label
        assert diff_of(db, p.bystander) == p.bystander_diff, label
        return outcome
    finally:
        db.close()


def run_kills(work: Path, nested: bool, kills: int, seed: int) -> None:
    p = prepare(work, nested)
    took = merge_duration(work, p)
    rng = random.Random(seed)
    # delays spread over the whole merge (stratified), the last few after it ends
    span = took * 1.15
    delays = [span * (i + rng.random()) / kills for i in range(kills)]
    rng.shuffle(delays)
    seen = []
    for i, delay in enumerate(delays):
        folder = work / f"kill{i}"
        shutil.copytree(p.folder, folder)  # nothing has the prepared folder open
        proc = start_child(folder, p)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        label = f"seed {seed}, kill {i} at {delay:.3f}s of a {took:.3f}s merge into {p.parent}"
        seen.append((round(delay / took, 2), check_after_kill(folder, p, label)))
        shutil.rmtree(folder)
    # the kills must have landed inside the merge, not only before or after it
    assert any(o.startswith("none") for _, o in seen), seen
    print(f"merge into {p.parent}: {took:.2f}s; kills (fraction of it, outcome): {sorted(seen)}")


def test_a_killed_merge_into_main_is_all_or_nothing(work: Path) -> None:
    run_kills(work, nested=False, kills=15, seed=int(os.environ.get("CRASH_SEED", "1")))


def test_a_killed_merge_into_its_parent_world_is_all_or_nothing(work: Path) -> None:
    run_kills(work, nested=True, kills=8, seed=int(os.environ.get("CRASH_SEED", "2")))
