"""Trust holds (issue 23): no way around a merge policy, a merge check or a declared scope.

A row rebased "ours" over a parent's newer change is an overwrite when it merges; rules and
merge checks follow a table or column through the world's renames (judged by main's names); a
dropped column is judged by the values it removes; the scope a fork declared stays."""

from __future__ import annotations

import pytest
from mcp_lines import Server, tool_error

from chronos_lite import Caller, ChronosError

BOT = ["read", "fork", "write_own", "write_main", "merge_own"]


@pytest.fixture
def crm(db):
    db.sql("create table users(id integer primary key, name text, email text)")
    db.sql("create table payments(id integer primary key, amount int)")
    db.sql("insert into users values (1, 'ann', 'a@x'), (2, 'bob', 'b@x'), (3, 'cy', null)")
    db.sql("insert into payments values (1, 10), (2, 20)")
    db.call("agent", action="create", name="bot", rights=BOT)
    return db


def bot(db) -> Caller:
    return db.as_agent("bot")


def policy(db, **rules) -> None:
    db.call("set_merge_policy", name="guard", rules=rules, agents=["bot"])


def bot_world(db, name: str, *statements: str, meta: dict | None = None) -> None:
    db.call("fork", bot(db), name=name, **({"meta": meta} if meta else {}))
    for sql in statements:
        db.call("sql", bot(db), branch=name, sql=sql)


def held(db, name: str, **args) -> str:
    """The bot's merge of ``name``, which must be held and queued: its refusal's text."""
    with pytest.raises(ChronosError) as info:
        db.call("merge", bot(db), branch=name, **args)
    assert info.value.code == "42501", info.value
    assert str(info.value).endswith("; it's queued (SHOW REVIEWS)"), info.value
    return str(info.value)


def queued(db) -> list[str]:
    return [r["world"] for r in db.call("reviews").data["reviews"]]


# --- 2. overwrite: false is not laundered through rebase ------------------------------------


@pytest.mark.parametrize("settle", [{"resolve": "ours"}, {"rows": {"users/1": "ours"}}])
def test_a_row_rebased_ours_over_the_parents_change_is_an_overwrite_at_merge(crm, settle):
    policy(crm, overwrite=False)
    bot_world(crm, "w2", "update users set name = 'agent' where id = 1")
    crm.sql("update users set name = 'person 2' where id = 1")
    crm.call("rebase", bot(crm), branch="w2", **settle)
    crm.call("sql", bot(crm), branch="w2", sql="update users set email = 'new' where id = 1")
    text = held(crm, "w2")
    assert (
        "it overwrites 1 row its parent changed since the fork (users/1) (overwrite is false)"
        in text
    )
    assert crm.query("select name from users where id = 1") == [{"name": "person 2"}]
    assert queued(crm) == ["w2"]


def test_over_mcp_an_agent_cant_launder_an_overwrite_or_drop_its_scope(crm, folder):
    """`chronos mcp --agent bot`: rebase ours then merge is held; set_meta can't drop the
    scope, nor loosen it."""
    policy(crm, overwrite=False, require_scope=True)
    s = Server(folder, "--agent", "bot")
    try:
        s.initialize()
        assert not s.call("fork", {"name": "w", "meta": {"may_change": "users"}})["isError"]
        update = "update users set name = 'agent' where id = 1"
        assert not s.call("sql", {"branch": "w", "sql": update})["isError"]
        crm.sql("update users set name = 'person' where id = 1")  # (a person, on main)
        assert not s.call("rebase", {"branch": "w", "resolve": "ours"})["isError"]
        text = tool_error(s.call("set_meta", {"branch": "w", "meta": {"may_change": None}}))
        assert "which has require_scope: a world's declared scope stays" in text
        wider = {"may_change": "users, payments"}
        assert not s.call("set_meta", {"branch": "w", "meta": wider})["isError"]
        pay = "update payments set amount = 0 where id = 1"
        assert not s.call("sql", {"branch": "w", "sql": pay})["isError"]
        text = tool_error(s.call("merge", {"branch": "w"}))
        assert "it overwrites 1 row its parent changed since the fork (users/1)" in text
        assert "it changes payments/1's amount, outside its may_change (users)" in text
    finally:
        s.kill()
    assert crm.query("select name from users where id = 1") == [{"name": "person"}]
    assert crm.query("select amount from payments where id = 1") == [{"amount": 10}]
    assert queued(crm) == ["w"]


def test_a_rebase_that_keeps_the_parents_row_leaves_no_mark(crm):
    policy(crm, overwrite=False)
    bot_world(crm, "w", "update users set name = 'agent' where id = 1")
    crm.sql("update users set name = 'person' where id = 1")
    crm.call("rebase", bot(crm), branch="w", resolve="theirs")
    crm.call("sql", bot(crm), branch="w", sql="update users set email = 'e' where id = 1")
    assert crm.call("merge", bot(crm), branch="w").text.startswith("merged ")
    assert crm.query("select name, email from users where id = 1") == [
        {"name": "person", "email": "e"}
    ]


def test_a_row_a_person_merged_is_no_longer_marked(crm):
    """The mark goes with the row once it merged (a person's partial merge of it)."""
    policy(crm, overwrite=False)
    bot_world(crm, "w", "update users set name = 'agent' where id in (1, 2)")
    crm.sql("update users set name = 'person' where id = 1")
    crm.call("rebase", bot(crm), branch="w", resolve="ours")
    crm.call("merge", branch="w", only_keys=["users/1"])  # (a person: no policy)
    crm.call("sql", bot(crm), branch="w", sql="update users set email = 'e' where id = 1")
    assert crm.call("merge", bot(crm), branch="w").text.startswith("merged ")
    assert crm.query("select name, email from users where id < 3 order by id") == [
        {"name": "agent", "email": "e"},
        {"name": "agent", "email": "b@x"},
    ]
    assert queued(crm) == []


# --- 3. a merge check ON TABLES follows a renamed table ------------------------------------


def test_a_check_on_a_table_the_world_renamed_runs_and_refuses(crm):
    crm.sql(
        "CREATE MERGE CHECK positive ON TABLES (payments) AS select id from payments "
        "where amount < 0"
    )
    bot_world(crm, "w", "alter table payments rename to pay_raw", "update pay_raw set amount = -5")
    with pytest.raises(ChronosError) as info:
        crm.call("merge", bot(crm), branch="w")
    assert (info.value.code, str(info.value)) == (
        "23514",
        "merge check positive fails on the merge's result (no such table: payments; the merge "
        "renames payments to pay_raw): fix it (CREATE OR REPLACE MERGE CHECK positive ...) or "
        "drop it; nothing was merged",
    )
    assert crm.query("select amount from payments order by id") == [
        {"amount": 10},
        {"amount": 20},
    ]
    assert queued(crm) == []  # (refused, not held: a check that can't run never passes)


# --- 4. review_tables and review_columns follow renames -------------------------------------


def test_review_columns_follow_a_renamed_column(crm):
    policy(crm, review_columns=["users.email"], schema=True)
    bot_world(
        crm,
        "w",
        "alter table users rename column email to email2",
        "update users set email2 = 'evil@x' where id = 1",
    )
    assert "it changes users.email (review_columns)" in held(crm, "w")
    assert crm.query("select email from users where id = 1") == [{"email": "a@x"}]
    bot_world(crm, "r", "alter table users rename column email to mail")  # (the rename alone)
    assert "it changes users.email (review_columns)" in held(crm, "r")
    bot_world(
        crm,
        "t",
        "alter table users rename to people",
        "update people set email = 'evil@x' where id = 2",
    )
    assert "it changes users.email (review_columns)" in held(crm, "t")
    assert crm.query("select email from users order by id") == [
        {"email": "a@x"},
        {"email": "b@x"},
        {"email": None},
    ]
    assert queued(crm) == ["w", "r", "t"]


def test_review_tables_and_tables_follow_a_renamed_table(crm):
    policy(crm, review_tables=["payments"], schema=True)
    bot_world(
        crm, "w", "alter table payments rename to payments_v2", "update payments_v2 set amount = 0"
    )
    assert "it changes payments" in held(crm, "w")
    assert crm.query("select amount from payments order by id") == [
        {"amount": 10},
        {"amount": 20},
    ]
    policy(crm, tables=["users"], schema=True)
    bot_world(crm, "u", "alter table payments rename to users_extra")
    assert "it changes payments, not in its tables (users)" in held(crm, "u")


def test_may_change_follows_a_renamed_table(crm):
    bot_world(
        crm,
        "w",
        "alter table payments rename to payments_v2",
        "update payments_v2 set amount = 0",
        meta={"may_change": "payments_v2"},
    )
    with pytest.raises(ChronosError, match="outside its may_change"):
        crm.call("merge", branch="w")
    assert crm.query("select amount from payments order by id") == [
        {"amount": 10},
        {"amount": 20},
    ]


# --- 5. DROP COLUMN is judged as what it removes --------------------------------------------


def test_drop_column_is_seen_by_review_columns_max_rows_and_max_deletes(crm):
    policy(crm, review_columns=["users.email"], max_rows=1, max_deletes=0, schema=True)
    bot_world(crm, "w", "alter table users drop column email")
    text = held(crm, "w")
    assert "it drops column users.email, 2 values (review_columns)" in text
    assert "it changes 2 rows (at most 1)" in text
    assert "it drops column users.email, 2 values (at most 0 deletes)" in text
    assert crm.query("select email from users order by id") == [
        {"email": "a@x"},
        {"email": "b@x"},
        {"email": None},
    ]
    policy(crm, max_deletes=0, schema=True)  # (a column with no values loses nothing)
    bot_world(
        crm, "e", "alter table users add column tag text", "alter table users drop column tag"
    )
    assert crm.call("merge", bot(crm), branch="e").text.startswith("merged ")


def test_drop_column_is_seen_by_confirm_deletes_over_and_deletes_per_hour(crm):
    policy(crm, confirm_deletes_over=1, schema=True)
    bot_world(crm, "w", "alter table users drop column email")
    assert "it drops column users.email, 2 values (over confirm_deletes_over, 1" in held(crm, "w")
    policy(crm, confirm_deletes_over=None, deletes_per_hour=2, schema=True)
    bot_world(crm, "d", "alter table users drop column name")  # (3 names: 1 over)
    assert "in the last hour it deletes 3 rows (at most 2 an hour)" in held(crm, "d")
    policy(crm, deletes_per_hour=3, schema=True)
    bot_world(crm, "e", "delete from users where id = 3")
    assert crm.call("merge", bot(crm), branch="e").text.startswith("merged ")
    bot_world(crm, "f", "alter table users drop column name")  # (2 names now: 3 in the hour)
    assert crm.call("merge", bot(crm), branch="f").text.startswith("merged ")
    bot_world(crm, "g", "delete from users where id = 2")  # (the dropped names are counted)
    assert "in the last hour it deletes 4 rows (at most 3 an hour)" in held(crm, "g")
    assert crm.query("select * from users order by id") == [
        {"id": 1, "email": "a@x"},
        {"id": 2, "email": "b@x"},
    ]


def test_drop_table_is_seen_by_review_columns(crm):
    policy(crm, review_columns=["payments.amount"], schema=True)
    bot_world(crm, "w", "drop table payments")
    assert "it changes payments.amount (review_columns)" in held(crm, "w")
    assert crm.query("select count(*) as n from payments") == [{"n": 2}]


# --- 8. the scope a fork declared stays -----------------------------------------------------


def test_the_scope_declared_at_fork_is_held_whatever_meta_says_later(crm):
    policy(crm, require_scope=True)
    bot_world(crm, "w", "update payments set amount = 0", meta={"may_change": "users"})
    with pytest.raises(ChronosError, match="require_scope"):
        crm.call("set_meta", bot(crm), branch="w", meta={"may_change": None})
    crm.call("set_meta", bot(crm), branch="w", meta={"may_change": "users, payments"})
    assert "outside its may_change (users)" in held(crm, "w")
    assert crm.query("select amount from payments order by id") == [
        {"amount": 10},
        {"amount": 20},
    ]
    (review,) = crm.call("reviews").data["reviews"]
    assert review["scope"] == {"may_change": "users, payments", "at fork": "may_change users"}


def test_a_persons_set_meta_may_take_the_scope_out(crm):
    crm.call("fork", name="mine", meta={"may_change": "users"})
    crm.sql("update payments set amount = 1 where id = 1", branch="mine")
    with pytest.raises(ChronosError, match="outside its declared scope"):
        crm.call("merge", branch="mine")
    crm.call("set_meta", branch="mine", meta={"may_change": None})
    assert crm.call("merge", branch="mine").text.startswith("merged ")


@pytest.mark.parametrize("tenant", ["1", "true", "1 = 1", "id = id", "id is not null or 1"])
def test_a_tenant_condition_that_selects_every_row_is_not_a_scope(crm, tenant):
    policy(crm, require_scope=True)
    with pytest.raises(ChronosError, match="selects every row") as info:
        crm.call("fork", bot(crm), name="w", meta={"tenant": tenant})
    assert info.value.code == "42501"
    assert [w.name for w in crm.database.worlds()] == []
    bot_world(crm, "ok", meta={"tenant": "id = 1"})
    with pytest.raises(ChronosError, match="selects every row"):
        crm.call("set_meta", bot(crm), branch="ok", meta={"tenant": tenant})
    bot_world(crm, "both", meta={"may_change": "users", "tenant": tenant})  # (may_change scopes)
    with pytest.raises(ChronosError, match="selects every row"):
        crm.call("set_meta", bot(crm), branch="both", meta={"may_change": None})
    assert crm.database.world("both").meta == {"may_change": "users", "tenant": tenant}


@pytest.mark.parametrize("tenant", ["id = ?", "id = ?1", "id = :id", "id = @id", "id = $id"])
def test_a_tenant_with_a_parameter_is_refused_at_fork(crm, tenant):
    with pytest.raises(ChronosError, match="has a parameter") as info:
        crm.call("fork", name="q", meta={"tenant": tenant})
    assert info.value.code == "22023"
    assert crm.database.worlds() == []
    assert crm.call("fork", name="s", meta={"tenant": "name = ':id'"})  # (a string holds one)


def test_a_tenant_with_a_parameter_is_refused_at_merge_not_a_crash(crm):
    crm.call("fork", name="q")
    with crm.database.write() as conn:  # (as a file an older version wrote)
        conn.execute("""update _chronos_worlds set meta = '{"tenant": "id = ?"}'""")
    crm.sql("update users set name = 'q' where id = 1", branch="q")
    with pytest.raises(ChronosError, match="has a parameter") as info:
        crm.call("merge", branch="q")
    assert info.value.code == "22023"
    assert crm.query("select name from users where id = 1") == [{"name": "ann"}]


def test_a_tenant_is_judged_after_a_world_changed_the_shadow_tables(crm):
    """The tenant check reads main's tables brought up to date first: a world's ADD COLUMN
    changed main's schema (chronos' shadow tables), and the sync of chronos' own tables ran
    under the check's read-only guard (apsw.AuthError out of the fork before). Found by the
    trust fuzz."""
    policy(crm, require_scope=True, schema=True)
    bot_world(crm, "a", "alter table users add column extra int", meta={"tenant": "id = 1"})
    bot_world(crm, "t", meta={"tenant": "id = 2"})
    assert crm.database.world("t").meta == {"tenant": "id = 2"}
