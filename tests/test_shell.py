"""The shell, `chronos <folder>`: in-process through prompt_toolkit's pipe input (keys typed as a
person types them, Enter is "\\r"), and the real command for -c, -f, stdin, --json and --csv."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from conftest import run_cli
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

import chronos_lite
from chronos_lite.operations.registry import REGISTRY
from chronos_lite.shell import config, repl
from chronos_lite.shell.config import Settings
from chronos_lite.shell.repl import ShellCompleter
from chronos_lite.shell.session import Shell

ENTER = "\r"
STEP = 20.0  # seconds a step may take before the test gives up (never asserted on)
# Statements that run far longer than the tests wait before pressing Ctrl-C.
LONG_INSERT = (
    "insert into users(name) with recursive c(x) as "
    "(select 1 union all select x+1 from c where x < 100000000) select 'x' || x from c;"
)
LONG_READ = (
    "with recursive c(x) as (select 1 union all select x+1 from c where x < 1000000000) "
    "select count(*) from c;"
)
ADA = " name\n------\n Ada\n(1 row)\n"


def typed(*inputs: str) -> str:
    """Each input typed and Enter pressed after it."""
    return "".join(text + ENTER for text in inputs)


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + STEP
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


class Terminal:
    """An interactive shell at a prompt_toolkit prompt whose keyboard is a pipe."""

    def __init__(
        self,
        db: chronos_lite.Chronos,
        folder: Path,
        history: Path,
        settings: Settings | None = None,
        branch: str = "main",
    ) -> None:
        self.folder, self.history = folder, history
        self.out, self.err = StringIO(), StringIO()
        self.shell = Shell(
            db, branch, out=self.out, err=self.err, settings=settings, interactive=True
        )
        self.prompts: list[str] = []  # each prompt as it was shown (repeats left out)
        prompt = self.shell.prompt

        def recording() -> str:
            text = prompt()
            if not self.prompts or self.prompts[-1] != text:
                self.prompts.append(text)
            return text

        self.shell.prompt = recording  # type: ignore[method-assign]

    def run(
        self,
        keys: str = "",
        driver: Callable[[PipeInput], None] | None = None,
        startup: tuple[str, ...] = (),
    ) -> int:
        """Type ``keys``, then let ``driver`` type more from another thread (it may wait for
        output first); the prompt loop runs here, in the main thread, as in `chronos`."""
        failure: list[BaseException] = []
        with create_pipe_input() as inp:
            inp.send_text(keys)

            def drive() -> None:
                try:
                    if driver is not None:
                        driver(inp)
                except BaseException as exc:  # reported by the test's thread
                    failure.append(exc)
                    inp.close()  # the end of the input: the prompt loop ends

            helper = threading.Thread(target=drive, daemon=True)
            helper.start()
            hung = threading.Event()

            def hang_up() -> None:  # a session that doesn't end fails instead of hanging
                hung.set()
                inp.close()

            watchdog = threading.Timer(6 * STEP, hang_up)
            watchdog.start()
            try:
                code = repl.run(
                    self.shell,
                    str(self.folder),
                    self.history,
                    list(startup),
                    input=inp,
                    output=DummyOutput(),
                )
            finally:
                watchdog.cancel()
            helper.join(STEP)
        if failure:
            raise failure[0]
        assert not hung.is_set(), "the session didn't end"
        return code

    def wait_for(self, text: str) -> str:
        wait_until(lambda: text in self.out.getvalue(), repr(text))
        return self.out.getvalue()


@pytest.fixture
def term(shop, folder, tmp_path) -> Terminal:
    return Terminal(shop.database, folder, tmp_path / "history")


def names(db: chronos_lite.Chronos, branch: str = "main") -> list[str]:
    return [r["name"] for r in db.query("select name from users order by id", branch=branch)]


def completer(shell: Shell) -> Callable[[str], list[str]]:
    """What Tab offers after a text (one completer per shell, as the prompt has)."""
    completions = ShellCompleter(shell)

    def complete(text: str) -> list[str]:
        return [c.text for c in completions.get_completions(Document(text), CompleteEvent())]

    return complete


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


# --- 4. Ctrl-C -------------------------------------------------------------------------------


@pytest.fixture
def ctrl_c():
    """Ctrl-C as a terminal sends it: SIGINT to the process, KeyboardInterrupt in the main
    thread (set explicitly: a test runner may have changed the handler)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach only the main thread")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def press_ctrl_c_while_running(shell: Shell) -> Callable[[PipeInput], None]:
    def driver(_inp: PipeInput) -> None:
        assert shell.running.wait(STEP), "the statement never started"
        time.sleep(0.3)  # well into the statement
        os.kill(os.getpid(), signal.SIGINT)

    return driver


@pytest.mark.parametrize("statement", [LONG_INSERT, LONG_READ], ids=["write", "read"])
def test_ctrl_c_cancels_a_long_statement_and_the_shell_goes_on(term, shop, ctrl_c, statement):
    keys = typed(statement, "select count(*) from users;", "\\q")
    assert term.run(keys, press_ctrl_c_while_running(term.shell)) == 0
    assert term.err.getvalue() == "ERROR: cancelled: the statement was stopped; nothing changed\n"
    assert term.out.getvalue().split("\n", 1)[1] == " count(*)\n----------\n        1\n(1 row)\n"
    assert names(shop) == ["Ada"]
    assert not term.shell.running.is_set()


def test_ctrl_c_on_a_world_leaves_the_world_unchanged(term, shop, ctrl_c):
    shop.fork("task-1")
    term.shell.switch("task-1")
    keys = typed(LONG_INSERT, "update users set name = 'Ada L.';", "\\q")
    assert term.run(keys, press_ctrl_c_while_running(term.shell)) == 0
    assert "cancelled" in term.err.getvalue()
    assert term.out.getvalue().endswith("UPDATE 1\n")
    assert names(shop, "task-1") == ["Ada L."]
    assert names(shop) == ["Ada"]


def test_ctrl_c_at_the_prompt_drops_the_input(term):
    assert term.run("select 'typed' as t\x03" + typed("select 2 as two;", "\\q")) == 0
    assert term.out.getvalue().split("\n", 1)[1] == " two\n-----\n   2\n(1 row)\n"
    assert term.err.getvalue() == ""


# --- 5. leaving ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "leave", ["\x04", typed("\\q"), typed("exit"), typed("quit"), typed("EXIT;")]
)
def test_ctrl_d_backslash_q_and_exit_leave_with_0(term, leave):
    # what's typed after leaving isn't run
    assert term.run(typed("select 1 as one;") + leave + typed("select 2 as two;")) == 0
    out = term.out.getvalue()
    assert " one" in out and " two" not in out
    assert term.err.getvalue() == ""


def test_the_end_of_the_input_leaves_with_0(term):
    def hang_up(inp: PipeInput) -> None:
        term.wait_for("(1 row)")
        inp.close()

    assert term.run(typed("select 1 as one;"), hang_up) == 0


# --- 6. backslash commands -------------------------------------------------------------------


def test_help_lists_the_commands_and_every_operation(term):
    assert term.run(typed("\\?", "\\? merge", "\\? x", "\\q")) == 0
    out = term.out.getvalue()
    for command in ("\\?", "\\c [branch]", "\\timing", "\\x", "\\i <file>", "\\o [file]", "\\q"):
        assert f"\n  {command}" in out
    for op in REGISTRY:
        assert f"\n  \\{op.name.replace('_', '-')} " in out
    assert "\\branches              List branches (\\worlds)" in out
    assert "MERGE WORLD <branch> [INTO <world>] [AT VERSION <n>] [DRY RUN]" in out
    assert "usage: \\merge " in out
    for option in ("--into", "--resolve", "--version", "--only-tables", "[BRANCH]"):
        assert option in out
    assert "\\x [on|off|auto]  expanded output: a record per row" in out
    assert term.err.getvalue() == ""


def test_every_operation_is_a_backslash_command(shop):
    out, err = StringIO(), StringIO()
    shell = Shell(shop.database, out=out, err=err, interactive=True)
    for op in REGISTRY:
        word = op.name.replace("_", "-")
        shell.run_input(f"\\{word}")  # most need arguments: the registry says which
        assert "unknown command" not in err.getvalue(), word
        shell.run_input(f"\\? {word}")
        assert f"usage: \\{word} " in out.getvalue(), word
    assert "ERROR: 'sql' is required" in err.getvalue()
    assert "ERROR: 'branch' is required" in err.getvalue()


@pytest.mark.parametrize(
    ("command", "op", "args"),
    [
        ("\\history", "history", {"branch": "main"}),
        ("\\history task-1", "history", {"branch": "task-1"}),
        ("\\branches", "branches", {}),
        ("\\worlds", "branches", {}),
        ("\\describe", "describe", {}),
        ("\\d", "describe", {}),
        ("\\d users", "describe", {"table": "users"}),
        ("\\diff task-1", "diff", {"branch": "task-1"}),
        ("\\diff task-1 --as-sql", "diff", {"branch": "task-1", "as_sql": True}),
        ("\\get users 1", "get", {"table": "users", "id": "1"}),
        ("\\get users 1 -b task-1", "get", {"table": "users", "id": "1", "branch": "task-1"}),
        ("\\merge-preview task-1", "merge_preview", {"branch": "task-1"}),
    ],
)
def test_an_operation_shows_the_same_text_as_the_mcp_tool(shop, command, op, args):
    shop.fork("task-1", meta={"task": "fix names"})
    shop.sql("update users set name = 'Ada L.' where id = 1", branch="task-1")
    out, err = StringIO(), StringIO()
    shell = Shell(shop.database, out=out, err=err, interactive=True)
    assert shell.run_input(command), err.getvalue()
    assert out.getvalue() == REGISTRY.call(shop.database, op, args).text + "\n"


def test_d_diff_and_worlds_in_the_prompt(term, shop):
    shop.fork("task-1")
    shop.sql("insert into users(name, email) values ('Bo', 'bo@x')", branch="task-1")
    keys = typed("\\d users", "\\worlds", "\\c task-1", "\\diff", "\\q")
    assert term.run(keys) == 0
    out = term.out.getvalue()
    assert "users: 1 row\n field | type    | rules       |" in out
    assert " email | TEXT    | unique      |" in out
    assert re.search(r"\n task-1 \| w[0-9a-f]{16} \| main   \|", out)
    assert out.endswith(
        "1 change on task-1 (users: 0 deleted, 0 updated, 1 inserted)\n"
        '+ users/2 {"id": 2, "name": "Bo", "email": "bo@x"}\n'
    )
    assert term.err.getvalue() == ""


def test_diff_on_main_is_a_clear_error(term):
    assert term.run(typed("\\diff", "\\q")) == 0
    assert term.err.getvalue().startswith("ERROR: main has no fork to compare with")


def test_timing_prints_each_calls_time(term):
    keys = typed("\\timing on", "select 1 as one;", "\\d users", "\\timing", "select 2 as two;")
    assert term.run(keys + typed("\\timing off", "\\timing maybe", "\\q")) == 0
    out = term.out.getvalue().split("\n", 1)[1]
    assert re.fullmatch(
        r"Timing is on\.\n one\n-----\n   1\n\(1 row\)\nTime: \d+\.\d{3} ms\n"
        r"users: 1 row\n.*\nTime: \d+\.\d{3} ms\n"
        r"Timing is off\.\n two\n-----\n   2\n\(1 row\)\nTiming is off\.\n",
        out,
        re.S,
    )
    assert term.err.getvalue() == "ERROR: \\timing takes on | off, not maybe\n"


def test_expanded_display(term, shop, monkeypatch):
    monkeypatch.setenv("COLUMNS", "20")  # narrower than the users table
    shop.sql("insert into users(name, email) values ('Bo', null)")
    keys = typed(
        "\\x on",
        "select * from users;",
        "\\x auto",
        "select * from users;",
        "select id from users order by id;",  # fits: a table
        "select * from users where id = 0;",
        "\\x",
        "select id from users where id = 1;",
        "\\x sideways",
        "\\q",
    )
    assert term.run(keys) == 0
    records = (
        "-[ RECORD 1 ]+----------\nid    | 1\nname  | Ada\nemail | ada@x.org\n"
        "-[ RECORD 2 ]+----------\nid    | 2\nname  | Bo\nemail |\n"
    )
    assert term.out.getvalue().split("\n", 1)[1] == (
        f"Expanded display is on.\n{records}Expanded display is auto.\n{records}"
        " id\n----\n  1\n  2\n(2 rows)\n"
        " id | name | email\n----+------+-------\n(0 rows)\n"
        "Expanded display is off.\n id\n----\n  1\n(1 row)\n"
    )
    assert term.err.getvalue() == "ERROR: \\x takes off | on | auto, not sideways\n"


def test_o_sends_results_to_a_file_and_back(term, tmp_path):
    results = tmp_path / "results.txt"
    keys = typed(
        f"\\o {results}",
        "select name from users;",
        "select nope from users;",  # errors still show here
        "\\o",
        "select 2 as two;",
        "\\q",
    )
    assert term.run(keys) == 0
    assert results.read_text() == ADA
    assert term.out.getvalue().split("\n", 1)[1] == " two\n-----\n   2\n(1 row)\n"
    assert term.err.getvalue() == "ERROR: no such column: nope\n"


def test_o_to_a_folder_that_does_not_exist_is_an_error(term, tmp_path):
    assert term.run(typed(f"\\o {tmp_path}/no/such/dir/f", "select 2 as two;", "\\q")) == 0
    assert term.err.getvalue().startswith(f"ERROR: \\o: can't write {tmp_path}/no/such/dir/f")
    assert " two" in term.out.getvalue()


def test_i_runs_a_file(term, shop, tmp_path):
    script = tmp_path / "script.sql"
    script.write_text(
        "insert into users(name, email)\n  values ('Bo', 'bo@x');\n\\worlds\n\n"
        "select count(*) as n from users;\n"
    )
    assert term.run(typed(f"\\i {script}", "\\i nowhere.sql", "\\q")) == 0
    out = term.out.getvalue()
    assert "INSERT 0 1\n name | world_id |" in out
    assert out.endswith(" n\n---\n 2\n(1 row)\n")
    assert term.err.getvalue() == "ERROR: \\i: can't read nowhere.sql: No such file or directory\n"
    assert names(shop) == ["Ada", "Bo"]


def test_i_with_an_error_says_what_happened(term, shop, tmp_path):
    script = tmp_path / "script.sql"
    script.write_text(
        "insert into users(name) values ('a');\n"
        "select nope;\n"
        "insert into users(name) values ('b');\n"
    )
    assert term.run(typed(f"\\i {script}", "\\q")) == 0
    err = term.err.getvalue()
    assert err.startswith(f"{script}:2: ERROR: no such column: nope\n")
    ran_on = names(shop) == ["Ada", "a", "b"]
    assert not (ran_on and "stopped at its first error" in err), (names(shop), err)


def test_unknown_backslash_command_is_a_clear_error(term):
    assert term.run(typed("\\foo", "\\merge 'task", "select 2 as two;", "\\q")) == 0
    assert term.err.getvalue() == (
        "ERROR: unknown command \\foo; \\? lists the commands\n"
        "ERROR: \\merge: No closing quotation (close the quote)\n"
    )
    assert " two" in term.out.getvalue()


def test_a_column_named_by_its_expression(term, shop):
    assert term.run(typed("select 1;", "select 1 + 1;", "\\q")) == 0
    out = term.out.getvalue()
    assert "chronos: user sql" not in out
    assert " 1\n---\n 1\n(1 row)\n" in out
    proc = run_cli(shop.folder, "--json", "-c", "select 1 + 1")
    assert json.loads(proc.stdout) == [{"1 + 1": 2}]


def test_a_value_over_several_lines_keeps_the_table_aligned(term):
    query = "select 'line one' || char(10) || 'two' as s, 1 as n union all select 'x', 22;"
    assert term.run(typed(query, "\\q")) == 0
    table = term.out.getvalue().split("\n")[1:-2]  # without the banner and (2 rows)
    bar = table[0].index("|")
    assert [line.find("|") for line in table[2:] if "|" in line] == [bar] * 3, table
    assert any(line.startswith(" two") for line in table), table


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


# --- 9. the config file ----------------------------------------------------------------------


@pytest.fixture
def xdg(tmp_path, monkeypatch) -> Path:
    """XDG folders of this test's own: the config file's path."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("PAGER", raising=False)
    path = tmp_path / "config" / "chronos" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def test_no_config_file_gives_the_defaults(xdg, tmp_path):
    assert config.config_path() == xdg
    assert config.history_path() == tmp_path / "state" / "chronos" / "history"
    settings = config.load()
    assert (settings.format, settings.expanded, settings.timing) == ("aligned", "auto", False)
    assert settings.startup == [] and settings.problems == []


def test_the_config_applies_to_interactive_shells(xdg, shop, folder, tmp_path):
    xdg.write_text(
        'pager = false\nformat = "json"\nexpanded = "on"\ntiming = true\n'
        'startup = ["\\\\timing off", "select count(*) as n from users;"]\n'
    )
    settings = config.load()
    assert settings.problems == []
    assert settings.pager is None
    assert settings.startup == ["\\timing off", "select count(*) as n from users;"]
    term = Terminal(shop.database, folder, config.history_path(), settings=settings)
    assert (term.shell.format, term.shell.expanded, term.shell.timing) == ("json", "on", True)
    keys = typed("\\timing on", "select name from users;", "\\q")
    assert term.run(keys, startup=tuple(settings.startup)) == 0
    out = term.out.getvalue().split("\n", 1)[1]
    assert out == '[{"n": 1}]\n[{"name": "Ada"}]\n'  # stdout: JSON alone
    assert re.fullmatch(  # the shell's own notes beside it
        r"Timing is off\.\nTiming is on\.\nTime: \d+\.\d{3} ms\n", term.err.getvalue()
    )
    # a script's output doesn't depend on the config
    script = Shell(shop.database, out=StringIO(), settings=settings)
    assert (script.format, script.expanded, script.timing) == ("aligned", "off", False)
    proc = run_cli(folder, "-c", "select name from users")
    assert proc.stdout == ADA and proc.stderr == ""


def test_expanded_from_the_config(xdg, shop, folder, tmp_path):
    xdg.write_text('expanded = "on"\n')
    term = Terminal(shop.database, folder, tmp_path / "history", settings=config.load())
    assert term.run(typed("select name from users;", "\\q")) == 0
    assert term.out.getvalue().endswith("-[ RECORD 1 ]+----\nname | Ada\n")


def test_a_bad_setting_is_reported_and_the_shell_still_starts(xdg, shop, folder, tmp_path):
    xdg.write_text('format = "yaml"\ntiming = "yes"\ncolour = "red"\nexpanded = "auto"\n')
    settings = config.load()
    assert settings.problems == [
        f"{xdg}: 'format' must be aligned | csv | json, not 'yaml'",
        f"{xdg}: 'timing' must be true or false, not 'yes'",
        f"{xdg}: unknown setting 'colour' (settings: pager, format, expanded, timing, startup)",
    ]
    assert (settings.format, settings.timing, settings.expanded) == ("aligned", False, "auto")
    term = Terminal(shop.database, folder, tmp_path / "history", settings=settings)
    assert term.run(typed("select name from users;", "\\q")) == 0
    assert ADA in term.out.getvalue()
    proc = run_cli(folder, "-c", "select name from users")
    assert proc.stdout == ADA
    assert proc.stderr == ""  # a script doesn't read the config file: nothing to report


def test_a_config_file_that_is_not_toml(xdg, shop):
    xdg.write_text("format = \n")
    settings = config.load()
    assert len(settings.problems) == 1
    assert settings.problems[0].startswith(f"{xdg}: can't read it (")
    assert settings.problems[0].endswith("); using the defaults")
    assert settings.format == "aligned"
    proc = run_cli(shop.folder, "-X", "-c", "select name from users")  # -X: no config
    assert proc.stdout == ADA and proc.stderr == ""


def test_the_history_file_is_written(xdg, shop, folder):
    path = config.history_path()
    for keys in (typed("select 41 as answer;", "\\q"), typed("select", "42 as answer;", "\\q")):
        term = Terminal(shop.database, folder, path)
        assert term.run(keys) == 0
    assert path.is_file()
    assert list(FileHistory(str(path)).load_history_strings()) == [
        "\\q",
        "select\n42 as answer;",
        "\\q",
        "select 41 as answer;",
    ]


# --- 10. scripts: the real command -----------------------------------------------------------


def test_c_runs_one_or_several_statements(shop):
    folder = shop.folder
    assert run_cli(folder, "-c", "select name from users").stdout == ADA
    proc = run_cli(
        folder, "-c", "insert into users(name) values ('Bo'); select count(*) as n from users;"
    )
    assert proc.stdout == "INSERT 0 1\n n\n---\n 2\n(1 row)\n"
    proc = run_cli(
        folder,
        "-c",
        "FORK WORLD t",
        "-c",
        "USE WORLD t",
        "-c",
        "delete from users where name = 'Bo'",
        "--command",
        "\\diff",
    )
    assert proc.stdout.startswith("created branch t (world id w")
    assert "now on t\nDELETE 1\n1 change on t (users: 1 deleted, 0 updated, 0 inserted)\n" in (
        proc.stdout
    )
    assert names(shop) == ["Ada", "Bo"] and names(shop, "t") == ["Ada"]


def test_stdin_and_f_run_a_script(shop, tmp_path):
    script = "select name from users;\n\\worlds\ninsert into users(name)\nvalues ('Bo');\n"
    proc = run_cli(shop.folder, stdin=script)
    assert proc.stdout.startswith(ADA + " name | world_id |")
    assert proc.stdout.endswith("(1 row)\nINSERT 0 1\n")
    path = tmp_path / "script.sql"
    path.write_text(script)
    proc = run_cli(shop.folder, "-f", path)
    assert proc.stdout.endswith("(1 row)\nINSERT 0 1\n")
    assert names(shop) == ["Ada", "Bo", "Bo"]
    proc = run_cli(shop.folder, "-f", tmp_path / "none.sql", check=False)
    assert proc.returncode == 1
    missing = tmp_path / "none.sql"
    assert proc.stderr == f"chronos: can't read {missing}: No such file or directory\n"


def test_json_is_a_document_per_statement(shop):
    proc = run_cli(
        shop.folder,
        "--json",
        "-c",
        "select id, name, email from users; update users set name = 'Ada L.' where id = 1; "
        "select name from users where id = 0",
        "-c",
        "\\worlds",
    )
    assert [json.loads(line) for line in proc.stdout.splitlines()] == [
        [{"id": 1, "name": "Ada", "email": "ada@x.org"}],
        {"tag": "UPDATE 1"},
        [],
        {"branches": [{"name": "main"}]},
    ]


def test_csv(shop):
    shop.sql("""insert into users(name, email) values ('x, "y"', null)""")
    proc = run_cli(
        shop.folder, "--csv", "-c", "select * from users; update users set email = 'e' where id = 2"
    )
    assert proc.stdout == 'id,name,email\n1,Ada,ada@x.org\n2,"x, ""y""",\n'
    assert proc.stderr == "UPDATE 1\n"  # tags aren't data: not in the CSV


def test_the_first_error_stops_the_script_with_status_1(shop, tmp_path):
    proc = run_cli(
        shop.folder,
        "-c",
        "insert into users(name) values ('Bo'); "
        "insert into users(email) values ('ada@x.org'); "  # not unique
        "insert into users(name) values ('Cy')",
        "-c",
        "insert into users(name) values ('Di')",
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stdout == "INSERT 0 1\n"
    assert proc.stderr == "ERROR: UNIQUE constraint failed: users.email\n"
    assert names(shop) == ["Ada", "Bo"]
    script = tmp_path / "script.sql"
    script.write_text("insert into users(name) values ('Ed');\n\nselect nope;\n\\worlds\n")
    proc = run_cli(shop.folder, "-f", script, check=False)
    assert proc.returncode == 1
    assert proc.stdout == "INSERT 0 1\n"
    assert proc.stderr == f"{script}:3: ERROR: no such column: nope\n"
    proc = run_cli(
        shop.folder, stdin="select nope;\ninsert into users(name) values ('Fy');\n", check=False
    )
    assert proc.returncode == 1
    assert proc.stderr == "<stdin>:1: ERROR: no such column: nope\n"
    assert names(shop) == ["Ada", "Bo", "Ed"]


def test_b_runs_on_a_world(shop):
    shop.fork("task-1")
    proc = run_cli(shop.folder, "-b", "task-1", "-c", "update users set name = 'A.'", "-c", "DIFF")
    assert proc.stdout.startswith("UPDATE 1\n1 change on task-1 ")
    assert names(shop, "task-1") == ["A."] and names(shop) == ["Ada"]


def test_a_missing_branch(shop):
    proc = run_cli(shop.folder, "-b", "nope", "-c", "select 1 as one", check=False)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "chronos: no branch 'nope'; branches: main\n"
    proc = run_cli(
        shop.folder,
        "-c",
        "MERGE WORLD nope",
        "-c",
        "insert into users(name) values ('Bo')",
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "ERROR: no branch 'nope'; branches: main\n"
    proc = run_cli(shop.folder, "-c", "\\c nope", "-c", "select 1 as one", check=False)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "ERROR: no branch 'nope'; branches: main\n"
    assert names(shop) == ["Ada"]


def test_backslash_command_in_c(shop):
    proc = run_cli(shop.folder, "-c", "\\d users")
    assert proc.stdout == REGISTRY.call(shop.database, "describe", {"table": "users"}).text + "\n"
    proc = run_cli(shop.folder, "-c", "\\nope", check=False)
    assert proc.returncode == 1
    assert proc.stderr == "ERROR: unknown command \\nope; \\? lists the commands\n"


def test_a_result_wider_than_the_screen_is_shown_as_records(shop, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    out, err = StringIO(), StringIO()
    shell = Shell(
        shop.database, out=out, err=err, settings=config.Settings(pager=None), interactive=True
    )
    assert shell.expanded == "auto"  # the default
    assert shell.run_input("select 'a' as short;")
    assert out.getvalue() == " short\n-------\n a\n(1 row)\n"
    assert shell.run_input(f"select '{'x' * 50}' as wide, 1 as n;")
    assert out.getvalue().endswith(f"-[ RECORD 1 ]+{'-' * 51}\nwide | {'x' * 50}\nn    | 1\n")


LONG_WRITE = (
    "insert into users(name) with recursive c(x) as (select 1 union all select x + 1 from c "
    "where x < 100000000) select 'x' || x from c"
)


def _cpu_seconds(pid: int) -> float:
    """CPU time a process has used (Linux' /proc), or the time since asked elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        time.sleep(3)
        return 3.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("how", [["sql", LONG_WRITE], ["-c", LONG_WRITE]])
def test_ctrl_c_stops_a_command_line_call_at_once(shop, how):
    import subprocess

    from conftest import CHRONOS

    shop.close()  # (the child writes)
    proc = subprocess.Popen(
        [CHRONOS, str(shop.folder), *how], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while _cpu_seconds(proc.pid) < 1.5:  # past its imports: well into the statement
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)  # stopped: SQLite was interrupted
    assert proc.returncode == 1, (out, err)
    assert "cancelled: the statement was stopped; nothing changed" in err
    with chronos_lite.open(shop.folder) as db:
        assert names(db) == ["Ada"]


def test_json_and_csv_stdout_hold_only_their_format(shop):
    shop.fork("j")
    proc = run_cli(
        shop.folder,
        "--json",
        "-b",
        "j",
        "-c",
        "\\timing on",
        "-c",
        "select 2 as n",
        "-c",
        "DISCARD WORLD j",
        "-c",
        "USE WORLD main",
        "-c",
        "BEGIN; select 1 as one; COMMIT;",
    )
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert docs[:2] == [[{"n": 2}], {"discarded": ["j"]}]
    assert "(j is finished: now on main)" in proc.stderr and "now on main" in proc.stderr
    proc = run_cli(shop.folder, "--csv", "-c", "\\timing on", "-c", "select 2 as n")
    assert proc.stdout == "n\n2\n"


def test_fork_in_the_shell_forks_from_the_shells_branch(shop):
    shop.fork("a")
    shell = Shell(shop.database, "a", out=StringIO(), err=StringIO())
    assert shell.run_input("\\fork b") and shell.run_input("FORK WORLD c;")
    assert shop.database.world("b").parent == "a" and shop.database.world("c").parent == "a"


def test_a_failing_transaction_in_a_file_names_its_statements_line(shop, tmp_path):
    script = tmp_path / "tx.sql"
    script.write_text(
        "BEGIN;\ninsert into users(name, email) values ('Bo', 'bo@x');\n\n"
        "insert into users(name, email) values ('Ada again', 'ada@x.org');\nCOMMIT;\n"
    )
    proc = run_cli(shop.folder, "-f", script, check=False)
    assert proc.returncode == 1
    assert proc.stderr == (
        f"{script}:4: ERROR: UNIQUE constraint failed: users.email (the transaction was "
        "rolled back: nothing of it was written)\n"
    )
    assert names(shop) == ["Ada"]
