"""A page of diff and merge_preview reads what the page holds (its counts come from SQL), and
whatever work is left in Python keeps to the caller's time limit (issue 23, finding 12)."""

from __future__ import annotations

import pytest

import chronos_lite
from chronos_lite.errors import ChronosError
from chronos_lite.merge import changes

ROWS = 20_000


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """main with ROWS rows; w changed every row (10% deleted, the rest updated) and added 2,000
    rows; main then changed every 5th row; w2, forked from w, changed every other row and w
    changed each 3rd row after that fork."""
    folder = tmp_path_factory.mktemp("paging") / "db"
    db = chronos_lite.init(folder)
    db.sql("create table t(id integer primary key, v integer, note text)")
    db.sql(
        f"with recursive n(i) as (select 1 union all select i + 1 from n where i < {ROWS}) "
        "insert into t(id, v, note) select i, i, 'row' from n"
    )
    db.call("fork", name="w")
    db.sql("update t set v = v + 1 where id % 10 != 0", branch="w")
    db.sql("delete from t where id % 10 = 0", branch="w")
    db.sql(
        f"with recursive n(i) as (select {ROWS + 1} union all select i + 1 from n "
        f"where i < {ROWS + 2000}) insert into t(id, v, note) select i, 0, 'new' from n",
        branch="w",
    )
    db.sql("update t set note = 'main' where id % 5 = 0")
    db.call("fork", name="w2", **{"from": "w"})
    db.sql("update t set note = 'w2' where id % 2 = 0", branch="w2")
    db.sql("update t set v = -v where id % 3 = 0", branch="w")
    yield db
    db.close()


@pytest.fixture
def built(monkeypatch):
    """How many changed rows calls read into Python (Change objects made)."""
    count = [0]
    made = changes.Change.__post_init__

    def counting(self):
        count[0] += 1
        made(self)

    monkeypatch.setattr(changes.Change, "__post_init__", counting)
    return count


def test_a_page_of_diff_reads_the_page_only(big, built):
    reply = big.call("diff", branch="w", limit=5, offset=1_999)
    assert reply.text.splitlines()[0] == (
        f"{ROWS + 2000} changes on w (t: 2000 deleted, 18000 updated, 2000 inserted)"
    )
    assert [c["id"] for c in reply.data["changes"]] == ["20000", "1", "2", "3", "4"]
    assert [c["kind"] for c in reply.data["changes"]] == ["delete"] + ["update"] * 4
    assert built[0] == 5
    assert big.call("diff", branch="w", count=True).data["count"] == ROWS + 2000
    sql = big.call("diff", branch="w", as_sql=True, limit=2, offset=21_999).text
    assert sql.splitlines()[1:3] == [
        """INSERT INTO "t"("id", "v", "note") VALUES (22000, 0, 'new');""",
        "-- (showing changes 22000-22000 of 22000)",
    ]
    assert built[0] == 6


def test_a_page_of_merge_preview_reads_the_page_only(big, built):
    reply = big.call("merge_preview", branch="w", limit=3, offset=2_000)
    assert reply.data["total"] == ROWS + 2000
    # every 5th row main changed too: each of those the world deleted or updated conflicts
    assert reply.data["conflicts"] == ROWS // 5
    assert reply.data["deletes"] == 0  # (each row w deleted, main changed: all conflicts)
    assert [(r["id"], r["outcome"]) for r in reply.data["rows"]] == [
        ("1", "apply"),
        ("2", "apply"),
        ("3", "apply"),
    ]
    assert built[0] == 3  # (what reads the changed columns: found in SQL, no row read)
    assert "What reads the changed columns" not in reply.text  # (the first page's)
    first = big.call("merge_preview", branch="w", limit=3)
    assert "What reads the changed columns: 3 changed columns on w" in first.text
    assert (
        big.call("diff", branch="w", readers=True).data["uncovered"]
        == first.data["readers"]["uncovered"]
    )
    assert built[0] == 6
    built[0] = 3
    settled = big.call("merge_preview", branch="w", limit=3, resolve="ours")
    assert (settled.data["conflicts"], settled.data["deletes"]) == (0, ROWS // 10)
    assert built[0] == 6


def test_by_columns_reads_only_the_rows_both_changed(big, built):
    """by_columns: the rows both sides changed are read to compare their columns (w changed
    v, main changed note: apart, so combined), and no others."""
    reply = big.call("merge_preview", branch="w", limit=2, by_columns=True)
    assert reply.data["conflicts"] == ROWS // 10  # (the deletes main had changed: conflicts)
    both_updated = ROWS // 5 - ROWS // 10
    assert built[0] == both_updated + 2


def test_a_world_of_a_world_pages_alike(big, built):
    reply = big.call("merge_preview", branch="w2", limit=4, offset=100)
    # w2 changed the even rows w kept; w changed every 3rd after the fork: both, each 6th
    kept = [i for i in range(1, ROWS + 2001) if i % 2 == 0 and (i > ROWS or i % 10)]
    assert reply.data["total"] == len(kept)
    assert reply.data["conflicts"] == sum(1 for i in kept if i % 3 == 0)
    assert [r["id"] for r in reply.data["rows"]] == [str(i) for i in kept[100:104]]
    assert built[0] == 4


def _passing_deadline(monkeypatch, db, after: int) -> list[int]:
    """The call's deadline passes once ``after`` changed rows were read in Python (as time
    passes while it works): the rows read in all."""
    count = [0]
    made = changes.Change.__post_init__

    def counting(self):
        count[0] += 1
        if count[0] == after:
            db.database.bounds.deadline = 0.0
        made(self)

    monkeypatch.setattr(changes.Change, "__post_init__", counting)
    return count


@pytest.mark.parametrize(
    "call",
    [
        {"name": "diff", "branch": "w", "to": "main"},
        {"name": "merge_preview", "branch": "w2", "into": "main"},
        {"name": "merge_preview", "branch": "w", "by_columns": True},
    ],
    ids=["compare", "into", "by_columns"],
)
def test_python_work_stops_at_the_time_limit(big, monkeypatch, call):
    read = _passing_deadline(monkeypatch, big, after=10)
    caller = chronos_lite.Caller(max_query_ms=60_000)
    args = dict(call)
    with pytest.raises(ChronosError) as err:
        big.call(args.pop("name"), caller, **args)
    assert err.value.code == "57014"
    assert "statement timeout" in str(err.value) and "60,000 ms" in str(err.value)
    assert read[0] < 10 + changes.CHECK_EVERY  # stopped, not run on over every row
    assert big.call("diff", branch="w", count=True).data["count"] == ROWS + 2000


def test_the_counts_stop_at_a_tiny_time_limit(big):
    with pytest.raises(ChronosError) as err:
        big.call("merge_preview", chronos_lite.Caller(max_query_ms=1), branch="w", limit=1)
    assert err.value.code == "57014"
