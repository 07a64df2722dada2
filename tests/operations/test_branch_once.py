"""The branch resolved once, at the edge: validation reads the branch a call names into one
BranchRef, and its world is looked up once per call; rights, the policy gate, the merge and
its request take those values."""

from __future__ import annotations

from collections import Counter

import pytest

from chronos_lite.storage import branchref, worlds
from chronos_lite.storage.db import Database


@pytest.fixture
def counted(db, monkeypatch):
    """``db`` with a world w that changed a row; counts of the branch text parsed, of
    Database.world calls and of worlds looked up by name in SQL, from here on."""
    db.sql("create table t(id integer primary key, v text)")
    db.sql("insert into t values (1, 'a'), (2, 'b')")
    db.call("agent", action="create", name="bot", rights=["read", "fork", "write_own", "merge"])
    db.call("fork", db.as_agent("bot"), name="w")
    db.sql("update t set v = 'c' where id = 1", branch="w")
    seen: Counter[str] = Counter()
    parse, world, find = branchref.BranchRef.parse.__func__, Database.world, worlds.find

    def counted_parse(cls, text):
        if not isinstance(text, branchref.BranchRef):
            seen["parse"] += 1
        return parse(cls, text)

    def counted_world(self, *args, **kwargs):
        seen["Database.world"] += 1
        return world(self, *args, **kwargs)

    def counted_find(*args, **kwargs):
        seen["worlds.find"] += 1
        return find(*args, **kwargs)

    monkeypatch.setattr(branchref.BranchRef, "parse", classmethod(counted_parse))
    monkeypatch.setattr(Database, "world", counted_world)
    monkeypatch.setattr(worlds, "find", counted_find)
    return db, seen


def test_an_owner_merge_parses_its_branch_once_and_looks_its_world_up_once(counted):
    db, seen = counted
    assert db.call("merge", branch="w").text == "merged 1 change from w into main"
    assert seen == {"parse": 1, "Database.world": 1, "worlds.find": 1}


def test_an_agents_merge_too_through_its_rights_and_audit(counted):
    db, seen = counted
    bot = db.as_agent("bot")
    seen.clear()
    assert db.call("merge", bot, branch="w").text == "merged 1 change from w into main"
    assert seen["parse"] == 1
    assert seen["Database.world"] == 1


@pytest.mark.parametrize(
    "op, args",
    [
        ("diff", {"branch": "w"}),
        ("merge_preview", {"branch": "w"}),
        ("rebase", {"branch": "w"}),
        ("set_meta", {"branch": "w", "meta": {"a": 1}}),
        ("discard", {"branch": "w"}),
    ],
)
def test_the_operations_on_a_world_parse_its_branch_once(counted, op, args):
    db, seen = counted
    db.call(op, **args)
    assert seen["parse"] == 1, seen
    assert seen["Database.world"] == 1, seen
