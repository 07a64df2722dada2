"""Tab completion in the shell: tables, columns, worlds, commands and keywords, following the
schema and the branch."""

from __future__ import annotations

from io import StringIO

from prompt_toolkit.input import PipeInput
from terminal import (
    ENTER,
    completer,
    typed,
    wait_until,
)

from chronos_lite.shell import repl
from chronos_lite.shell.session import Shell

# --- 3. completion ---------------------------------------------------------------------------


def test_completion_of_tables_columns_worlds_commands_and_keywords(shop):
    shop.sql("create table orders(id integer primary key, user_id integer, total real)")
    shop.fork("task-1")
    shop.fork("tally")
    complete = completer(Shell(shop.database, out=StringIO(), err=StringIO(), interactive=True))
    assert complete("select * from us") == ["users"]
    assert complete("select * from users u join or") == ["orders"]
    assert complete("insert into o") == ["orders"]
    assert complete("select na") == ["name", "natural"]
    assert complete("select users.em") == ["users.email"]
    assert complete("select tot") == ["total"]
    assert complete("\\c ta") == ["task-1", "tally"]
    assert complete("MERGE WORLD ta") == ["task-1", "tally"]
    assert complete("merge world ta") == ["task-1", "tally"]
    assert complete("DIFF ta") == ["task-1", "tally"]
    assert complete("FORK WORLD x FROM ta") == ["task-1", "tally"]
    assert complete("\\merge t") == ["task-1", "tally"]
    assert complete("\\d us") == ["users"]
    assert complete("\\wo") == ["\\worlds"]
    assert complete("\\merge-pr") == ["\\merge-preview"]
    assert "\\timing" in complete("\\") and "\\undo-agent" in complete("\\")
    # keywords in the case being typed
    assert complete("SEL") == ["SELECT"]
    assert complete("sel") == ["select"]
    assert complete("select * from users WH") == ["WHEN", "WHERE"]
    assert complete("select * from users wh") == ["when", "where"]
    assert complete("DISC") == ["DISCARD"]  # chronos' own words too


def test_completion_follows_the_schema_and_the_branch(shop):
    shop.fork("task-1")
    shell = Shell(shop.database, out=StringIO(), err=StringIO(), interactive=True)
    tables = completer(shell)

    assert tables("select * from no") == []
    assert shell.run_input("\\c task-1")
    assert shell.run_input("create table notes(id integer primary key, body text);")
    assert tables("select * from no") == ["notes"]  # the world's own table, after its CREATE
    assert tables("select bo") == ["body"]
    assert shell.run_input("\\c main")
    assert tables("select * from no") == []  # not on main
    assert shell.run_input("FORK WORLD fresh;")
    assert tables("\\c fr") == ["fresh"]  # a world forked a moment ago


def test_tab_completes_through_the_prompt(term, shop, monkeypatch):
    sessions: list[repl.PromptSession] = []

    class Recorded(repl.PromptSession):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            sessions.append(self)

    monkeypatch.setattr(repl, "PromptSession", Recorded)

    def tab(inp: PipeInput) -> None:
        wait_until(lambda: bool(sessions), "the prompt")
        buffer = sessions[0].default_buffer

        def tab_after(partial: str, whole: str) -> None:
            inp.send_text(partial)
            # Tab once the completions of what was typed are there (they're computed as one
            # types): Tab then picks the first one
            wait_until(
                lambda: (
                    buffer.complete_state is not None
                    and buffer.complete_state.original_document.text == partial
                    and bool(buffer.complete_state.completions)
                ),
                f"the completions of {partial}",
            )
            inp.send_text("\t")
            wait_until(lambda: buffer.text == whole, f"{whole}, not {buffer.text!r}")

        tab_after("select count(*) from us", "select count(*) from users")
        inp.send_text(";" + ENTER)
        wait_until(lambda: term.out.getvalue().endswith("(1 row)\n"), "the count")
        tab_after("\\c ta", "\\c task-1")  # two worlds: the first
        inp.send_text(ENTER)  # takes the chosen completion; doesn't run yet
        wait_until(
            lambda: buffer.complete_state is None or buffer.complete_state.complete_index is None,
            "the completion taken",
        )
        assert buffer.text == "\\c task-1" and "now on" not in term.out.getvalue()
        inp.send_text(ENTER)
        term.wait_for("now on task-1")
        inp.send_text(typed("\\q"))

    shop.fork("task-1")
    assert term.run("", tab) == 0
    assert term.err.getvalue() == ""
    assert term.out.getvalue().split("\n", 1)[1] == (
        " count(*)\n----------\n        1\n(1 row)\nnow on task-1\n"
    )
    assert term.shell.branch == "task-1"
