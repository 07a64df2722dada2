"""Model-based property tests: main and every world always read exactly as a plain model says.

Hypothesis state machines drive one database folder with random operations: forks (from main
and from worlds, nested several levels), writes on main through chronos and through a separate
stdlib ``sqlite3`` connection, writes on worlds through ``db.sql`` / ``db.put`` / ``db.delete``,
discards (cascading when a world has children) and reopening the folder. A plain-Python model
keeps, for main and each open world, the rows of every table. After every step each branch must
read as its model, on chronos and (main) on the sqlite3 connection.

Tables (one machine per table, so each one's rules are dense; a last machine mixes all three):

* ``t``: ``id integer primary key`` (no AUTOINCREMENT in our DDL), compared by id. Every id an
  insert without an id allocates (in a world, or on main through chronos or sqlite3) must differ
  from every id ever allocated or explicitly used (inserted, or moved to by an UPDATE), in any
  branch: the shared counter.
* ``kv``: a TEXT primary key (keys with a comma, a quote, a space, the empty string).
* ``bag``: no primary key at all, compared as a multiset of rows (NULLs included).

A constraint error (a duplicate key in that branch's view) must raise ChronosError (sqlite3's
IntegrityError on the stdlib connection) exactly when the model says the key exists, and change
nothing: the next invariant check proves it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from strategies import MAX_OPEN, branch_of, free_world_name, machine_settings, world_of

import chronos_lite
from chronos_lite import ChronosError

SCHEMA = """
create table t(id integer primary key, name text, n int);
create table kv(k text primary key, v text, n int);
create table bag(name text, n int);
"""

IDS = st.integers(min_value=1, max_value=12)
NS = st.integers(min_value=0, max_value=6)
NAMES = st.sampled_from(["a", "b", "c"])
KEYS = st.sampled_from(["k1", "k2", "k3", "a,b", "o'q", "k 4", ""])
BAG_NAMES = st.sampled_from(["a", "b", None])
MODS = st.integers(min_value=0, max_value=2)
VALUES = st.tuples(NAMES, NS)  # a row of t or kv past its key


class Branch:
    """The model of one branch: t and kv as key -> row tuple, bag as a multiset of rows."""

    def __init__(self) -> None:
        self.t: dict[int, tuple] = {}
        self.kv: dict[str, tuple] = {}
        self.bag: Counter[tuple] = Counter()

    def copy(self) -> Branch:
        other = Branch()
        other.t = dict(self.t)
        other.kv = dict(self.kv)
        other.bag = Counter(self.bag)
        return other


class Base(RuleBasedStateMachine):
    """One fresh folder per example; forks, discards, reopening; the invariant."""

    TABLES: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        # tmpfs when there is one: every example (and every shrink step) makes a fresh folder
        shm = Path("/dev/shm")
        where = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
        self.tmp = Path(tempfile.mkdtemp(prefix="chronos-prop-", dir=where))
        self.folder = self.tmp / "db"
        self.db = chronos_lite.init(self.folder)
        self.db.sql(SCHEMA)
        # main written directly by "an app": the stdlib module, its own SQLite library
        self.raw = sqlite3.connect(self.folder / "chronos.db", timeout=30)
        self.model: dict[str, Branch] = {"main": Branch()}
        self.parent: dict[str, str] = {}  # open world -> the branch it was forked from
        self.used_ids: set[int] = set()  # every id of t ever used or allocated, any branch
        self.tags = 0

    def teardown(self) -> None:
        try:
            self.raw.close()
            self.db.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- helpers ----------------------------------------------------------------------------

    def worlds(self) -> list[str]:
        return sorted(self.parent)

    def branches(self) -> list[str]:
        return ["main", *self.worlds()]

    def pick_branch(self, data: st.DataObject) -> str:
        return data.draw(branch_of(self.parent), label="branch")

    def pick_world(self, data: st.DataObject) -> str:
        return data.draw(world_of(self.parent), label="world")

    def new_tag(self) -> str:
        self.tags += 1
        return f"auto{self.tags}"

    def subtree(self, world: str) -> set[str]:
        out = {world}
        changed = True
        while changed:
            changed = False
            for w, p in self.parent.items():
                if p in out and w not in out:
                    out.add(w)
                    changed = True
        return out

    @staticmethod
    def expect_error(fn: Any, *args: Any, **kw: Any) -> None:
        with pytest.raises(ChronosError):
            fn(*args, **kw)

    # --- setup ------------------------------------------------------------------------------

    @initialize(data=st.data(), nested=st.booleans(), apart=st.booleans())
    def seed_and_fork(self, data: st.DataObject, nested: bool, apart: bool) -> None:
        """Rows on main, then a world forked from it (and maybe one from that): most bugs need
        a world that main, or its parent, then moves away from. ``apart``: worlds read main's
        rows and their own apart, as a table too big to copy whole does."""
        if apart:
            self.db.call("config", setting="whole_rows", value="0")
        for table in self.TABLES:
            getattr(self, f"seed_{table}")(data)
        self.db.fork("w0")
        self.model["w0"] = self.model["main"].copy()
        self.parent["w0"] = "main"
        if nested:
            self.db.fork("w1", "w0")
            self.model["w1"] = self.model["w0"].copy()
            self.parent["w1"] = "w0"

    # --- worlds -----------------------------------------------------------------------------

    @precondition(lambda self: len(self.parent) < MAX_OPEN)
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        name = data.draw(free_world_name(self.parent), label="name")
        source = self.pick_branch(data)
        if source == "main":
            world = self.db.fork(name) if data.draw(st.booleans()) else self.db.fork(name, "main")
        else:
            world = self.db.fork(name, source, meta={"from": source})
        assert world.name == name
        assert world.parent == source
        self.model[name] = self.model[source].copy()
        self.parent[name] = source

    @precondition(lambda self: self.parent)
    @rule(data=st.data())
    def fork_taken_name_is_refused(self, data: st.DataObject) -> None:
        self.expect_error(self.db.fork, self.pick_world(data), self.pick_branch(data))

    @precondition(lambda self: self.parent)
    @rule(data=st.data())
    def discard(self, data: st.DataObject) -> None:
        world = self.pick_world(data)
        gone = self.subtree(world)
        if len(gone) > 1:
            self.expect_error(self.db.discard, world)  # refused: nothing is discarded
            assert {w.name for w in self.db.database.worlds()} == set(self.parent)
            result = self.db.discard(world, cascade=True)
        else:
            result = self.db.discard(world, cascade=data.draw(st.booleans(), label="cascade"))
        assert {w.name for w in result} == gone
        for w in gone:
            del self.model[w]
            del self.parent[w]

    @rule()
    def reopen(self) -> None:
        """A fresh Chronos object on the folder (the sqlite3 connection stays open)."""
        self.db.close()
        self.db = chronos_lite.open(self.folder)

    # --- the invariant ----------------------------------------------------------------------

    @invariant()
    def every_branch_reads_as_its_model(self) -> None:
        assert sorted(w.name for w in self.db.database.worlds()) == self.worlds()
        for branch in self.branches():
            m = self.model[branch]
            if "t" in self.TABLES:
                got = [
                    tuple(r.values())
                    for r in self.db.query("select * from t order by id", branch=branch)
                ]
                assert got == [m.t[i] for i in sorted(m.t)], f"table t on {branch}"
            if "kv" in self.TABLES:
                got = [
                    tuple(r.values())
                    for r in self.db.query("select * from kv order by k", branch=branch)
                ]
                assert got == [m.kv[k] for k in sorted(m.kv)], f"table kv on {branch}"
            if "bag" in self.TABLES:
                bag = Counter(
                    tuple(r.values()) for r in self.db.query("select * from bag", branch=branch)
                )
                assert bag == +m.bag, f"table bag on {branch}"
        main = self.model["main"]
        if "t" in self.TABLES:
            raw = self.raw.execute("select * from t order by id").fetchall()
            assert raw == [main.t[i] for i in sorted(main.t)], "table t on main, read by sqlite3"
        if "bag" in self.TABLES:
            raw_bag = Counter(self.raw.execute("select * from bag").fetchall())
            assert raw_bag == +main.bag, "table bag on main, read by sqlite3"


class IntKeyRules:
    """Table t: INTEGER PRIMARY KEY, and the shared counter of its ids."""

    model: dict[str, Branch]
    used_ids: set[int]
    db: chronos_lite.Chronos
    raw: sqlite3.Connection
    pick_branch: Any
    new_tag: Any
    expect_error: Any

    def seed_t(self, data: st.DataObject) -> None:
        rows = data.draw(st.dictionaries(IDS, VALUES, min_size=1, max_size=5), label="t rows")
        for i, (name, n) in rows.items():
            self.db.sql("insert into t(id, name, n) values ($1, $2, $3)", i, name, n)
            self.model["main"].t[i] = (i, name, n)
            self.used_ids.add(i)

    def pick_id(self, data: st.DataObject, branch: str) -> int:
        """An id the branch has (auto ids too), a small id, a used one, or one just above all
        ids seen so far (where the shared counter allocates next)."""
        have = sorted(self.model[branch].t)
        top = max(self.used_ids, default=0)
        choices = [IDS, st.integers(min_value=top + 1, max_value=top + 3)]
        if have:
            choices.append(st.sampled_from(have))
        if self.used_ids:
            choices.append(st.sampled_from(sorted(self.used_ids)))
        return data.draw(st.one_of(*choices), label="id")

    def pick_existing_id(self, data: st.DataObject, branch: str) -> int:
        have = sorted(self.model[branch].t)
        return data.draw(st.sampled_from(have), label="id") if have else 1

    def pick_new_id(self, data: st.DataObject) -> int:
        """Where to move a key: mostly right above every id seen (the next allocation)."""
        top = max(self.used_ids, default=0)
        return data.draw(st.one_of(st.just(top + 1), IDS), label="new id")

    def allocated(self, new_id: int, where: str) -> None:
        """The shared counter: an allocated id was never seen before, in any branch."""
        assert isinstance(new_id, int), (where, new_id)
        assert new_id not in self.used_ids, (
            f"{where}: insert without an id got id {new_id}, which was already allocated or "
            f"used in some branch (used: {sorted(self.used_ids)})"
        )
        self.used_ids.add(new_id)

    # --- through chronos, on main or a world ------------------------------------------------

    @rule(data=st.data(), name=NAMES, n=NS)
    def t_insert_id(self, data: st.DataObject, name: str, n: int) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        m = self.model[branch].t
        sql = "insert into t(id, name, n) values ($1, $2, $3)"
        if i in m:
            self.expect_error(self.db.sql, sql, i, name, n, branch=branch)
        else:
            self.db.sql(sql, i, name, n, branch=branch)
            m[i] = (i, name, n)
            self.used_ids.add(i)

    @rule(data=st.data(), n=NS)
    def t_insert_auto(self, data: st.DataObject, n: int) -> None:
        branch = self.pick_branch(data)
        tag = self.new_tag()
        self.db.sql("insert into t(name, n) values ($1, $2)", tag, n, branch=branch)
        got = self.db.query("select id from t where name = $1", tag, branch=branch)
        assert len(got) == 1, got
        new_id = got[0]["id"]
        self.allocated(new_id, f"insert on {branch}")
        self.model[branch].t[new_id] = (new_id, tag, n)

    @rule(data=st.data(), name=NAMES, n=NS)
    def t_update_id(self, data: st.DataObject, name: str, n: int) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        self.db.sql("update t set name = $1, n = $2 where id = $3", name, n, i, branch=branch)
        m = self.model[branch].t
        if i in m:
            m[i] = (i, name, n)

    @rule(data=st.data())
    def t_update_predicate(self, data: st.DataObject) -> None:
        branch = self.pick_branch(data)
        self.db.sql("update t set n = n + 1 where n % 2 = 0", branch=branch)
        m = self.model[branch].t
        for i, (_, name, n) in list(m.items()):
            if n % 2 == 0:
                m[i] = (i, name, n + 1)

    @rule(data=st.data())
    def t_delete_id(self, data: st.DataObject) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        self.db.sql("delete from t where id = $1", i, branch=branch)
        self.model[branch].t.pop(i, None)

    @rule(data=st.data(), r=MODS)
    def t_delete_predicate(self, data: st.DataObject, r: int) -> None:
        branch = self.pick_branch(data)
        self.db.sql("delete from t where n % 3 = $1", r, branch=branch)
        m = self.model[branch].t
        for i in [i for i, row in m.items() if row[2] % 3 == r]:
            del m[i]

    @rule(data=st.data(), name=NAMES, n=NS)
    def t_insert_or_replace(self, data: st.DataObject, name: str, n: int) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        self.db.sql(
            "insert or replace into t(id, name, n) values ($1, $2, $3)", i, name, n, branch=branch
        )
        self.model[branch].t[i] = (i, name, n)
        self.used_ids.add(i)

    @rule(data=st.data(), name=NAMES, n=NS)
    def t_insert_or_ignore(self, data: st.DataObject, name: str, n: int) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        self.db.sql(
            "insert or ignore into t(id, name, n) values ($1, $2, $3)", i, name, n, branch=branch
        )
        self.model[branch].t.setdefault(i, (i, name, n))
        self.used_ids.add(i)

    @rule(data=st.data(), name=NAMES, n=NS)
    def t_put(self, data: st.DataObject, name: str, n: int) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        m = self.model[branch].t
        created = self.db.put("t", i, {"name": name, "n": n}, branch=branch)
        assert created == (i not in m)
        m[i] = (i, name, n)
        self.used_ids.add(i)

    @rule(data=st.data())
    def t_api_delete_and_get(self, data: st.DataObject) -> None:
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        m = self.model[branch].t
        row = m.get(i)
        assert self.db.get("t", i, branch=branch) == (
            dict(zip(("id", "name", "n"), row)) if row else None
        )
        if i in m:
            self.db.delete("t", i, branch=branch)
            del m[i]
        else:
            self.expect_error(self.db.delete, "t", i, branch=branch)

    @rule(data=st.data(), name=NAMES, n=NS)
    def t_two_statements(self, data: st.DataObject, name: str, n: int) -> None:
        """One call, one transaction: a duplicate id in statement 2 undoes statement 1 too."""
        branch = self.pick_branch(data)
        i = self.pick_id(data, branch)
        m = self.model[branch].t
        sql = "update t set n = n + 1 where n < 4; insert into t(id, name, n) values ($1, $2, $3)"
        if i in m:
            self.expect_error(self.db.sql, sql, i, name, n, branch=branch)
            return
        self.db.sql(sql, i, name, n, branch=branch)
        for k, (_, nm, old) in list(m.items()):
            if old < 4:
                m[k] = (k, nm, old + 1)
        m[i] = (i, name, n)
        self.used_ids.add(i)

    @rule(data=st.data())
    def t_move_id(self, data: st.DataObject) -> None:
        """UPDATE of the key itself: the row moves; onto an existing id is refused."""
        branch = self.pick_branch(data)
        old = self.pick_existing_id(data, branch)
        new = self.pick_new_id(data)
        m = self.model[branch].t
        sql = "update t set id = $1 where id = $2"
        if old in m and new != old and new in m:
            self.expect_error(self.db.sql, sql, new, old, branch=branch)
            return
        self.db.sql(sql, new, old, branch=branch)
        if old in m:
            _, name, n = m.pop(old)
            m[new] = (new, name, n)
            self.used_ids.add(new)

    # --- main through the stdlib sqlite3 connection -----------------------------------------

    @rule(data=st.data(), name=NAMES, n=NS)
    def raw_t_insert_id(self, data: st.DataObject, name: str, n: int) -> None:
        i = self.pick_id(data, "main")
        m = self.model["main"].t
        if i in m:
            with pytest.raises(sqlite3.IntegrityError):
                self.raw.execute("insert into t(id, name, n) values (?, ?, ?)", (i, name, n))
            self.raw.rollback()
        else:
            self.raw.execute("insert into t(id, name, n) values (?, ?, ?)", (i, name, n))
            self.raw.commit()
            m[i] = (i, name, n)
            self.used_ids.add(i)

    @rule(n=NS)
    def raw_t_insert_auto(self, n: int) -> None:
        tag = self.new_tag()
        cur = self.raw.execute("insert into t(name, n) values (?, ?)", (tag, n))
        self.raw.commit()
        new_id = cur.lastrowid
        self.allocated(new_id, "stdlib sqlite3 insert on main")
        self.model["main"].t[new_id] = (new_id, tag, n)

    @rule(data=st.data(), name=NAMES, n=NS)
    def raw_t_update_id(self, data: st.DataObject, name: str, n: int) -> None:
        i = self.pick_id(data, "main")
        self.raw.execute("update t set name = ?, n = ? where id = ?", (name, n, i))
        self.raw.commit()
        m = self.model["main"].t
        if i in m:
            m[i] = (i, name, n)

    @rule()
    def raw_t_update_predicate(self) -> None:
        self.raw.execute("update t set n = n + 1 where n % 2 = 0")
        self.raw.commit()
        m = self.model["main"].t
        for i, (_, name, n) in list(m.items()):
            if n % 2 == 0:
                m[i] = (i, name, n + 1)

    @rule(data=st.data())
    def raw_t_delete_id(self, data: st.DataObject) -> None:
        i = self.pick_id(data, "main")
        self.raw.execute("delete from t where id = ?", (i,))
        self.raw.commit()
        self.model["main"].t.pop(i, None)

    @rule(r=MODS)
    def raw_t_delete_predicate(self, r: int) -> None:
        self.raw.execute("delete from t where n % 3 = ?", (r,))
        self.raw.commit()
        m = self.model["main"].t
        for i in [i for i, row in m.items() if row[2] % 3 == r]:
            del m[i]

    @rule(data=st.data(), name=NAMES, n=NS)
    def raw_t_insert_or_replace(self, data: st.DataObject, name: str, n: int) -> None:
        i = self.pick_id(data, "main")
        self.raw.execute("insert or replace into t(id, name, n) values (?, ?, ?)", (i, name, n))
        self.raw.commit()
        self.model["main"].t[i] = (i, name, n)
        self.used_ids.add(i)

    @rule(data=st.data())
    def raw_t_move_id(self, data: st.DataObject) -> None:
        old = self.pick_existing_id(data, "main")
        new = self.pick_new_id(data)
        m = self.model["main"].t
        sql = "update t set id = ? where id = ?"
        if old in m and new != old and new in m:
            with pytest.raises(sqlite3.IntegrityError):
                self.raw.execute(sql, (new, old))
            self.raw.rollback()
            return
        self.raw.execute(sql, (new, old))
        self.raw.commit()
        if old in m:
            _, name, n = m.pop(old)
            m[new] = (new, name, n)
            self.used_ids.add(new)


class TextKeyRules:
    """Table kv: a TEXT primary key."""

    model: dict[str, Branch]
    db: chronos_lite.Chronos
    raw: sqlite3.Connection
    pick_branch: Any
    expect_error: Any

    def seed_kv(self, data: st.DataObject) -> None:
        rows = data.draw(st.dictionaries(KEYS, VALUES, min_size=1, max_size=4), label="kv rows")
        for k, (v, n) in rows.items():
            self.db.sql("insert into kv(k, v, n) values ($1, $2, $3)", k, v, n)
            self.model["main"].kv[k] = (k, v, n)

    @rule(data=st.data(), k=KEYS, v=NAMES, n=NS)
    def kv_insert(self, data: st.DataObject, k: str, v: str, n: int) -> None:
        branch = self.pick_branch(data)
        m = self.model[branch].kv
        sql = "insert into kv(k, v, n) values ($1, $2, $3)"
        if k in m:
            self.expect_error(self.db.sql, sql, k, v, n, branch=branch)
        else:
            self.db.sql(sql, k, v, n, branch=branch)
            m[k] = (k, v, n)

    @rule(data=st.data(), k=KEYS, v=NAMES, n=NS)
    def kv_insert_or_replace(self, data: st.DataObject, k: str, v: str, n: int) -> None:
        branch = self.pick_branch(data)
        self.db.sql(
            "insert or replace into kv(k, v, n) values ($1, $2, $3)", k, v, n, branch=branch
        )
        self.model[branch].kv[k] = (k, v, n)

    @rule(data=st.data(), k=KEYS, v=NAMES, n=NS)
    def kv_insert_or_ignore(self, data: st.DataObject, k: str, v: str, n: int) -> None:
        branch = self.pick_branch(data)
        self.db.sql("insert or ignore into kv(k, v, n) values ($1, $2, $3)", k, v, n, branch=branch)
        self.model[branch].kv.setdefault(k, (k, v, n))

    @rule(data=st.data(), k=KEYS, v=NAMES)
    def kv_update_key(self, data: st.DataObject, k: str, v: str) -> None:
        branch = self.pick_branch(data)
        self.db.sql("update kv set v = $1, n = n + 1 where k = $2", v, k, branch=branch)
        m = self.model[branch].kv
        if k in m:
            m[k] = (k, v, m[k][2] + 1)

    @rule(data=st.data())
    def kv_update_predicate(self, data: st.DataObject) -> None:
        branch = self.pick_branch(data)
        self.db.sql("update kv set v = v || '+', n = n + 1 where n % 2 = 0", branch=branch)
        m = self.model[branch].kv
        for k, (_, v, n) in list(m.items()):
            if n % 2 == 0:
                m[k] = (k, v + "+", n + 1)

    @rule(data=st.data(), old=KEYS, new=KEYS)
    def kv_move_key(self, data: st.DataObject, old: str, new: str) -> None:
        """UPDATE of the key itself: the row moves; onto an existing key is refused."""
        branch = self.pick_branch(data)
        m = self.model[branch].kv
        sql = "update kv set k = $1 where k = $2"
        if old in m and new != old and new in m:
            self.expect_error(self.db.sql, sql, new, old, branch=branch)
            return
        self.db.sql(sql, new, old, branch=branch)
        if old in m:
            _, v, n = m.pop(old)
            m[new] = (new, v, n)

    @rule(data=st.data(), k=KEYS)
    def kv_delete_key(self, data: st.DataObject, k: str) -> None:
        branch = self.pick_branch(data)
        self.db.sql("delete from kv where k = $1", k, branch=branch)
        self.model[branch].kv.pop(k, None)

    @rule(data=st.data(), n=NS)
    def kv_delete_predicate(self, data: st.DataObject, n: int) -> None:
        branch = self.pick_branch(data)
        self.db.sql("delete from kv where n >= $1", n, branch=branch)
        m = self.model[branch].kv
        for k in [k for k, row in m.items() if row[2] >= n]:
            del m[k]

    @rule(data=st.data(), k=KEYS, v=NAMES, n=NS)
    def kv_put(self, data: st.DataObject, k: str, v: str, n: int) -> None:
        branch = self.pick_branch(data)
        m = self.model[branch].kv
        created = self.db.put("kv", k, {"v": v, "n": n}, branch=branch)
        assert created == (k not in m)
        m[k] = (k, v, n)

    @rule(data=st.data(), k=KEYS)
    def kv_api_delete_and_get(self, data: st.DataObject, k: str) -> None:
        branch = self.pick_branch(data)
        m = self.model[branch].kv
        row = m.get(k)
        assert self.db.get("kv", k, branch=branch) == (
            dict(zip(("k", "v", "n"), row)) if row else None
        )
        if k in m:
            self.db.delete("kv", k, branch=branch)
            del m[k]
        else:
            self.expect_error(self.db.delete, "kv", k, branch=branch)

    @rule(k=KEYS, v=NAMES, n=NS, op=st.sampled_from(["insert", "replace", "update", "delete"]))
    def raw_kv(self, k: str, v: str, n: int, op: str) -> None:
        m = self.model["main"].kv
        if op == "insert":
            if k in m:
                with pytest.raises(sqlite3.IntegrityError):
                    self.raw.execute("insert into kv(k, v, n) values (?, ?, ?)", (k, v, n))
                self.raw.rollback()
                return
            self.raw.execute("insert into kv(k, v, n) values (?, ?, ?)", (k, v, n))
            m[k] = (k, v, n)
        elif op == "replace":
            self.raw.execute("insert or replace into kv(k, v, n) values (?, ?, ?)", (k, v, n))
            m[k] = (k, v, n)
        elif op == "update":
            self.raw.execute("update kv set v = ?, n = ? where k = ?", (v, n, k))
            if k in m:
                m[k] = (k, v, n)
        else:
            self.raw.execute("delete from kv where k = ?", (k,))
            m.pop(k, None)
        self.raw.commit()


class NoKeyRules:
    """Table bag: no primary key; rows compared as a multiset."""

    model: dict[str, Branch]
    db: chronos_lite.Chronos
    raw: sqlite3.Connection
    pick_branch: Any

    def seed_bag(self, data: st.DataObject) -> None:
        rows = data.draw(
            st.lists(st.tuples(BAG_NAMES, NS), min_size=1, max_size=5), label="bag rows"
        )
        for name, n in rows:
            self.db.sql("insert into bag(name, n) values ($1, $2)", name, n)
            self.model["main"].bag[(name, n)] += 1

    @rule(
        data=st.data(),
        name=BAG_NAMES,
        n=NS,
        verb=st.sampled_from(["insert", "insert or replace", "insert or ignore"]),
    )
    def bag_insert(self, data: st.DataObject, name: str | None, n: int, verb: str) -> None:
        """Without a key nothing conflicts: every form of INSERT adds the row."""
        branch = self.pick_branch(data)
        self.db.sql(f"{verb} into bag(name, n) values ($1, $2)", name, n, branch=branch)
        self.model[branch].bag[(name, n)] += 1

    @rule(data=st.data())
    def bag_update_predicate(self, data: st.DataObject) -> None:
        branch = self.pick_branch(data)
        self.db.sql("update bag set n = n + 1 where n % 2 = 0", branch=branch)
        out: Counter[tuple] = Counter()
        for (name, n), count in self.model[branch].bag.items():
            out[(name, n + 1 if n % 2 == 0 else n)] += count
        self.model[branch].bag = out

    @rule(data=st.data(), old=BAG_NAMES, new=BAG_NAMES)
    def bag_rename(self, data: st.DataObject, old: str | None, new: str | None) -> None:
        branch = self.pick_branch(data)
        self.db.sql("update bag set name = $1 where name is $2", new, old, branch=branch)
        out: Counter[tuple] = Counter()
        for (name, n), count in self.model[branch].bag.items():
            out[(new if name == old else name, n)] += count
        self.model[branch].bag = out

    @rule(data=st.data(), name=BAG_NAMES, n=NS)
    def bag_delete_predicate(self, data: st.DataObject, name: str | None, n: int) -> None:
        branch = self.pick_branch(data)
        self.db.sql("delete from bag where name is $1 and n <= $2", name, n, branch=branch)
        bag = self.model[branch].bag
        for row in [r for r in bag if r[0] == name and r[1] <= n]:
            del bag[row]

    @rule(name=BAG_NAMES, n=NS, delete=st.booleans())
    def raw_bag(self, name: str | None, n: int, delete: bool) -> None:
        bag = self.model["main"].bag
        if delete:
            self.raw.execute("delete from bag where name is ?", (name,))
            for row in [r for r in bag if r[0] == name]:
                del bag[row]
        else:
            self.raw.execute("insert into bag(name, n) values (?, ?)", (name, n))
            bag[(name, n)] += 1
        self.raw.commit()

    @rule()
    def raw_bag_delete_newest(self) -> None:
        """The app deletes main's newest row: SQLite then reuses its rowid for the next one."""
        row = self.raw.execute("select rowid, name, n from bag order by rowid desc").fetchone()
        if row is None:
            return
        self.raw.execute("delete from bag where rowid = ?", (row[0],))
        self.raw.commit()
        bag = self.model["main"].bag
        bag[row[1:]] -= 1
        if not bag[row[1:]]:
            del bag[row[1:]]


class IntKeyMachine(IntKeyRules, Base):
    TABLES = ("t",)


class TextKeyMachine(TextKeyRules, Base):
    TABLES = ("kv",)


class NoKeyMachine(NoKeyRules, Base):
    TABLES = ("bag",)


class AllTablesMachine(IntKeyRules, TextKeyRules, NoKeyRules, Base):
    TABLES = ("t", "kv", "bag")


IntKeyMachine.TestCase.settings = machine_settings(100, 50)
TextKeyMachine.TestCase.settings = machine_settings(80, 50)
NoKeyMachine.TestCase.settings = machine_settings(100, 50)
AllTablesMachine.TestCase.settings = machine_settings(40, 50)

TestIntegerKey = IntKeyMachine.TestCase
TestTextKey = TextKeyMachine.TestCase
TestNoKey = NoKeyMachine.TestCase
TestAllTables = AllTablesMachine.TestCase


# --- what the machines found, as plain examples ---------------------------------------------


def test_world_keeps_a_keyless_row_main_deleted_after_the_fork(tmp_path: Path) -> None:
    """A table without a primary key: a world's new row must not take the hidden rowid of a
    main row the world still sees (main deleted it after the fork)."""
    db = chronos_lite.init(tmp_path / "db")
    db.sql("create table bag(name text, n int)")
    db.sql("insert into bag values ('a', 0)")
    db.fork("w")
    db.sql("delete from bag")
    db.sql("insert into bag values ('b', 1)", branch="w")
    rows = sorted(tuple(r.values()) for r in db.query("select * from bag", branch="w"))
    db.close()
    assert rows == [("a", 0), ("b", 1)]


def test_a_main_row_whose_text_key_is_null_is_refused_clearly_in_a_world(tmp_path: Path) -> None:
    """SQLite lets a TEXT PRIMARY KEY of a rowid table hold NULL (main takes it, from any
    client). A world sees that row, but can't keep its own copy of it (an overlay entry needs a
    key): changing it is refused with a message that says so, and nothing changes."""
    db = chronos_lite.init(tmp_path / "db")
    db.sql("create table kv(k text primary key, v text)")
    db.sql("insert into kv values (NULL, 'x'), ('a', 'y')")
    db.fork("w")
    try:
        assert len(db.query("select * from kv", branch="w")) == 2
        with pytest.raises(chronos_lite.ChronosError, match="primary key is NULL"):
            db.sql("update kv set v = v || '!'", branch="w")
        with pytest.raises(chronos_lite.ChronosError, match="primary key is NULL"):
            db.sql("delete from kv where k is null", branch="w")
        db.sql("update kv set v = 'z' where k = 'a'", branch="w")
        rows = sorted(db.query("select v from kv", branch="w"), key=lambda r: r["v"])
        assert rows == [{"v": "x"}, {"v": "z"}]
    finally:
        db.close()
