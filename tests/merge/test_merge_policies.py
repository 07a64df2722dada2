"""Merge policies, reviews, declared scope and production mode: which merges land on their own,
and which wait for a person with their reasons.

Each rule is tried at its boundary (at the limit it lands, one over it waits) with the exact
reason; a held merge leaves nothing of itself but its row in reviews; a person approves at the
version they read; a policy's reviewer decides first; production holds every agent's merge."""

from __future__ import annotations

import time

import pytest
from helpers import file_dump

from chronos_lite import Caller, ChronosError

BOT = ["read", "fork", "write_own", "write_main", "merge_own"]


@pytest.fixture
def crm(db):
    db.sql("create table lists(id integer primary key, name text)")
    db.sql("create table leads(id integer primary key, list int, name text, status text)")
    db.sql("create table payments(id integer primary key, amount int)")
    db.sql("insert into lists values (1, 'a'), (2, 'b')")
    db.sql(
        "insert into leads values (1, 1, 'x', 'new'), (2, 2, 'y', 'new'), (3, 1, 'z', 'new'), "
        "(4, 2, 'w', 'new')"
    )
    db.sql("insert into payments values (1, 10)")
    db.call("agent", action="create", name="bot", rights=BOT)
    return db


def bot(db) -> Caller:
    return db.as_agent("bot")


def policy(db, **rules) -> None:
    db.call("set_merge_policy", name="small", rules=rules, agents=["bot"])


def bot_world(db, name: str, *statements: str, meta: dict | None = None) -> None:
    db.call("fork", bot(db), name=name, **({"meta": meta} if meta else {}))
    for sql in statements:
        db.call("sql", bot(db), branch=name, sql=sql)


def held(db, name: str) -> str:
    """The bot's merge of ``name``, which must be held: its refusal's text."""
    with pytest.raises(ChronosError) as info:
        db.call("merge", bot(db), branch=name)
    assert info.value.code == "42501", info.value
    text = str(info.value)
    assert text.endswith("; it's queued (SHOW REVIEWS)"), text
    return text


def lands(db, name: str) -> None:
    assert db.call("merge", bot(db), branch=name).text.startswith("merged ")


def _without(folder, *tables: str) -> list[str]:
    """The file's dump but for these tables (and the schema sync's own mark)."""
    return [
        line
        for line in file_dump(folder)
        if not any(f'"{t}"' in line for t in tables) and "synced_schema" not in line
    ]


# (rules, statements at the limit, statements one over it, the reason one over gives)
BOUNDARIES = [
    (
        {"max_rows": 2},
        ["update leads set status = 'won' where id in (1, 2)"],
        ["update leads set status = 'lost' where id in (1, 2, 3)"],
        "it changes 3 rows (at most 2)",
    ),
    (
        {"max_deletes": 1},
        ["delete from leads where id = 4"],
        ["delete from leads where id in (1, 2)"],
        "it deletes 2 rows (at most 1)",
    ),
    (
        {"tables": ["leads"]},
        ["update leads set status = 'won' where id = 1"],
        ["update leads set status = 'won' where id = 1", "update lists set name = 'q'"],
        "it changes lists, not in its tables (leads)",
    ),
    (
        {"review_tables": ["payments"]},
        ["update leads set status = 'won' where id = 1"],
        ["update payments set amount = 11"],
        "it changes payments (review_tables)",
    ),
    (
        {"review_columns": ["leads.name"]},
        ["update leads set status = 'won' where id = 1"],
        ["update leads set name = 'X' where id = 1"],
        "it changes leads.name (review_columns)",
    ),
    (
        {"schema": False},
        ["update leads set status = 'won' where id = 1"],
        ["alter table leads add column score int"],
        'it changes the schema (ALTER TABLE "leads" ADD COLUMN score int) (schema is false)',
    ),
    (
        {"confirm_deletes_over": 1},
        ["delete from leads where id = 4"],
        ["delete from leads where id in (1, 2)"],
        "it deletes 2 rows (over confirm_deletes_over, 1: a person confirms the count)",
    ),
]


@pytest.mark.parametrize(("rules", "at", "over", "reason"), BOUNDARIES)
def test_each_rule_at_its_boundary(crm, folder, rules, at, over, reason):
    policy(crm, **rules)
    bot_world(crm, "at", *at)
    lands(crm, "at")
    bot_world(crm, "over", *over)
    before = _without(folder, "_chronos_reviews", "_chronos_audit")
    text = held(crm, "over")
    assert text == (
        f"merging over needs a person's review (merge policy small: {reason}); it's queued "
        f"(SHOW REVIEWS)"
    )
    assert _without(folder, "_chronos_reviews", "_chronos_audit") == before  # nothing merged
    assert [r["world"] for r in crm.call("reviews").data["reviews"]] == ["over"]


def test_per_hour_rules_count_the_agents_other_merges_into_main(crm):
    policy(crm, rows_per_hour=3, deletes_per_hour=1)
    bot_world(crm, "one", "update leads set status = 'won' where id in (1, 2)")
    lands(crm, "one")
    bot_world(crm, "two", "delete from leads where id = 4")
    lands(crm, "two")  # (3 rows this hour, 1 delete: at both limits)
    bot_world(crm, "three", "delete from leads where id = 3")
    assert held(crm, "three") == (
        "merging three needs a person's review (merge policy small: with its other merges "
        "into main in the last hour it changes 4 rows (at most 3 an hour); with its other "
        "merges into main in the last hour it deletes 2 rows (at most 1 an hour)); it's queued "
        "(SHOW REVIEWS)"
    )


def test_max_age_and_overwrite(crm):
    policy(crm, max_age="1h", overwrite=False)
    bot_world(crm, "young", "update leads set status = 'won' where id = 1")
    lands(crm, "young")
    bot_world(crm, "old", "update leads set status = 'lost' where id = 2")
    with crm.database.write(crm.database.main.conn) as conn:  # (forked two hours ago)
        conn.execute(
            "update _chronos_worlds set created = ? where name = 'old'", (time.time() - 7200,)
        )
    assert "its branch was forked 2 h ago (at most 1 h)" in held(crm, "old")
    bot_world(crm, "over", "update leads set status = 'lost' where id = 3")
    crm.sql("update leads set status = 'main' where id = 3")
    with pytest.raises(ChronosError, match="conflict"):  # (a conflict is not a rule)
        crm.call("merge", bot(crm), branch="over")
    text = held_with(crm, "over", resolve="ours")
    assert "it overwrites 1 row its parent changed since the fork (leads/3) (overwrite is " in text


def held_with(db, name: str, **args) -> str:
    with pytest.raises(ChronosError) as info:
        db.call("merge", bot(db), branch=name, **args)
    assert "queued" in str(info.value), info.value
    return str(info.value)


def test_several_broken_rules_are_joined_and_check_merge_policy_says_the_same(crm):
    policy(crm, max_rows=1, max_deletes=0, review_tables=["payments"])
    bot_world(crm, "bot-2", "delete from leads where id = 4", "update payments set amount = 1")
    said = crm.call("check_merge_policy", branch="bot-2", name="small").text
    reasons = (
        "merge policy small: it changes 2 rows (at most 1); it deletes 1 row (at most 0); "
        "it changes payments (review_tables)"
    )
    assert said == f"bot-2's merge would wait for a person under {reasons}"
    assert held(crm, "bot-2") == (
        f"merging bot-2 needs a person's review ({reasons}); it's queued (SHOW REVIEWS)"
    )
    what_if = crm.call(
        "check_merge_policy",
        branch="bot-2",
        name="small",
        rules={"max_rows": 5, "max_deletes": None, "review_tables": []},
    )
    assert what_if.text == "bot-2's merge would go through on its own under merge policy small"
    only_rules = crm.call("check_merge_policy", branch="bot-2", rules={"max_deletes": 0})
    assert only_rules.text == (
        "bot-2's merge would wait for a person under those rules: it deletes 1 row (at most 0)"
    )
    assert crm.call("merge_policies").data["policies"][0]["rules"]["max_rows"] == 1  # unsaved


def test_unknown_rules_and_wrong_types_are_refused(crm, folder):
    before = file_dump(folder)
    cases = [
        ({"max_rowz": 1}, "unknown key 'max_rowz' in 'rules': it takes max_rows, max_deletes, "),
        ({"max_rows": -1}, "'rules'['max_rows'] must be"),
        ({"max_age": "soon"}, 'merge policy rule max_age is a length of time ("1h"'),
        ({"critical": "yes"}, "'rules'['critical'] must be true or false"),
        ({"check_reads": "yes"}, "'rules'['check_reads'] must be true or false, not \"yes\""),
        ({"review_tables": ["paymentz"]}, "review_tables: no table 'paymentz' on main"),
        ({"review_columns": ["leads.mail"]}, "review_columns: leads has no column 'mail'"),
        ({"reviewer": "nobody"}, "reviewer 'nobody' is no agent"),
    ]
    for rules, message in cases:
        with pytest.raises(ChronosError) as info:
            crm.call("set_merge_policy", name="p", rules=rules)
        assert message in str(info.value), (rules, str(info.value))
        assert info.value.code == "22023"
    with pytest.raises(ChronosError, match="no agent ghost"):
        crm.call("set_merge_policy", name="p", rules={"max_rows": 1}, agents=["ghost"])
    assert file_dump(folder) == before


def test_set_alter_drop_and_the_listing(crm):
    crm.sql(
        "create merge policy small with (max_rows = 2, max_deletes = 0, review_tables = "
        "'payments', reviewer = bot)"
    )
    crm.sql("alter merge policy small set (max_rows = 5)")
    crm.sql("alter agent bot set (policy = small)")
    text = crm.call("merge_policies").text
    assert text.splitlines()[2].split("|")[1:3] == ["        5 ", "           0 "]
    assert "reviewer bot" in text
    assert text.endswith("agent bot keeps to small")
    with pytest.raises(ChronosError) as info:
        crm.sql("drop merge policy small")
    assert info.value.code == "55006"
    assert "agent bot keeps to merge policy small" in str(info.value)
    assert crm.call("drop_merge_policy", name="small", release_agents=True).text == (
        "dropped merge policy small; bot keeps to none now"
    )
    assert crm.call("merge_policies").text.endswith("no agent keeps to a merge policy")


def test_safe_mode_drafts_the_sql_and_changes_nothing(crm, folder):
    safe = Caller(mode="safe")
    before = file_dump(folder)
    with pytest.raises(ChronosError) as info:
        crm.call(
            "set_merge_policy",
            safe,
            name="small",
            rules={"max_rows": 2, "review_tables": ["payments"], "schema": False},
            agents=["bot"],
        )
    assert info.value.code == "42501"
    assert str(info.value).endswith(
        "CREATE MERGE POLICY small WITH (max_rows = 2, review_tables = 'payments', schema = "
        "false); ALTER AGENT bot SET (policy = small);"
    )
    with pytest.raises(ChronosError, match=r"DROP MERGE POLICY small CASCADE;$"):
        crm.call("drop_merge_policy", safe, name="small", release_agents=True)
    assert file_dump(folder) == before
    for statement in str(info.value).split("sql): ")[1].split(";")[:-1]:
        crm.sql(statement)  # (the draft runs as written)
    assert crm.call("merge_policies").data["agents"] == {"bot": "small"}


def test_reviews_then_a_person_approves_at_the_version_read(crm):
    policy(crm, max_rows=2)
    bot_world(crm, "bot-2", "update leads set status = 'won'", meta={"intent": "close"})
    held(crm, "bot-2")
    (review,) = crm.call("reviews").data["reviews"]
    assert review["world"] == "bot-2" and review["owner"] == "bot"
    assert review["policy"] == "small" and review["reasons"] == ["it changes 4 rows (at most 2)"]
    assert review["changes"] == "leads: 0 deleted, 4 updated, 0 inserted"
    assert review["changed_since"] is False
    version = review["version"]
    with pytest.raises(ChronosError, match="an agent can't merge it"):
        crm.call("merge", bot(crm), branch="bot-2")
    with pytest.raises(ChronosError, match="an agent can't discard it"):
        crm.call("discard", bot(crm), branch="bot-2")
    crm.call("sql", bot(crm), branch="bot-2", sql="update leads set status = 'lost' where id = 1")
    assert crm.call("reviews").data["reviews"][0]["changed_since"] is True
    with pytest.raises(ChronosError) as stale:
        crm.sql(f"merge world bot-2 at version {version}")
    assert stale.value.code == "40001"
    now = crm.database.world("bot-2").version
    assert crm.call("merge", branch="bot-2", version=now).text.startswith("merged 4 changes")
    assert crm.call("reviews").data["reviews"] == []


def test_a_policys_reviewer_decides_first(crm):
    crm.call("agent", action="create", name="lead", rights=["read"])
    policy(crm, max_rows=1, reviewer="lead")
    lead = crm.as_agent("lead")
    bot_world(crm, "a", "update leads set status = 'won' where id in (1, 2)")
    held(crm, "a")
    with pytest.raises(ChronosError, match="agent bot can't review a: it is its own world"):
        crm.call("review", bot(crm), branch="a", verdict="approve", reason="mine")
    assert crm.call("review", lead, branch="a", verdict="pass", reason="ask Ada").text == (
        "pass a: left to a person (ask Ada)"
    )
    assert crm.call("reviews").data["reviews"][0]["verdict"] == "pass"
    crm.call("review", lead, branch="a", verdict="reject", reason="too wide")
    assert crm.call("reviews").text.count("reject by lead: too wide") == 1
    with pytest.raises(ChronosError, match="an agent can't merge it"):
        crm.call("merge", bot(crm), branch="a")
    crm.call("sql", bot(crm), branch="a", sql="update leads set status = 'x' where id = 3")
    with pytest.raises(ChronosError) as info:  # (it changed since it was held)
        crm.call("review", lead, branch="a", verdict="approve", reason="fine")
    assert info.value.code == "40001"
    bot_world(crm, "b", "update leads set status = 'won' where id in (1, 2)")
    held(crm, "b")
    crm.call("sql", lead, sql="review world b approve reason 'checked the two'")
    assert crm.query("select status from leads where id in (1, 2)") == [{"status": "won"}] * 2
    audit = crm.call("audit", agent="lead").data["entries"]
    assert any("checked the two" in str(e["args"]) for e in audit), audit
    assert [r["world"] for r in crm.call("reviews").data["reviews"]] == ["a"]


def test_production_holds_every_agents_merge_and_main_writes(crm):
    assert crm.call("mode").text.startswith("mode: development")
    crm.sql("set mode production")
    bot_world(crm, "p", "update leads set status = 'won' where id = 1")
    assert held(crm, "p") == (
        "merging p needs a person's review (the database is in production mode: every agent's "
        "merge waits for a person); it's queued (SHOW REVIEWS)"
    )
    with pytest.raises(ChronosError, match="the database is in production mode, so main"):
        crm.call("sql", bot(crm), sql="update leads set status = 'direct' where id = 2")
    crm.call("mode", mode="development")
    bot_world(crm, "d", "update leads set status = 'won' where id = 2")
    lands(crm, "d")


def test_declared_scope_is_held_to_at_merge(crm):
    policy(crm, require_scope=True)
    with pytest.raises(ChronosError, match="which has require_scope: declare what the world"):
        crm.call("fork", bot(crm), name="loose", meta={"intent": "tidy"})
    scoped = {"may_change": "leads.status, lists", "tenant": "list = 1", "intent": "close"}
    bot_world(crm, "s", "update leads set status = 'won' where id = 1", meta=scoped)
    lands(crm, "s")
    bot_world(crm, "n", "update leads set name = 'N' where id = 3", meta=scoped)
    assert "it changes leads/3's name, outside its may_change (leads.status, lists)" in held(
        crm, "n"
    )
    bot_world(crm, "t", "update leads set status = 'won' where id = 2", meta=scoped)
    assert "it changes leads/2, outside its tenant (list = 1)" in held(crm, "t")
    crm.call("fork", name="mine", meta={"may_change": "lists"})  # (a person's world)
    crm.sql("update leads set status = 'x' where id = 4", branch="mine")
    with pytest.raises(ChronosError) as info:
        crm.call("merge", branch="mine")
    assert str(info.value) == (
        "merging mine goes outside its declared scope: it changes leads/4's status, outside "
        "its may_change (lists); nothing was merged (a person merges it with the scope taken "
        "out of its meta)"
    )
    for bad in ({"tenant": "1); drop table leads; --"}, {"may_change": 3}, {"max_rows": -1}):
        with pytest.raises(ChronosError):
            crm.call("set_meta", branch="mine", meta=bad)


def test_confirm_deletes_over_for_a_persons_merge(crm):
    policy(crm, confirm_deletes_over=1)
    bot_world(crm, "del", "delete from leads where id in (3, 4)")
    held(crm, "del")
    with pytest.raises(ChronosError, match="confirm the count with confirm_deletes=2"):
        crm.call("merge", branch="del")
    with pytest.raises(ChronosError, match="confirm_deletes is 1, but merging del deletes 2"):
        crm.call("merge", branch="del", confirm_deletes=1)
    assert crm.call("merge", branch="del", confirm_deletes=2).text.startswith("merged 2")


def test_a_check_is_one_more_reason_for_an_agent_and_merge_preview_shows_the_block(crm):
    crm.sql(
        "create merge check keep on tables (leads, lists) as "
        "select id from lists where id not in (select list from leads)"
    )
    policy(crm, max_rows=10)
    bot_world(crm, "a", "delete from leads where id = 1")
    bot_world(crm, "b", "delete from leads where id = 3")
    lands(crm, "a")
    preview = crm.call("merge_preview", bot(crm), branch="b")
    assert preview.data["blocked"] == (
        "merging b would wait for a person (merge policy small: it breaks merge check keep, "
        "which finds (id = 1))"
    )
    assert preview.text.splitlines()[2].split("|")[2].strip() == "blocked"
    assert "it breaks merge check keep, which finds (id = 1)" in held(crm, "b")
    assert crm.call("merge_preview", branch="b").data["blocked"] is None  # (a person's)


def test_an_agent_under_a_policy_never_sees_undo_merge(crm):
    from chronos_lite import REGISTRY

    crm.call("agent", action="alter", name="bot", rights=["read", "restore", "merge"])
    assert "undo_merge" in {op.name for op in REGISTRY.listed(bot(crm))}
    policy(crm, max_rows=10)
    assert "undo_merge" not in {op.name for op in REGISTRY.listed(bot(crm))}


def test_the_instructions_say_what_holds_the_agents_merges(crm, folder):
    from chronos_lite.mcp.core import instructions

    assert "merge policy" not in instructions(str(folder), bot(crm)).split("a merge policy may")[1]
    policy(crm, max_rows=10)
    said = instructions(str(folder), bot(crm))
    assert "You keep to merge policy small: merge_policies shows its rules" in said
    crm.call("mode", mode="production")
    said = instructions(str(folder), bot(crm))
    assert "the database is in production mode, so your merge waits in reviews" in said


def test_a_reviewer_cant_confirm_deletes_over_the_line(crm):
    crm.call("agent", action="create", name="lead", rights=["read"])
    policy(crm, confirm_deletes_over=0, reviewer="lead")
    bot_world(crm, "d", "delete from leads where id = 4")
    assert "over confirm_deletes_over, 0" in held(crm, "d")
    with pytest.raises(ChronosError, match="a reviewer can't confirm that; a person merges it"):
        lead = crm.as_agent("lead")
        crm.call("review", lead, branch="d", verdict="approve", reason="ok")
    assert crm.call("merge", branch="d", confirm_deletes=1).text.startswith("merged 1 change")


def test_a_tenant_condition_only_reads_rows(crm):
    """It may not read other branches or chronos' own tables: the merge is refused, saying so."""
    crm.call("fork", name="peek", meta={"tenant": "exists (select 1 from chronos_worlds)"})
    crm.sql("update leads set status = 'x' where id = 1", branch="peek")
    with pytest.raises(ChronosError, match="declared tenant .* can't be read on leads's rows"):
        crm.call("merge", branch="peek")
    crm.call("set_meta", branch="peek", meta={"tenant": "(select count(*) from _chronos_agents)"})
    with pytest.raises(ChronosError, match="can't be read on leads's rows"):
        crm.call("merge", branch="peek")
    assert crm.query("select status from leads where id = 1") == [{"status": "new"}]
