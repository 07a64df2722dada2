"""Chronos' own SQL statements, malformed: the error names what is wrong and shows the form
(each form as an error shows it, in GRAMMAR's order)."""

from __future__ import annotations

import pytest

from chronos_lite import ChronosError
from chronos_lite.statements.chronos_sql import FORMS, GRAMMAR, parse

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
    (
        "find",
        "FIND IN <table> [WHERE (key = value, ...)] [TEXT '<text>'] [VECTOR '<vector>' IN "
        "<vector_field>] [LIMIT <n>] [OFFSET <n>] [EF <n>] [ON <branch>]",
    ),
    ("diff", "DIFF [<branch>] [TO <other>] [AS SQL] [READERS]"),
    ("rebase", "REBASE WORLD <branch> [AT VERSION <n>] [RESOLVE ours|theirs] [BY COLUMNS]"),
    ("check_reads", "CHECK READS [OF] <branch>"),
    (
        "simulate",
        "SIMULATE <n> WORLDS PREFIX <prefix> SCRIPT '<script>' SCORE '<score>' [FROM <branch>] "
        "[KEEP <n>] [ORDER asc|desc] [SEED <n>] [THREADS <n>]",
    ),
    ("replay", "REPLAY WORLD <world> [AS <name>]"),
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
    ("mark_reader", "MARK READER <name> READS (<table.column>, ...) [CRITICAL]"),
    ("drop_reader", "DROP READER <name>"),
    ("readers", "SHOW READERS"),
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
