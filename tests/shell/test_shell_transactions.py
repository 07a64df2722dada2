"""Transactions in the shell: BEGIN waits for its end, ROLLBACK drops it, a failure at the
prompt leaves it going and in a script rolls it back."""

from __future__ import annotations

from io import StringIO

from helpers import run_cli
from prompt_toolkit.input import PipeInput
from terminal import (
    names,
    typed,
)

from chronos_lite.shell.session import Shell

# --- 7. transactions -------------------------------------------------------------------------


def test_a_transaction_waits_for_its_end_and_rollback_drops_it(term, shop):
    def check_pending(inp: PipeInput) -> None:
        term.wait_for("BEGIN")
        assert term.shell.prompt() == "main=*> "
        inp.send_text(
            typed(
                "insert into users(name) values ('Bo');",
                "USE WORLD main;",
                "\\c main",
                "ROLLBACK;",
                "select count(*) as n from users;",
                "\\q",
            )
        )

    assert term.run(typed("BEGIN;"), check_pending) == 0
    assert term.out.getvalue().split("\n", 1)[1] == (
        "BEGIN\nINSERT 0 1\nROLLBACK\n n\n---\n 1\n(1 row)\n"  # the insert shown, then undone
    )
    assert term.err.getvalue() == (
        "ERROR: a transaction is open: COMMIT or ROLLBACK before switching\n"
        "ERROR: a transaction is open: COMMIT or ROLLBACK before switching\n"
    )
    assert term.prompts == ["main=> ", "main=*> ", "main=> "]
    assert names(shop) == ["Ada"]


def test_a_transaction_typed_over_several_inputs_runs_at_commit(term, shop):
    keys = typed(
        "BEGIN;",
        "insert into users(name, email) values ('Bo', 'bo@x');",
        "insert into users(name, email) values ('Cy', 'cy@x');",
        "COMMIT;",
        "\\q",
    )
    assert term.run(keys) == 0
    assert term.err.getvalue() == ""
    assert "ROLLBACK" not in term.out.getvalue()
    assert term.out.getvalue().count("INSERT 0 1") == 2
    assert names(shop) == ["Ada", "Bo", "Cy"]


def test_a_failing_statement_at_the_prompt_leaves_the_transaction_going(term, shop):
    # As psql's ON_ERROR_ROLLBACK interactive: the statement that failed is left out
    keys = typed(
        "BEGIN;",
        "insert into users(name, email) values ('Bo', 'bo@x');",
        "insert into users(name, email) values ('Ada again', 'ada@x.org');",  # not unique
        "COMMIT;",
        "select count(*) as n from users;",
        "\\q",
    )
    assert term.run(keys) == 0
    err = term.err.getvalue()
    assert "UNIQUE constraint failed: users.email" in err
    assert "(the transaction goes on without this statement)" in err
    assert names(shop) == ["Ada", "Bo"]
    assert term.shell.pending is None
    assert term.out.getvalue().endswith("COMMIT\n n\n---\n 2\n(1 row)\n")


def test_a_failing_statement_in_a_script_rolls_the_whole_transaction_back(shop):
    script = (
        "BEGIN;\ninsert into users(name, email) values ('Bo', 'bo@x');\n"
        "insert into users(name, email) values ('Ada again', 'ada@x.org');\nCOMMIT;\n"
    )
    proc = run_cli(shop.folder, stdin=script, check=False)
    assert proc.returncode == 1
    assert "UNIQUE constraint failed: users.email" in proc.stderr
    assert names(shop) == ["Ada"]


def test_begin_with_nonsense_after_it_is_an_error(shop):
    out, err = StringIO(), StringIO()
    shell = Shell(shop.database, out=out, err=err)
    assert not shell.run_input("\\sql 'BEGIN nonsense here'")
    assert "syntax error" in err.getvalue()


def test_the_end_of_the_input_inside_a_transaction_runs_nothing(shop):
    proc = run_cli(shop.folder, "-c", "BEGIN; insert into users(name) values ('Bo');", check=False)
    assert proc.returncode == 1
    assert proc.stderr == (
        "ERROR: the input ended inside a transaction: it was not run (no COMMIT)\n"
    )
    assert names(shop) == ["Ada"]
