"""The shell's sessions, typed at its prompt: the issue's session, statements over several
lines, and moving between worlds."""

from __future__ import annotations

import re

import pytest
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import PipeInput
from terminal import (
    ADA,
    Terminal,
    names,
    typed,
)

import chronos_lite

# --- 1. the issue's session ------------------------------------------------------------------


def test_the_issues_session(term, shop):
    def review_then_merge(inp: PipeInput) -> None:
        shown = term.wait_for("to merge exactly this.")
        version = re.search(r"task-1 is at version (\d+)", shown).group(1)
        inp.send_text(
            typed(
                f"MERGE WORLD task-1 AT VERSION {version};",
                "SHOW WORLDS;",
                "select name from users;",
                "\\q",
            )
        )

    keys = typed(
        "select name from users;",
        "FORK WORLD task-1;",
        "\\c task-1",
        "update users set name = 'Ada L.' where id = 1;",
        "DIFF;",
        "\\c main",
        "select name from users;",
        "MERGE WORLD task-1 DRY RUN;",
    )
    assert term.run(keys, review_then_merge) == 0
    assert term.err.getvalue() == ""
    out = term.out.getvalue()
    banner, out = out.split("\n", 1)
    assert banner.startswith("chronos ") and "branch main" in banner
    before, dry_run = out.split("\nnow on main\n")
    assert before.startswith(ADA)
    assert re.search(r"created branch task-1 \(world id w[0-9a-f]{16}\) from main", before)
    assert "\nnow on task-1\nUPDATE 1\n" in before
    assert before.endswith(
        "1 change on task-1 (users: 0 deleted, 1 updated, 0 inserted)\n"
        '~ users/1  name: "Ada" -> "Ada L."'
    )
    preview, merged = dry_run.split("merged 1 change from task-1 into main\n")
    assert preview.startswith(ADA)  # main is untouched until the merge
    assert " users | 1  | apply   | update: the parent didn't change this row" in preview
    assert re.search(r"task-1 is at version \d+; main stands at \d+\.", preview)
    worlds, selected = merged.split("(1 row)\n", 1)
    assert worlds.split("\n")[2].startswith(" main |") and "task-1" not in worlds
    assert selected == " name\n--------\n Ada L.\n(1 row)\n"
    assert term.prompts == ["main=> ", "task-1=> ", "main=> "]
    assert names(shop) == ["Ada L."]
    assert [w.name for w in shop.database.worlds()] == []


def test_merge_at_a_version_the_world_has_left_is_refused(term, shop):
    shop.fork("task-1")
    keys = typed(
        "USE WORLD task-1;",
        "update users set name = 'Ada L.';",  # version 1: what was reviewed
        "update users set name = 'Ada X.';",  # version 2: changed since
        "\\c main",
        "MERGE WORLD task-1 AT VERSION 1;",
        "\\q",
    )
    assert term.run(keys) == 0
    assert term.err.getvalue() == (
        "ERROR: task-1 is at version 2, not 1: it changed since; look at its diff again, "
        "then use its version now\n"
    )
    assert names(shop) == ["Ada"] and names(shop, "task-1") == ["Ada X."]


def test_a_person_reviews_and_approves_an_agents_held_merge_in_the_shell(term, shop):
    rights = ["read", "fork", "write_own", "write_main", "merge_own"]
    shop.call("agent", action="create", name="bot", rights=rights)
    shop.sql("CREATE MERGE POLICY small WITH (max_rows = 0)")
    shop.sql("ALTER AGENT bot SET (policy = small)")
    bot = shop.as_agent("bot")
    shop.call("fork", bot, name="bot-1")
    shop.call("sql", bot, branch="bot-1", sql="update users set name = 'Ada B.'")
    with pytest.raises(chronos_lite.ChronosError, match="it's queued"):
        shop.call("merge", bot, branch="bot-1")
    keys = typed("SHOW REVIEWS;", "MERGE WORLD bot-1 AT VERSION 1;", "\\q")
    assert term.run(keys) == 0
    shown = term.out.getvalue()
    assert "merge policy small: it changes 1 row (at most 0)" in shown
    assert "merged 1 change from bot-1 into main" in shown
    assert names(shop) == ["Ada B."]


# --- 2. multi-line input ---------------------------------------------------------------------


def test_enter_inside_a_statement_adds_a_line_and_it_runs_at_its_semicolon(term, shop, tmp_path):
    keys = typed(
        "select",
        "  name",  # each Enter before the ; is a new line of the same input
        "from users",
        ";",
        "select length('a;",  # a ; inside a string doesn't end it
        "b') as n;",
        "create trigger t after insert on users begin",
        "  update users set email = new.name || '@x' where id = new.id;",  # not yet: END;
        "end;",
        "insert into users(name) values ('Bo');",
        "\\q",
    )
    assert term.run(keys) == 0
    assert term.err.getvalue() == ""
    out = term.out.getvalue().split("\n", 1)[1]
    assert out == ADA + " n\n---\n 4\n(1 row)\nCREATE TRIGGER\nINSERT 0 1\n"
    assert shop.query("select email from users where name = 'Bo'") == [{"email": "Bo@x"}]
    entries = FileHistory(str(tmp_path / "history")).load_history_strings()
    assert "select\n  name\nfrom users\n;" in list(entries)


# --- 8. worlds -------------------------------------------------------------------------------


def test_use_world_switches_and_merging_it_goes_back_to_main(term, shop):
    keys = typed(
        "FORK WORLD w;",
        "USE WORLD w;",
        "insert into users(name, email) values ('Bo', 'bo@x');",
        "MERGE WORLD w;",
        "select count(*) as n from users;",
        "\\q",
    )
    assert term.run(keys) == 0
    assert term.prompts == ["main=> ", "w=> ", "main=> "]
    assert term.shell.prompt() == "main=> " and term.shell.branch == "main"
    out = term.out.getvalue()
    assert "now on w\nINSERT 0 1\n" in out
    assert "(w is finished: now on main)\n" in out
    assert "merged 1 change from w into main\n" in out
    assert out.endswith(" n\n---\n 2\n(1 row)\n")
    assert names(shop) == ["Ada", "Bo"]
    assert term.err.getvalue() == ""


def test_finishing_a_nested_world_goes_back_to_its_parent(term, shop):
    keys = typed(
        "FORK WORLD a;",
        "FORK WORLD b FROM a;",
        "USE WORLD b;",
        "update users set name = 'Ada B.';",
        "MERGE WORLD b;",  # into a
        "select name from users;",
        "\\discard a",
        "USE WORLD nowhere;",
        "\\q",
    )
    assert term.run(keys) == 0
    out = term.out.getvalue()
    assert "(b is finished: now on a)\n" in out
    assert " name\n--------\n Ada B.\n(1 row)\ndiscarded branch a (world id " in out
    assert ")\n(a is finished: now on main)\n" in out  # after the reply that finished it
    assert term.prompts == ["main=> ", "b=> ", "a=> ", "main=> "]
    assert term.err.getvalue() == "ERROR: no branch 'nowhere'; branches: main\n"
    assert names(shop) == ["Ada"]


def test_shell_started_on_a_world(shop, folder, tmp_path):
    shop.fork("task-1")
    term = Terminal(shop.database, folder, tmp_path / "history", branch="task-1")
    assert term.run(typed("\\c", "update users set name = 'A.';", "\\q")) == 0
    assert "branch task-1." in term.out.getvalue().split("\n", 1)[0]
    assert term.out.getvalue().split("\n", 1)[1] == "on task-1\nUPDATE 1\n"
    assert term.prompts == ["task-1=> "]
    assert names(shop, "task-1") == ["A."] and names(shop) == ["Ada"]
