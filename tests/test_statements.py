"""Chronos' own SQL statements (statements.py): the parser, its errors, and each statement run
through the ``sql`` operation, as the owner and in safe mode."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from chronos_lite import ChronosError
from chronos_lite.operations.registry import REGISTRY, Caller
from chronos_lite.statements.chronos_sql import FORMS, GRAMMAR, is_chronos, parse

# Each form as an error shows it (GRAMMAR with the argument names left out).
SHOWN = [
    ("fork", "FORK WORLD <name> [FROM <branch>] [WITH (key = value, ...)]"),
    (
        "merge",
        "MERGE WORLD <branch> [INTO <world>] [AT VERSION <n>] [DRY RUN] "
        "[RESOLVE ours|theirs] [BY COLUMNS]",
    ),
    ("discard", "DISCARD WORLD <branch> [CASCADE]"),
    ("branches", "SHOW WORLDS"),
    ("history", "SHOW HISTORY [OF] [<branch>] [LIMIT <n>]"),
    ("diff", "DIFF [<branch>] [TO <other>] [AS SQL]"),
    ("rebase", "REBASE WORLD <branch> [AT VERSION <n>] [RESOLVE ours|theirs] [BY COLUMNS]"),
    ("checkpoint", "CHECKPOINT WORLD <branch> [AS] <checkpoint>"),
    ("rollback", "ROLLBACK WORLD <branch> TO <checkpoint>"),
    ("restore", "RESTORE WORLD <branch> TO '<moment>'"),
    ("undo_merge", "UNDO MERGE <branch> [SKIP CHANGED]"),
    ("undo_agent", "UNDO AGENT <name> SINCE '<moment>' [WHERE run_id = '<run>']"),
    ("use", "USE WORLD <branch>"),
    ("agent", "CREATE AGENT <name> [WITH (key = value, ...)]"),
    ("agent", "ALTER AGENT <name> SET (key = value, ...)"),
    ("agent", "DROP AGENT <name>"),
    ("agent", "SHOW AGENTS"),
    ("audit", "SHOW AUDIT [<agent>] [SINCE '<moment>'] [LIMIT <n>]"),
    (
        "set_merge_check",
        "CREATE OR REPLACE MERGE CHECK <name> [ON TABLES (<table>, ...)] "
        "[WITH (timeout_ms = <n>)] AS <select>",
    ),
    (
        "set_merge_check",
        "CREATE MERGE CHECK <name> [ON TABLES (<table>, ...)] [WITH (timeout_ms = <n>)] "
        "AS <select>",
    ),
    ("drop_merge_check", "DROP MERGE CHECK <name>"),
    ("merge_checks", "SHOW MERGE CHECKS"),
    ("set_merge_policy", "CREATE MERGE POLICY <name> [WITH (key = value, ...)]"),
    ("set_merge_policy", "ALTER MERGE POLICY <name> SET (key = value, ...)"),
    ("drop_merge_policy", "DROP MERGE POLICY <name> [CASCADE]"),
    ("merge_policies", "SHOW MERGE POLICIES"),
    ("reviews", "SHOW REVIEWS"),
    ("review", "REVIEW WORLD <branch> approve|reject|pass REASON '<reason>'"),
    ("mode", "SET MODE <mode>"),
    ("mode", "SHOW MODE"),
]


FORM = dict(SHOWN)  # (by operation: those with one form)


def test_the_forms_as_shown():
    """What an error shows for each form (and docs/sql.md lists), in GRAMMAR's order."""
    assert [(f.op, f.text) for f in FORMS] == SHOWN
    assert [op for op, _ in GRAMMAR] == [op for op, _ in SHOWN]


# --- the parser ----------------------------------------------------------------------------

# (statement, the session's branch, operation, arguments)
VALID = [
    # FORK WORLD
    ("FORK WORLD w", None, "fork", {"name": "w"}),
    ("fork world w", None, "fork", {"name": "w"}),
    ("Fork World task-1", None, "fork", {"name": "task-1"}),
    ('FORK WORLD "my world"', None, "fork", {"name": "my world"}),
    ("FORK WORLD w FROM main", None, "fork", {"name": "w", "from": "main"}),
    ("FORK WORLD w FROM before-migration", None, "fork", {"name": "w", "from": "before-migration"}),
    ('FORK WORLD w FROM "my world"', None, "fork", {"name": "w", "from": "my world"}),
    (
        "FORK WORLD w FROM main@'-10 minutes'",
        None,
        "fork",
        {"name": "w", "from": "main@-10 minutes"},
    ),
    (
        "FORK WORLD w FROM 'main@-10 minutes'",
        None,
        "fork",
        {"name": "w", "from": "main@-10 minutes"},
    ),
    ("FORK WORLD w FROM main@yesterday", None, "fork", {"name": "w", "from": "main@yesterday"}),
    (
        "FORK WORLD w FROM task-1@'2026-11-30 10:00'",
        None,
        "fork",
        {"name": "w", "from": "task-1@2026-11-30 10:00"},
    ),
    (
        "FORK WORLD w WITH (key = 'v', n = 3, f = -1.5, ok = true, none = null)",
        None,
        "fork",
        {"name": "w", "meta": {"key": "v", "n": 3, "f": -1.5, "ok": True, "none": None}},
    ),
    (
        "FORK WORLD w WITH (a = TRUE, b = False, c = NULL, d = -2, e = .5, \"my key\" = 'it''s')",
        None,
        "fork",
        {
            "name": "w",
            "meta": {"a": True, "b": False, "c": None, "d": -2, "e": 0.5, "my key": "it's"},
        },
    ),
    (
        "FORK WORLD w FROM main WITH (task = 'fix names')",
        None,
        "fork",
        {"name": "w", "from": "main", "meta": {"task": "fix names"}},
    ),
    (
        "fork world w with (task = 'fix names') from main@'-1 hour'",
        None,
        "fork",
        {"name": "w", "from": "main@-1 hour", "meta": {"task": "fix names"}},
    ),
    # MERGE WORLD, and MERGE ... DRY RUN: the preview
    ("MERGE WORLD w", None, "merge", {"branch": "w"}),
    ("MERGE WORLD w INTO x", None, "merge", {"branch": "w", "into": "x"}),
    ("MERGE WORLD w AT VERSION 3", None, "merge", {"branch": "w", "version": 3}),
    ("MERGE WORLD w AT VERSION 0", None, "merge", {"branch": "w", "version": 0}),
    ("MERGE WORLD w RESOLVE ours", None, "merge", {"branch": "w", "resolve": "ours"}),
    ("merge world w resolve THEIRS", None, "merge", {"branch": "w", "resolve": "theirs"}),
    ("MERGE WORLD w BY COLUMNS", None, "merge", {"branch": "w", "by_columns": True}),
    ("MERGE WORLD w DRY RUN", None, "merge_preview", {"branch": "w"}),
    (
        "MERGE WORLD w INTO x AT VERSION 3 DRY RUN RESOLVE ours BY COLUMNS",
        None,
        "merge_preview",
        {"branch": "w", "into": "x", "version": 3, "resolve": "ours", "by_columns": True},
    ),
    (
        "merge world w by columns resolve theirs at version 7 into x",
        None,
        "merge",
        {"branch": "w", "into": "x", "version": 7, "resolve": "theirs", "by_columns": True},
    ),
    (
        "MERGE WORLD task-1 DRY RUN AT VERSION 2",
        None,
        "merge_preview",
        {"branch": "task-1", "version": 2},
    ),
    # DISCARD WORLD
    ("DISCARD WORLD w", None, "discard", {"branch": "w"}),
    ("discard world w cascade", None, "discard", {"branch": "w", "cascade": True}),
    # SHOW WORLDS
    ("SHOW WORLDS", None, "branches", {}),
    ("show worlds;", "w", "branches", {}),
    # SHOW HISTORY: without a name, the session's branch
    ("SHOW HISTORY", None, "history", {"branch": "main"}),
    ("SHOW HISTORY", "w", "history", {"branch": "w"}),
    ("show history of x", "w", "history", {"branch": "x"}),
    ("SHOW HISTORY x", "w", "history", {"branch": "x"}),
    ("SHOW HISTORY LIMIT 5", "w", "history", {"branch": "w", "limit": 5}),
    ("SHOW HISTORY OF x LIMIT 5", None, "history", {"branch": "x", "limit": 5}),
    (
        "SHOW HISTORY before-migration limit 2",
        None,
        "history",
        {"branch": "before-migration", "limit": 2},
    ),
    # DIFF: without a name, the session's branch
    ("DIFF", None, "diff", {"branch": "main"}),
    ("DIFF", "w", "diff", {"branch": "w"}),
    ("diff x", "w", "diff", {"branch": "x"}),
    ("DIFF x TO main", None, "diff", {"branch": "x", "to": "main"}),
    ("DIFF x AS SQL", None, "diff", {"branch": "x", "as_sql": True}),
    ("DIFF x TO main AS SQL", None, "diff", {"branch": "x", "to": "main", "as_sql": True}),
    ("DIFF x AS SQL TO main", None, "diff", {"branch": "x", "to": "main", "as_sql": True}),
    ("DIFF TO main", "w", "diff", {"branch": "w", "to": "main"}),
    ("diff as sql", "w", "diff", {"branch": "w", "as_sql": True}),
    ("DIFF x TO main@'-5 minutes'", None, "diff", {"branch": "x", "to": "main@-5 minutes"}),
    # REBASE WORLD
    ("REBASE WORLD w", None, "rebase", {"branch": "w"}),
    (
        "REBASE WORLD w AT VERSION 2 RESOLVE theirs BY COLUMNS",
        None,
        "rebase",
        {"branch": "w", "version": 2, "resolve": "theirs", "by_columns": True},
    ),
    (
        "rebase world w by columns at version 2",
        None,
        "rebase",
        {"branch": "w", "version": 2, "by_columns": True},
    ),
    # CHECKPOINT WORLD, with AS or without
    ("CHECKPOINT WORLD w AS cp", None, "checkpoint", {"branch": "w", "name": "cp"}),
    ("CHECKPOINT WORLD w cp", None, "checkpoint", {"branch": "w", "name": "cp"}),
    (
        "checkpoint world main as before-migration",
        None,
        "checkpoint",
        {"branch": "main", "name": "before-migration"},
    ),
    ('CHECKPOINT WORLD "w" AS "cp"', None, "checkpoint", {"branch": "w", "name": "cp"}),
    # ROLLBACK WORLD
    ("ROLLBACK WORLD w TO cp", None, "rollback", {"branch": "w", "checkpoint": "cp"}),
    (
        "rollback world w to before-migration",
        None,
        "rollback",
        {"branch": "w", "checkpoint": "before-migration"},
    ),
    # RESTORE WORLD ... TO|AT
    (
        "RESTORE WORLD main TO '-10 minutes'",
        None,
        "restore",
        {"branch": "main", "at": "-10 minutes"},
    ),
    (
        "RESTORE WORLD main AT '2026-11-30 10:00'",
        None,
        "restore",
        {"branch": "main", "at": "2026-11-30 10:00"},
    ),
    ("restore world w at '-1 hour'", None, "restore", {"branch": "w", "at": "-1 hour"}),
    # UNDO MERGE, UNDO AGENT
    ("UNDO MERGE w", None, "undo_merge", {"branch": "w"}),
    ("undo merge w skip changed", None, "undo_merge", {"branch": "w", "skip_changed": True}),
    ("UNDO AGENT bot SINCE '-1 hour'", None, "undo_agent", {"agent": "bot", "since": "-1 hour"}),
    (
        "UNDO AGENT bot SINCE '-1 hour' WHERE run_id = 'r1'",
        None,
        "undo_agent",
        {"agent": "bot", "since": "-1 hour", "run": "r1"},
    ),
    (
        "undo agent bot since '2026-11-30 10:00' where run_id = 'r-1'",
        None,
        "undo_agent",
        {"agent": "bot", "since": "2026-11-30 10:00", "run": "r-1"},
    ),
    # USE WORLD
    ("USE WORLD w", None, "use", {"branch": "w"}),
    ('use world "my world"', None, "use", {"branch": "my world"}),
    # a trailing ';' (or several), comments, spacing
    ("FORK WORLD w;", None, "fork", {"name": "w"}),
    ("FORK WORLD w ; ;", None, "fork", {"name": "w"}),
    ("FORK WORLD w -- for the task", None, "fork", {"name": "w"}),
    ("/* first */ FORK /* the */ WORLD w /* last */;", None, "fork", {"name": "w"}),
    ("-- why\nMERGE WORLD w\n  DRY RUN -- look first\n", None, "merge_preview", {"branch": "w"}),
    ("  SHOW\n\tWORLDS  ", None, "branches", {}),
    # the agent statements: an action, and their list spread out as arguments
    (
        "CREATE AGENT bot WITH (rights = 'read, fork', max_query_ms = 2000)",
        None,
        "agent",
        {"action": "create", "name": "bot", "rights": ["read", "fork"], "max_query_ms": 2000},
    ),
    ("create agent bot", None, "agent", {"action": "create", "name": "bot"}),
    (
        "ALTER AGENT bot SET (enabled = false, max_concurrent = null)",
        None,
        "agent",
        {"action": "alter", "name": "bot", "disable": True, "max_concurrent": None},
    ),
    ("DROP AGENT bot", None, "agent", {"action": "drop", "name": "bot"}),
    ("show agents;", None, "agent", {"action": "list"}),
    # MERGE CHECKS
    (
        'CREATE OR REPLACE MERGE CHECK keep ON TABLES (leads, "Lists") AS select 1',
        None,
        "set_merge_check",
        {"name": "keep", "tables": ["leads", "Lists"], "query": "select 1"},
    ),
    (
        "create merge check k with (timeout_ms = 50) as select id from t where x; ",
        None,
        "set_merge_check",
        {"name": "k", "timeout_ms": 50, "query": "select id from t where x"},
    ),
    ("DROP MERGE CHECK keep", None, "drop_merge_check", {"name": "keep"}),
    ("show merge checks", None, "merge_checks", {}),
    # merge policies, reviews, the mode
    (
        "create merge policy small with (max_rows = 2, max_deletes = 0, review_tables = "
        "'payments, users', max_age = '1h', reviewer = lead)",
        None,
        "set_merge_policy",
        {
            "name": "small",
            "rules": {
                "max_rows": 2,
                "max_deletes": 0,
                "review_tables": ["payments", "users"],
                "max_age": "1h",
                "reviewer": "lead",
            },
        },
    ),
    ("CREATE MERGE POLICY open", None, "set_merge_policy", {"name": "open"}),
    (
        "ALTER MERGE POLICY small SET (schema = true)",
        None,
        "set_merge_policy",
        {"name": "small", "rules": {"schema": True}},
    ),
    ("DROP MERGE POLICY small", None, "drop_merge_policy", {"name": "small"}),
    (
        "drop merge policy small cascade",
        None,
        "drop_merge_policy",
        {"name": "small", "release_agents": True},
    ),
    ("SHOW MERGE POLICIES", None, "merge_policies", {}),
    (
        "ALTER AGENT bot SET (policy = small)",
        None,
        "agent",
        {"action": "alter", "name": "bot", "policy": "small"},
    ),
    ("SHOW REVIEWS", None, "reviews", {}),
    (
        "REVIEW WORLD bot-2 APPROVE REASON 'small and right'",
        None,
        "review",
        {"branch": "bot-2", "verdict": "approve", "reason": "small and right"},
    ),
    (
        "review world bot-2 pass reason 'a person should look'",
        None,
        "review",
        {"branch": "bot-2", "verdict": "pass", "reason": "a person should look"},
    ),
    ("SET MODE production", None, "mode", {"mode": "production"}),
    ("show mode", None, "mode", {}),
    # SHOW AUDIT
    ("SHOW AUDIT", None, "audit", {}),
    ("SHOW AUDIT bot", None, "audit", {"agent": "bot"}),
    ("SHOW AUDIT SINCE '-1 hour'", None, "audit", {"since": "-1 hour"}),
    (
        "show audit bot since '-1 hour' limit 5",
        None,
        "audit",
        {"agent": "bot", "since": "-1 hour", "limit": 5},
    ),
]


@pytest.mark.parametrize(("stmt", "branch", "op", "args"), VALID)
def test_parse(stmt, branch, op, args):
    assert parse(stmt, branch) == (op, args)


def test_every_form_is_in_the_table():
    assert {op for op, _ in GRAMMAR} | {"merge_preview"} == {op for _, _, op, _ in VALID}


# Each form with every clause: what it parses to is what its operation takes.
FULL = [
    "FORK WORLD w FROM main@'-1 hour' WITH (task = 'x', n = 1, ok = true, gone = null)",
    "MERGE WORLD w INTO x AT VERSION 3 RESOLVE ours BY COLUMNS",
    "MERGE WORLD w INTO x AT VERSION 3 DRY RUN RESOLVE theirs BY COLUMNS",
    "DISCARD WORLD w CASCADE",
    "SHOW WORLDS",
    "SHOW HISTORY OF w LIMIT 5",
    "DIFF w TO main AS SQL",
    "REBASE WORLD w AT VERSION 2 RESOLVE theirs BY COLUMNS",
    "CHECKPOINT WORLD w AS before-migration",
    "ROLLBACK WORLD w TO before-migration",
    "RESTORE WORLD w TO '-1 hour'",
    "UNDO MERGE w SKIP CHANGED",
    "UNDO AGENT bot SINCE '-1 hour' WHERE run_id = 'r1'",
    "CREATE AGENT bot WITH (rights = 'read', max_concurrent = 2, max_memory_mb = 64)",
    "ALTER AGENT bot SET (enabled = true, max_query_ms = 100, rights = 'admin', policy = p)",
    "CREATE MERGE POLICY p WITH (max_rows = 1, max_deletes = 0, rows_per_hour = 5, "
    "deletes_per_hour = 1, max_age = '1h', tables = 'a, b', review_tables = 'c', "
    "review_columns = 'c.d', schema = false, overwrite = false, require_scope = true, "
    "confirm_deletes_over = 3, reviewer = lead)",
    "DROP MERGE POLICY p CASCADE",
    "REVIEW WORLD w REJECT REASON 'no'",
    "SET MODE development",
]


@pytest.mark.parametrize("stmt", FULL)
def test_the_arguments_are_the_operations(stmt):
    op, args = parse(stmt, "main")
    REGISTRY.get(op).validate(args)  # no unknown parameter, every value of its type


# --- malformed statements ------------------------------------------------------------------

# (statement, the form it is held to, what the message says is wrong)
MALFORMED = [
    # a name missing
    ("FORK WORLD", "fork", "<name> is missing"),
    ("FORK WORLD;", "fork", "<name> is missing"),
    ("MERGE WORLD", "merge", "<branch> is missing"),
    ("DISCARD WORLD", "discard", "<branch> is missing"),
    ("REBASE WORLD", "rebase", "<branch> is missing"),
    ("CHECKPOINT WORLD w", "checkpoint", "<checkpoint> is missing"),
    ("CHECKPOINT WORLD w AS", "checkpoint", "<checkpoint> is missing"),
    ("ROLLBACK WORLD w TO", "rollback", "<checkpoint> is missing"),
    ("USE WORLD", "use", "<branch> is missing"),
    ("UNDO MERGE", "undo_merge", "<branch> is missing"),
    ("MERGE WORLD w INTO", "merge", "<world> is missing"),
    ("DIFF w TO", "diff", "<other> is missing"),
    ("FORK WORLD w FROM", "fork", "<branch> is missing"),
    # a keyword missing, or another word in its place
    ("ROLLBACK WORLD w cp", "rollback", "expected TO, not cp"),
    ("RESTORE WORLD main '-1 minute'", "restore", "expected TO, not -1 minute"),
    ("RESTORE WORLD main", "restore", "TO is missing"),
    ("UNDO AGENT bot '-1 hour'", "undo_agent", "expected SINCE, not -1 hour"),
    ("UNDO AGENT bot SINCE '-1 hour' WHERE run = 'r1'", "undo_agent", "expected run_id, not run"),
    ("UNDO AGENT bot SINCE '-1 hour' WHERE run_id 'r1'", "undo_agent", "expected =, not r1"),
    ("MERGE WORLD w AT 3", "merge", "expected VERSION, not 3"),
    ("MERGE WORLD w DRY", "merge", "RUN is missing"),
    ("MERGE WORLD w BY", "merge", "COLUMNS is missing"),
    ("UNDO MERGE w SKIP", "undo_merge", "CHANGED is missing"),
    ("DIFF w AS", "diff", "SQL is missing"),
    # a name where an SQL string goes, a keyword or punctuation where a name goes
    ("RESTORE WORLD main TO yesterday", "restore", "expected '<moment>' (an SQL string in quotes)"),
    ("UNDO AGENT bot SINCE yesterday", "undo_agent", "not yesterday"),
    ("UNDO AGENT bot SINCE '-1 hour' WHERE run_id = r1", "undo_agent", "not r1"),
    ("FORK WORLD from", "fork", "expected <name>, not from"),
    ("FORK WORLD (w)", "fork", "expected <name>, not ("),
    ("MERGE WORLD into", "merge", "expected <branch>, not into"),
    # a string where a name goes: meta's keys are names
    ("FORK WORLD w WITH ('task' = 'x')", "fork", "expected a key (a name), not 'task'"),
    # not a number where one goes
    ("MERGE WORLD w AT VERSION x", "merge", "expected <n>, a number, not x"),
    ("MERGE WORLD w AT VERSION '3'", "merge", "expected <n>, a number, not 3"),
    ("MERGE WORLD w AT VERSION -1", "merge", "expected <n>, a number, not -1"),
    ("MERGE WORLD w AT VERSION 1.5", "merge", "expected <n>, a number, not 1.5"),
    ("MERGE WORLD w AT VERSION", "merge", "<n> is missing"),
    ("REBASE WORLD w AT VERSION v2", "rebase", "expected <n>, a number, not v2"),
    ("SHOW HISTORY OF w LIMIT ten", "history", "expected <n>, a number, not ten"),
    ("SHOW HISTORY LIMIT", "history", "<n> is missing"),
    # a choice outside its words
    ("MERGE WORLD w RESOLVE mine", "merge", "expected ours|theirs, not mine"),
    ("MERGE WORLD w RESOLVE fail", "merge", "expected ours|theirs, not fail"),
    ("MERGE WORLD w RESOLVE", "merge", "ours|theirs is missing"),
    ("REBASE WORLD w RESOLVE mine", "rebase", "expected ours|theirs, not mine"),
    # a clause given twice
    ("FORK WORLD w FROM main FROM x", "fork", "given twice: FROM"),
    ("FORK WORLD w WITH (a = 1) WITH (b = 2)", "fork", "given twice: WITH"),
    ("MERGE WORLD w INTO a INTO b", "merge", "given twice: INTO"),
    ("MERGE WORLD w DRY RUN DRY RUN", "merge", "given twice: DRY"),
    ("MERGE WORLD w RESOLVE ours AT VERSION 1 RESOLVE theirs", "merge", "given twice: RESOLVE"),
    ("discard world w cascade cascade", "discard", "given twice: cascade"),
    ("SHOW HISTORY LIMIT 1 LIMIT 2", "history", "given twice: LIMIT"),
    ("DIFF w TO a TO b", "diff", "given twice: TO"),
    ("DIFF w AS SQL AS SQL", "diff", "given twice: AS"),
    ("UNDO MERGE w SKIP CHANGED SKIP CHANGED", "undo_merge", "given twice: SKIP"),
    (
        "UNDO AGENT bot SINCE '-1 h' WHERE run_id = 'a' WHERE run_id = 'b'",
        "undo_agent",
        "given twice: WHERE",
    ),
    # an unknown trailing word (or one of another form's clauses)
    ("SHOW WORLDS extra", "branches", "unexpected: extra"),
    ("MERGE WORLD w foo", "merge", "unexpected: foo"),
    ("MERGE WORLD w RUN", "merge", "unexpected: RUN"),
    ("MERGE WORLD w CASCADE", "merge", "unexpected: CASCADE"),
    ("REBASE WORLD w DRY RUN", "rebase", "unexpected: DRY"),
    ("REBASE WORLD w INTO x", "rebase", "unexpected: INTO"),
    ("DISCARD WORLD w now", "discard", "unexpected: now"),
    ("DIFF w x", "diff", "unexpected: x"),
    ("CHECKPOINT WORLD w cp extra", "checkpoint", "unexpected: extra"),
    ("ROLLBACK WORLD w TO cp extra", "rollback", "unexpected: extra"),
    ("RESTORE WORLD main TO '-1 minute' extra", "restore", "unexpected: extra"),
    ("USE WORLD w x", "use", "unexpected: x"),
    ("FORK WORLD w WITH (a = 1) extra", "fork", "unexpected: extra"),
    ("FORK WORLD w WITH (a = 1),", "fork", "unexpected: ,"),
    ("FORK WORLD w; FORK WORLD x", "fork", "unexpected: ;"),
    # WITH (...) unclosed or not a list
    ("FORK WORLD w WITH (a = 1", "fork", "WITH ( is not closed: ) is missing"),
    ("FORK WORLD w WITH (a = 1,", "fork", "WITH ( is not closed: ) is missing"),
    ("FORK WORLD w WITH (", "fork", "WITH ( is not closed: ) is missing"),
    ("FORK WORLD w WITH (a = 1, a = 2)", "fork", "given twice: a"),
    ("MERGE WORLD w DRY 'RUN'", "merge", "expected RUN, not RUN"),
    ("FORK WORLD w WITH", "fork", "(key = value, ...) is missing"),
    ("FORK WORLD w WITH ()", "fork", "expected a key (a name), not ')'"),
    ("FORK WORLD w WITH a = 1", "fork", "expected (key = value, ...)"),
    ("FORK WORLD w WITH (a 1)", "fork", "expected = after a"),
    ("FORK WORLD w WITH (a = x)", "fork", "with values in quotes or numbers, not x"),
    ("FORK WORLD w WITH (a = -'x')", "fork", "not -"),
    ("FORK WORLD w WITH (a = -true)", "fork", "not -true"),
    ("FORK WORLD w WITH (a = 0x10)", "fork", "not 0x10"),
]


@pytest.mark.parametrize(("stmt", "op", "wrong"), MALFORMED)
def test_malformed(stmt, op, wrong):
    with pytest.raises(ChronosError) as info:
        parse(stmt, "w")
    assert info.value.code == "22023"
    assert info.value.message.endswith(f"; its form: {FORM[op]}")
    assert wrong in info.value.message.removesuffix(f"; its form: {FORM[op]}")


# (statement, what the message says): no form of chronos' starts that way
UNKNOWN = [
    ("SHOW TABLES", "unknown statement SHOW TABLES: chronos has SHOW WORLDS; SHOW HISTORY"),
    ("show tables;", "unknown statement show tables: chronos has SHOW WORLDS; SHOW HISTORY"),
    (
        "UNDO SOMETHING",
        f"unknown statement UNDO SOMETHING: chronos has {FORM['undo_merge']}; {FORM['undo_agent']}",
    ),
    ("UNDO", "unknown statement UNDO: chronos has UNDO MERGE"),
    ("FORK w", f"unknown statement FORK w: chronos has {FORM['fork']}"),
    ("MERGE w", f"unknown statement MERGE w: chronos has {FORM['merge']}"),
    ("ROLLBACK TABLES", f"unknown statement ROLLBACK TABLES: chronos has {FORM['rollback']}"),
    ("USE w", f"unknown statement USE w: chronos has {FORM['use']}"),
    ("select 1", "not a chronos statement: select 1"),
    ("", "not a chronos statement"),
]


@pytest.mark.parametrize(("stmt", "message"), UNKNOWN)
def test_unknown_statement(stmt, message):
    with pytest.raises(ChronosError) as info:
        parse(stmt)
    assert info.value.code == "22023"
    assert info.value.message.startswith(message)


@pytest.mark.parametrize("stmt", ["MERGE WORLD w AT VERSION ²", "SHOW HISTORY LIMIT ³"])
def test_a_number_python_cant_read_is_malformed(stmt):
    with pytest.raises(ChronosError) as info:
        parse(stmt)
    assert info.value.code == "22023"
    assert "a number" in info.value.message


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", "1e400"])
def test_meta_values_are_sql_values(value):
    with pytest.raises(ChronosError, match="values in quotes or numbers"):
        parse(f"FORK WORLD w WITH (v = {value})")


def test_run_id_is_a_keyword_in_any_case():
    expected = ("undo_agent", {"agent": "bot", "since": "-1 hour", "run": "r1"})
    assert parse("UNDO AGENT bot SINCE '-1 hour' WHERE RUN_ID = 'r1'") == expected


def test_an_unclosed_with_says_what_is_missing():
    with pytest.raises(ChronosError) as info:
        parse("FORK WORLD w WITH (a = 1")
    assert "is missing" in info.value.message


# --- which statements are chronos' ----------------------------------------------------------

CHRONOS = [
    "CREATE AGENT bot",
    "alter agent bot set (enabled = false)",
    "DROP AGENT bot",
    "SHOW AGENTS",
    "FORK WORLD w",
    "fork world w",
    "MERGE WORLD w DRY RUN",
    "DISCARD WORLD w",
    "SHOW WORLDS",
    "SHOW HISTORY",
    "SHOW TABLES",  # chronos' first word: the parser says what chronos has
    "DIFF",
    "diff w as sql",
    "REBASE WORLD w",
    "CHECKPOINT WORLD w cp",
    "ROLLBACK WORLD w TO cp",
    "rollback world w to cp",
    "ROLLBACK /* c */ WORLD w TO cp",
    "ROLLBACK\nWORLD w TO cp",
    "RESTORE WORLD main TO '-1 minute'",
    "UNDO MERGE w",
    "UNDO AGENT bot SINCE '-1 hour'",
    "USE WORLD w",
    "-- a comment first\nFORK WORLD w",
    "/* c */ SHOW WORLDS",
]
SQLITE = [
    "ROLLBACK",
    "rollback",
    "ROLLBACK;",
    "ROLLBACK TRANSACTION",
    "ROLLBACK TO sp",
    "ROLLBACK TO SAVEPOINT sp",
    "ROLLBACK TO world",
    "ROLLBACK TRANSACTION TO SAVEPOINT world",
    "SAVEPOINT world",
    "RELEASE world",
    "select diff from t",
    "SELECT diff, merge, fork FROM changes",
    "WITH diff AS (SELECT 1) SELECT * FROM diff",
    "update diff set fork = 1",
    "insert into merge values (1)",
    "create table fork(id integer primary key)",
    "select 'FORK WORLD w'",
    "-- FORK WORLD w\nselect 1",
    "/* SHOW WORLDS */ select 1",
    "CREATE TABLE agent(a)",
    "create table agents(a)",
    "DROP TABLE agent",
    "ALTER TABLE agent ADD COLUMN b",
    "EXPLAIN SELECT 1",
    "PRAGMA table_info(users)",
    "BEGIN",
    "",
]


@pytest.mark.parametrize("stmt", CHRONOS)
def test_is_chronos(stmt):
    assert is_chronos(stmt)


@pytest.mark.parametrize("stmt", SQLITE)
def test_is_sqlites(stmt):
    assert not is_chronos(stmt)


# --- through the sql operation --------------------------------------------------------------


def moment() -> str:
    """Now, as a local time with microseconds, between two writes."""
    time.sleep(0.01)
    text = datetime.fromtimestamp(time.time()).isoformat(sep=" ")
    time.sleep(0.01)
    return text


def tag(db, stmt: str, branch: str = "main") -> str:
    result = db.sql(stmt, branch=branch).results[0]
    assert result.columns is None
    return result.tag


def names(db, branch: str = "main") -> list[str]:
    return [r["name"] for r in db.query("select name from users order by id", branch=branch)]


def worlds(db) -> dict[str, dict]:
    result = db.sql("SHOW WORLDS").results[0]
    return {row[0]: dict(zip(result.columns, row)) for row in result.rows}


def state(db) -> tuple:
    """What a statement that changes nothing leaves as it was."""
    shown = worlds(db)
    rows = {b: db.query("select * from users order by id", branch=b) for b in shown}
    history = {b: db.query(f"SHOW HISTORY OF {b} LIMIT 1000") for b in shown}
    return shown, rows, history


def test_fork_world(shop):
    text = tag(shop, "FORK WORLD task-1 WITH (task = 'fix names', n = 3, f = -1.5, ok = true)")
    assert text.startswith("created branch task-1 (world id w")
    assert text.endswith('from main; pass branch="task-1" to work on it')
    world = shop.database.world("task-1")
    assert world.meta == {"task": "fix names", "n": 3, "f": -1.5, "ok": True}
    assert world.parent == "main" and world.owner == "owner"
    shop.sql("update users set name = 'T' where id = 1", branch="task-1")
    assert tag(shop, 'FORK WORLD "sub" FROM task-1').startswith("created branch sub")
    assert shop.database.world("sub").parent == "task-1"
    assert names(shop, "sub") == ["T"] and names(shop) == ["Ada"]


def test_fork_world_from_a_moment(shop):
    then = moment()
    shop.sql("update users set name = 'Later' where id = 1")
    shop.sql(f"FORK WORLD before FROM main@'{then}'")
    shop.sql(f"FORK WORLD before2 FROM 'main@{then}'")
    assert names(shop, "before") == names(shop, "before2") == ["Ada"]
    assert names(shop) == ["Later"]


def test_fork_world_runs_as_its_caller(shop):
    shop.call("sql", caller=Caller(name="bot"), sql="FORK WORLD b")
    assert shop.database.world("b").owner == "bot"


def test_fork_world_refused_by_the_registry(shop):
    with pytest.raises(ChronosError, match="'name' must be a non-empty string without spaces"):
        shop.sql('FORK WORLD "my world"')
    shop.sql("FORK WORLD w")
    with pytest.raises(ChronosError, match="branch 'w' already exists") as info:
        shop.sql("FORK WORLD w")
    assert info.value.code == "55006"
    with pytest.raises(ChronosError, match="no branch 'nowhere'; branches: main, w") as info:
        shop.sql("FORK WORLD x FROM nowhere")
    assert info.value.code == "P0002"
    assert list(worlds(shop)) == ["main", "w"]


def test_fork_world_with_nan_is_refused(shop):
    with pytest.raises(ChronosError):
        shop.sql("FORK WORLD x WITH (v = nan)")
    assert list(worlds(shop)) == ["main"]


def test_a_number_python_cant_read_in_sql(shop):
    with pytest.raises(ChronosError) as info:
        shop.sql("SHOW HISTORY LIMIT ²")
    assert info.value.code == "22023"


def test_merge_world(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    assert tag(shop, "MERGE WORLD w") == "merged 1 change from w into main"
    assert names(shop) == ["W"]
    assert "w" not in worlds(shop)  # merged: finished


def test_merge_world_dry_run_changes_nothing(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    before = state(shop)
    text = tag(shop, "MERGE WORLD w DRY RUN")
    assert "| apply " in text and '"name": "W"' in text
    assert "w is at version 1; main stands at" in text
    assert state(shop) == before
    assert text == shop.call("merge_preview", branch="w").text


def test_merge_world_at_a_stale_version_merges_nothing(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    assert worlds(shop)["w"]["version"] == 1
    before = state(shop)
    with pytest.raises(ChronosError) as info:
        shop.sql("MERGE WORLD w AT VERSION 0")
    assert info.value.code == "40001"
    assert "w is at version 1, not 0: it changed since" in info.value.message
    assert state(shop) == before
    assert names(shop) == ["Ada"]
    assert tag(shop, "MERGE WORLD w AT VERSION 1") == "merged 1 change from w into main"
    assert names(shop) == ["W"]


def test_merge_world_resolve(shop):
    for name in ("a", "b"):
        shop.sql(f"FORK WORLD {name}")
        shop.sql(f"update users set name = '{name}' where id = 1", branch=name)
    shop.sql("update users set name = 'M' where id = 1")
    with pytest.raises(ChronosError) as info:
        shop.sql("MERGE WORLD a")
    assert info.value.code == "40001" and "nothing was changed" in info.value.message
    assert names(shop) == ["M"]
    shop.sql("MERGE WORLD a RESOLVE theirs")
    assert names(shop) == ["M"]
    shop.sql("merge world b resolve ours")
    assert names(shop) == ["b"]


def test_merge_world_into_another(shop):
    shop.sql("FORK WORLD w")
    shop.sql("FORK WORLD x")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    text = tag(shop, "MERGE WORLD w INTO x")
    assert text.startswith("merged 1 change from w into x") and "w stays open" in text
    assert names(shop, "x") == ["W"] and names(shop) == ["Ada"]
    assert "w" in worlds(shop)


def test_discard_world(shop):
    shop.sql("FORK WORLD p")
    shop.sql("FORK WORLD c FROM p")
    with pytest.raises(ChronosError, match="has branches forked from it") as info:
        shop.sql("DISCARD WORLD p")
    assert info.value.code == "55006"
    assert list(worlds(shop)) == ["main", "p", "c"]
    assert tag(shop, "DISCARD WORLD p CASCADE").startswith("discarded branches c (world id")
    assert list(worlds(shop)) == ["main"]
    shop.sql("FORK WORLD q")
    assert tag(shop, "DISCARD WORLD q").startswith("discarded branch q (world id")


def test_rebase_world(shop):
    shop.sql("FORK WORLD r")
    shop.sql("insert into users(name, email) values ('R', 'r@x')", branch="r")
    shop.sql("insert into users(name, email) values ('M', 'm@x')")
    assert names(shop, "r") == ["Ada", "R"]
    assert tag(shop, "REBASE WORLD r") == "REBASE 1"
    assert sorted(names(shop, "r")) == ["Ada", "M", "R"]
    assert names(shop) == ["Ada", "M"]


def test_rebase_world_at_a_stale_version(shop):
    shop.sql("FORK WORLD r")
    shop.sql("update users set name = 'R' where id = 1", branch="r")
    shop.sql("insert into users(name, email) values ('M', 'm@x')")
    with pytest.raises(ChronosError, match="not 0") as info:
        shop.sql("REBASE WORLD r AT VERSION 0")
    assert info.value.code == "40001"
    assert names(shop, "r") == ["R"]


def test_diff(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'B' where id = 1", branch="w")
    text = tag(shop, "DIFF w")
    assert (
        text
        == '1 change on w (users: 0 deleted, 1 updated, 0 inserted)\n~ users/1  name: "Ada" -> "B"'
    )
    assert tag(shop, "DIFF", branch="w") == text  # no name: the call's branch
    assert tag(shop, "diff;", branch="w") == text
    assert tag(shop, "DIFF w AS SQL") == (
        "-- 1 change on w (users: 0 deleted, 1 updated, 0 inserted)\n"
        'UPDATE "users" SET "name" = \'B\' WHERE "id" = 1;'
    )
    assert tag(shop, "DIFF w TO main") == (
        "1 change on w -> main (users: 0 deleted, 1 updated, 0 inserted)\n"
        '~ users/1  name: "B" -> "Ada"'
    )
    assert tag(shop, "DIFF TO main", branch="w") == tag(shop, "DIFF w TO main")
    with pytest.raises(ChronosError, match="main has no fork to compare with"):
        shop.sql("DIFF")  # on main, no name: main's diff


def test_show_worlds_is_a_table(shop):
    shop.sql("FORK WORLD w WITH (task = 'x')")
    shop.sql("update users set name = 'B' where id = 1", branch="w")
    result = shop.sql("SHOW WORLDS").results[0]
    assert result.columns == ["name", "world_id", "parent", "changes", "version", "owner", "meta"]
    assert result.tag == ""
    main, w = result.rows
    assert main == ("main", None, None, None, None, None, None)
    assert w == ("w", shop.database.world("w").wid, "main", 1, 1, "owner", '{"task": "x"}')
    assert shop.sql("show worlds;", branch="w").results[0].rows == result.rows
    reply = shop.call("sql", sql="SHOW WORLDS")
    assert reply.text.splitlines()[0].split("|")[0].strip() == "name"
    assert reply.data["results"][0]["columns"] == result.columns


def test_show_history_is_a_table(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'B' where id = 1", branch="w")
    shop.sql("CHECKPOINT WORLD w cp")
    result = shop.sql("SHOW HISTORY OF w").results[0]
    assert result.columns == ["at", "event", "by", "rows", "detail"]
    assert [r[1:4] for r in result.rows] == [
        ("checkpoint", "owner", 0),
        ("write", "owner", 1),
        ("fork", "owner", 0),
    ]
    assert result.rows[1][4] == "update users set name = 'B' where id = 1"
    assert shop.sql("SHOW HISTORY", branch="w").results[0].rows == result.rows
    assert shop.sql("SHOW HISTORY w LIMIT 1").results[0].rows == result.rows[:1]
    on_main = shop.query("SHOW HISTORY")
    assert on_main[0]["event"] == "forked" and on_main[0]["detail"] == "forked w"


def test_checkpoint_and_rollback_world(shop):
    shop.sql("FORK WORLD w")
    assert tag(shop, "CHECKPOINT WORLD w AS start").startswith("checkpoint start: w at ")
    shop.sql("update users set name = 'X' where id = 1", branch="w")
    assert tag(shop, "CHECKPOINT WORLD w after-x").startswith("checkpoint after-x: w at ")
    shop.sql("delete from users", branch="w")
    text = tag(shop, "ROLLBACK WORLD w TO after-x")
    assert text.startswith("restored w to checkpoint after-x (") and "1 row written back" in text
    assert names(shop, "w") == ["X"]
    tag(shop, "rollback world w to start")
    assert names(shop, "w") == ["Ada"]
    with pytest.raises(ChronosError, match="w has no checkpoint nowhere") as info:
        shop.sql("ROLLBACK WORLD w TO nowhere")
    assert info.value.code == "P0002"
    assert shop.sql("begin; rollback").results[1].tag == "ROLLBACK"  # SQLite's own


def test_restore_world(shop):
    then = moment()
    shop.sql("update users set name = 'Later' where id = 1")
    text = tag(shop, f"RESTORE WORLD main TO '{then}'")
    assert text.startswith("restored main to ") and text.endswith(": 1 row written back")
    assert names(shop) == ["Ada"]
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W1' where id = 1", branch="w")
    then = moment()
    shop.sql("update users set name = 'W2' where id = 1", branch="w")
    assert tag(shop, f"restore world w at '{then}'").startswith("restored w to ")
    assert names(shop, "w") == ["W1"]
    with pytest.raises(ChronosError, match="isn't a moment"):
        shop.sql("RESTORE WORLD main TO 'someday'")


def test_undo_merge(shop):
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    shop.sql("MERGE WORLD w")
    assert names(shop) == ["W"]
    text = tag(shop, "UNDO MERGE w")
    assert text == "undid the merge of w into main: 1 row put back"
    assert names(shop) == ["Ada"]


def test_undo_merge_skip_changed(shop):
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x')")
    shop.sql("FORK WORLD w")
    shop.sql("update users set name = 'W' || id", branch="w")
    shop.sql("MERGE WORLD w")
    shop.sql("update users set name = 'Human' where id = 2")
    with pytest.raises(ChronosError, match="users/2"):
        shop.sql("UNDO MERGE w")
    assert names(shop) == ["W1", "Human"]
    text = tag(shop, "UNDO MERGE w SKIP CHANGED")
    assert text.startswith("undid the merge of w into main: 1 row put back; 1 changed since")
    assert names(shop) == ["Ada", "Human"]


def test_undo_agent(shop):
    bot1, bot2 = Caller(name="bot", run="r1"), Caller(name="bot", run="r2")
    shop.call("sql", caller=bot1, sql="update users set name = 'bot' where id = 1")
    shop.call("sql", caller=bot2, sql="insert into users(name, email) values ('B2', 'b2@x')")
    text = tag(shop, "UNDO AGENT bot SINCE '-1 minute' WHERE run_id = 'r1'")
    assert text.startswith("UNDO AGENT bot: 1 row put back")
    assert names(shop) == ["Ada", "B2"]
    assert tag(shop, "undo agent bot since '-1 minute'").startswith(
        "UNDO AGENT bot: 1 row put back"
    )
    assert names(shop) == ["Ada"]


def test_a_chronos_statement_runs_alone(shop):
    before = state(shop)
    for sql in (
        "FORK WORLD q; select 1",
        "select 1; FORK WORLD q",
        "insert into users(name, email) values ('X', 'x@x'); FORK WORLD q",
        "BEGIN; FORK WORLD q; COMMIT",
        "SHOW WORLDS; SHOW WORLDS",
    ):
        with pytest.raises(ChronosError, match="runs its own transaction: send it in a call of"):
            shop.sql(sql)
    with pytest.raises(ChronosError, match="^FORK WORLD runs its own transaction") as info:
        shop.sql("select 1; fork world q")
    assert info.value.code == "22023"
    assert state(shop) == before
    assert shop.sql("FORK WORLD q;").results[0].tag.startswith("created branch q")


def test_use_world_is_the_shells(shop):
    shop.sql("FORK WORLD w")
    with pytest.raises(ChronosError) as info:
        shop.sql("USE WORLD w")
    assert info.value.code == "22023"
    assert info.value.message.startswith("USE WORLD switches the shell's branch")
    assert 'branch="w"' in info.value.message and "-b w" in info.value.message


def test_a_malformed_statement_in_sql(shop):
    with pytest.raises(ChronosError) as info:
        shop.sql("MERGE WORLD w RESOLVE mine")
    assert info.value.code == "22023"
    assert info.value.message == f"expected ours|theirs, not mine; its form: {FORM['merge']}"
    with pytest.raises(ChronosError, match="^unknown statement SHOW TABLES: chronos has"):
        shop.sql("SHOW TABLES")


# --- safe mode ------------------------------------------------------------------------------


@pytest.fixture
def agent_shop(shop):
    """A world w with a change and a checkpoint, made by the owner; an agent in safe mode."""
    shop.sql("FORK WORLD w")
    shop.sql("CHECKPOINT WORLD w cp")
    shop.sql("update users set name = 'W' where id = 1", branch="w")
    return shop


READ_ONLY = [
    ("SHOW WORLDS", None, "name"),
    ("SHOW HISTORY OF w", None, "checkpoint"),
    ("SHOW HISTORY", "w", "checkpoint"),
    ("show history limit 1", None, "forked w"),
    ("DIFF w", None, "1 change on w"),
    ("DIFF", "w", "1 change on w"),
    ("DIFF w AS SQL", None, "UPDATE"),
    ("DIFF w TO main", None, "1 change on w -> main"),
    ("MERGE WORLD w DRY RUN", None, "w is at version"),
    ("merge world w resolve ours dry run", None, "w is at version"),
]


@pytest.mark.parametrize(("stmt", "branch", "shown"), READ_ONLY)
def test_safe_mode_reads(agent_shop, stmt, branch, shown):
    before = state(agent_shop)
    on = {"branch": branch} if branch else {}
    reply = agent_shop.call("sql", caller=Caller(mode="safe"), sql=stmt, **on)
    assert shown in reply.text
    assert state(agent_shop) == before


REFUSED = [
    "FORK WORLD s",
    "MERGE WORLD w",
    "MERGE WORLD w AT VERSION 1",
    "DISCARD WORLD w",
    "DISCARD WORLD w CASCADE",
    "REBASE WORLD w",
    "CHECKPOINT WORLD w cp2",
    "ROLLBACK WORLD w TO cp",
    "RESTORE WORLD main TO '-1 minute'",
    "RESTORE WORLD w AT '-1 minute'",
    "UNDO MERGE w",
    "UNDO AGENT owner SINCE '-1 minute'",
    "USE WORLD w",
    "SHOW WORLDS; FORK WORLD s",
]


@pytest.mark.parametrize("stmt", REFUSED)
def test_safe_mode_refuses_what_changes_worlds(agent_shop, stmt):
    before = state(agent_shop)
    with pytest.raises(ChronosError) as info:
        agent_shop.call("sql", caller=Caller(mode="safe"), sql=stmt)
    assert info.value.code == "42501"
    assert info.value.message.startswith("safe mode: agents can't fork, merge, restore")
    assert state(agent_shop) == before


def test_safe_mode_refuses_them_on_the_agents_own_world(agent_shop):
    agent = Caller(mode="safe")
    agent_shop.call("fork", caller=agent, name="mine")  # the fork tool: allowed
    agent_shop.call(
        "sql", caller=agent, sql="update users set name = 'A' where id = 1", branch="mine"
    )
    before = state(agent_shop)
    for stmt in ("CHECKPOINT WORLD mine cp", "DISCARD WORLD mine", "FORK WORLD sub FROM mine"):
        with pytest.raises(ChronosError) as info:
            agent_shop.call("sql", caller=agent, sql=stmt, branch="mine")
        assert info.value.code == "42501"
    assert state(agent_shop) == before
    assert (
        "1 change on mine" in agent_shop.call("sql", caller=agent, sql="DIFF", branch="mine").text
    )


def test_safe_mode_malformed_shows_the_form(agent_shop):
    with pytest.raises(ChronosError) as info:
        agent_shop.call("sql", caller=Caller(mode="safe"), sql="MERGE WORLD w AT VERSION x")
    assert info.value.code == "22023"
    assert info.value.message.endswith(f"; its form: {FORM['merge']}")


def test_fork_world_forks_from_the_branch_it_runs_on(shop):
    assert parse("FORK WORLD b", "a") == ("fork", {"name": "b", "from": "a"})
    assert parse("FORK WORLD b", "main") == ("fork", {"name": "b"})
    assert parse("FORK WORLD b FROM main", "a") == ("fork", {"name": "b", "from": "main"})
    shop.fork("a")
    shop.sql("FORK WORLD b", branch="a")
    assert shop.database.world("b").parent == "a"
