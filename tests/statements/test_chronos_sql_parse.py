"""Chronos' own SQL statements (statements/chronos_sql.py), parsed: each form into its
operation and arguments, and which statements are chronos' and which SQLite's."""

from __future__ import annotations

import pytest

from chronos_lite.operations.registry import REGISTRY
from chronos_lite.statements.chronos_sql import GRAMMAR, is_chronos, parse

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
    ("FIND IN t", "w", "find", {"table": "t", "branch": "w"}),
    (
        "find in t where (a = 'x', b = 2) text 'green tea' vector '[1, 2.5]' in emb limit 3 "
        "offset 1 ef 8 on main",
        "w",
        "find",
        {
            "table": "t",
            "where": {"a": "x", "b": 2},
            "text": "green tea",
            "vector": [1, 2.5],
            "vector_field": "emb",
            "limit": 3,
            "offset": 1,
            "ef": 8,
            "branch": "main",
        },
    ),
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
    ("DIFF x READERS", None, "diff", {"branch": "x", "readers": True}),
    ("diff readers", "w", "diff", {"branch": "w", "readers": True}),
    ("DIFF TO main", "w", "diff", {"branch": "w", "to": "main"}),
    ("diff as sql", "w", "diff", {"branch": "w", "as_sql": True}),
    ("DIFF x TO main@'-5 minutes'", None, "diff", {"branch": "x", "to": "main@-5 minutes"}),
    # SIMULATE, REPLAY WORLD
    (
        "SIMULATE 3 WORLDS PREFIX p SCRIPT 'update t set x = $1' SCORE 'select 1'",
        None,
        "simulate",
        {"worlds": 3, "prefix": "p", "script": "update t set x = $1", "score": "select 1"},
    ),
    (
        "simulate 2 worlds prefix p script 'x' score 'y' seed 7 order asc keep 1 threads 2",
        "w",
        "simulate",
        {
            "worlds": 2,
            "prefix": "p",
            "script": "x",
            "score": "y",
            "seed": 7,
            "order": "asc",
            "keep": 1,
            "threads": 2,
            "from": "w",
        },
    ),
    ("REPLAY WORLD p_1", None, "replay", {"world": "p_1"}),
    ("replay world p_1 as again;", None, "replay", {"world": "p_1", "as": "again"}),
    # CHECK READS
    ("CHECK READS w", None, "check_reads", {"branch": "w"}),
    ("check reads of task-1;", None, "check_reads", {"branch": "task-1"}),
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
    # declared readers
    (
        "MARK READER billing READS (users.email, users.plan) CRITICAL",
        None,
        "mark_reader",
        {"name": "billing", "reads": ["users.email", "users.plan"], "critical": True},
    ),
    (
        'mark reader r-1 reads ("odd table"."e mail");',
        None,
        "mark_reader",
        {"name": "r-1", "reads": ["odd table.e mail"]},
    ),
    ("DROP READER billing", None, "drop_reader", {"name": "billing"}),
    ("show readers", None, "readers", {}),
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
    "SIMULATE 3 WORLDS PREFIX p SCRIPT 'select $1, $2' SCORE 'select 1' FROM w@'-1 hour' "
    "KEEP 2 ORDER asc SEED 4 THREADS 1",
    "REPLAY WORLD p_0 AS p_again",
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
    "MARK READER r READS (t.a, t.b) CRITICAL",
    "DROP READER r",
    "DIFF w READERS",
    "REVIEW WORLD w REJECT REASON 'no'",
    "SET MODE development",
]


@pytest.mark.parametrize("stmt", FULL)
def test_the_arguments_are_the_operations(stmt):
    op, args = parse(stmt, "main")
    REGISTRY.get(op).validate(args)  # no unknown parameter, every value of its type


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
    "MARK READER r READS (t.a)",
    "drop reader r",
    "SHOW READERS",
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
    "DROP TABLE reader",
    "select * from readers",
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
