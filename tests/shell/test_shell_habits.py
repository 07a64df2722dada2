"""The habits people bring from sqlite3, psql and litecli, typed at the real prompt: sqlite3's
dot-commands (never a silent continuation), psql's \\d, \\dt and \\e, and Tab taking a single
candidate at once, with no menu on a statement's empty new line (issue 30)."""

from __future__ import annotations

import sys
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import PipeInput
from terminal import ADA, ENTER, typed, wait_until

from chronos_lite.operations.registry import REGISTRY
from chronos_lite.shell import repl
from chronos_lite.shell.repl import ShellCompleter

USERS = "CREATE TABLE users(id integer primary key autoincrement, name text, email text unique);"
TABLES = " name  | type\n-------+-------\n users | table\n(1 row)\n"


def _schema(shop) -> None:
    shop.sql("create index users_name on users(name)")
    shop.sql("create view named as select name from users")


def test_sqlite3_dot_commands_run_at_once(term, shop):
    _schema(shop)
    keys = typed(".tables", ".tables u%", ".tables nothing", ".schema users", ".schema")
    assert term.run(keys + typed(".schema nope", ".help", ".headers on", ".foo", ".quit")) == 0
    out, err = term.out.getvalue(), term.err.getvalue()
    assert term.prompts == ["main=> "]  # never a statement's continuation waiting for a ;
    assert out.count(TABLES) == 2 and "no table on main matches nothing\n" in out
    index = "CREATE INDEX users_name on users(name);"
    assert f"\n{USERS}\n{index}\n{USERS}\n{index}\n" in out  # .schema users, then .schema
    assert "CREATE VIEW named as select name from users;\n" in out
    assert "_chronos" not in out  # chronos' own objects stay out of sight
    assert "  .tables [pattern]" in out and "\\dt [pattern]" in out  # .help, psql's beside
    assert "ERROR: no table or view 'nope' on main; there are: named, users\n" in err
    assert "ERROR: .headers: results always show their column names" in err
    unknown = err.split("ERROR: unknown command .foo: ", 1)[1].split("\n", 1)[0]
    assert ".tables, .schema" in unknown and "\\dt, \\d <table>" in unknown and "\\?" in unknown


def test_a_dot_on_a_statements_later_line_stays_sql(term):
    assert term.run(typed("select 1 as a,", ".5 as b;", "\\q")) == 0
    assert term.out.getvalue().split("\n", 1)[1] == " a | b\n---+-----\n 1 | 0.5\n(1 row)\n"


def test_mode_read_and_timer_are_the_shells_own(term, tmp_path):
    script = tmp_path / "one.sql"
    script.write_text("select 'Ada' as name;\n")
    keys = typed(".mode csv", "select 1 as one;", ".mode line", "select 2 as two;", ".mode")
    assert term.run(keys + typed(".mode table", f".read {script}", ".mode yaml", ".exit")) == 0
    out, err = term.out.getvalue(), term.err.getvalue()
    assert "one\n1\n" in out and "\ntwo | 2\n" in out and out.endswith(ADA)
    assert "results show as csv\n" in err  # (beside CSV, what the shell says goes to stderr)
    assert "results show as aligned records\n" in out
    modes = "table | box | column | aligned | line | csv | tabs | markdown | json"
    assert f"ERROR: .mode takes {modes}, not yaml" in err


def test_mode_markdown_and_tabs_write_the_command_lines_formats(term):
    keys = typed(".mode markdown", "select 1 as a, 'x|y' as b;", ".mode tabs", "select 2 as a;")
    assert term.run(keys + typed(".exit")) == 0
    assert (
        term.out.getvalue().split("\n", 1)[1] == "| a | b |\n| --- | --- |\n| 1 | x\\|y |\na\n2\n"
    )
    assert term.err.getvalue() == "results show as markdown\nresults show as tsv\n"


def test_dt_and_d_list_the_tables_and_d_table_describes_it(term, shop):
    _schema(shop)
    assert term.run(typed("\\dt", "\\dt us*", "\\d", "\\d users", "\\q")) == 0
    out = term.out.getvalue().split("\n", 1)[1]
    relations = " name  | type\n-------+-------\n named | view\n users | table\n(2 rows)\n"
    described = REGISTRY.call(shop.database, "describe", {"table": "users"}).text
    assert out == TABLES + TABLES + relations + described + "\n"
    assert term.err.getvalue() == ""


def test_in_a_world_they_show_the_worlds_schema(term, shop):
    shop.fork("task-1")
    keys = typed("USE WORLD task-1;", "create table notes(id integer primary key, body text);")
    keys += typed("alter table users add column age int;", "\\dt", ".schema notes", ".schema users")
    assert term.run(keys + typed("\\c main", ".tables", ".schema notes", "\\q")) == 0
    out, err = term.out.getvalue(), term.err.getvalue()
    world = " name  | type\n-------+-------\n notes | table\n users | table\n(2 rows)\n"
    assert world in out and out.count(TABLES) == 1  # the world's two tables; main's one
    assert 'CREATE TABLE "notes"(id integer primary key, body text);\n' in out
    assert USERS.replace("unique)", "unique, age int)") in out  # the world's column too
    assert "ERROR: no table or view 'notes' on main; there are: users\n" in err


def test_help_lists_the_new_commands(term):
    assert term.run(typed("\\?", "\\? dt", "\\q")) == 0
    out = term.out.getvalue()
    for command in ("\\d [table]", "\\dt [pattern]", "\\e "):
        assert f"\n  {command}" in out
    assert ".tables, .schema [table]" in out and ".help lists them" in out
    assert "\\dt [pattern]  the tables" in out


# --- \e -------------------------------------------------------------------------------------


def _editor(tmp_path: Path, monkeypatch) -> Path:
    """$EDITOR: a script that adds a WHERE to the query in the file it is given (and keeps
    what it saw)."""
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\n"
        "path = pathlib.Path(sys.argv[1])\n"
        "text = path.read_text()\n"
        "pathlib.Path(__file__).with_name('seen.sql').write_text(text)\n"
        "path.write_text(text.rstrip().rstrip(';') + ' where id = 1;\\n')\n"
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    return tmp_path / "seen.sql"


def test_e_edits_the_query_being_typed_and_enter_runs_it(term, shop, tmp_path, monkeypatch):
    seen = _editor(tmp_path, monkeypatch)
    shop.sql("insert into users(name) values ('Grace')")
    # the query's two lines, then \e on a line of its own; the edited query comes back at the
    # prompt, and Enter runs it
    assert term.run(typed("select name", "from users", "\\e", "", "\\q")) == 0
    assert seen.read_text() == "select name\nfrom users\n"
    assert term.out.getvalue().split("\n", 1)[1] == ADA
    assert term.err.getvalue() == ""


def test_e_alone_edits_the_last_query(term, shop, tmp_path, monkeypatch):
    seen = _editor(tmp_path, monkeypatch)
    shop.sql("insert into users(name) values ('Grace')")
    assert term.run(typed("select name from users;", "\\e", "", "\\q")) == 0
    assert seen.read_text() == "select name from users;\n"
    assert term.out.getvalue().endswith(" name\n-------\n Ada\n Grace\n(2 rows)\n" + ADA)


def test_e_without_an_editor_says_so_and_keeps_the_query(term, tmp_path, monkeypatch):
    monkeypatch.setenv("EDITOR", "")
    monkeypatch.setenv("VISUAL", "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no editor, nano nor vi either
    assert term.run(typed("select name from users;", "\\e", "", "\\q")) == 0
    assert term.err.getvalue() == (
        "ERROR: \\e: no editor: set $EDITOR (or $VISUAL), e.g. export EDITOR=nano\n"
    )
    assert term.out.getvalue().endswith(ADA + ADA)  # the query came back: Enter ran it again


def test_e_in_a_script_is_refused(shop):
    from io import StringIO

    from chronos_lite.shell.session import Shell

    out, err = StringIO(), StringIO()
    shell = Shell(shop.database, out=out, err=err)
    assert not shell.run_input("\\e")
    assert err.getvalue() == "ERROR: \\e edits a query at the prompt: a script can't\n"


# --- Tab --------------------------------------------------------------------------------------


def test_one_tab_takes_a_single_candidate(term, shop, monkeypatch):
    sessions: list[repl.PromptSession] = []

    class Recorded(repl.PromptSession):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            sessions.append(self)

    monkeypatch.setattr(repl, "PromptSession", Recorded)
    menus: list[str] = []  # each menu the prompt opened with something in it

    def tab(inp: PipeInput) -> None:
        wait_until(lambda: bool(sessions), "the prompt")
        buffer = sessions[0].default_buffer

        def opened(_buffer: object) -> None:
            state = buffer.complete_state
            if state is not None and state.completions:
                menus.append(state.original_document.text)

        buffer.on_completions_changed += opened
        # typed with the Tab at once, as fast hands do: one Tab is enough
        for partial, whole in [
            ("select count(*) from us\t", "select count(*) from users"),
            (";" + ENTER + "select em\t", "select email"),
        ]:
            inp.send_text(partial)
            wait_until(lambda w=whole: buffer.text == w, whole)
        inp.send_text(" from users" + ENTER)  # no ;: a new line, nothing typed on it yet
        wait_until(lambda: buffer.text == "select email from users\n", "the new line")
        inp.send_text("where id = 1;" + ENTER)  # (the menu of what was typed: after that line)
        term.wait_for("ada@x.org")
        inp.send_text(typed("\\q"))

    assert term.run("", tab) == 0
    assert "ada@x.org" in term.out.getvalue() and term.err.getvalue() == ""
    assert not [text for text in menus if text.endswith("\n")], menus  # none on the new line


def test_no_menu_while_typing_on_an_empty_new_line(shop):
    from io import StringIO

    from chronos_lite.shell.session import Shell

    completions = ShellCompleter(Shell(shop.database, out=StringIO(), err=StringIO()))

    def offered(text: str, requested: bool) -> list[str]:
        event = CompleteEvent(text_inserted=not requested, completion_requested=requested)
        return [c.text for c in completions.get_completions(Document(text), event)]

    assert offered("select *\n", False) == [] and offered("select *\n   ", False) == []
    assert "users" in offered("select *\n", True)  # (asked for: everything that fits)
    assert offered("select *\nfrom us", False) == ["users"]
    assert offered(".ta", False) == [".tables"]
    assert offered(".schema us", False) == ["users"] and offered("\\dt u", False) == ["users"]


def test_tab_on_an_empty_line_indents(term):
    assert term.run(typed("select", "\t1 as one;", "\\q")) == 0
    assert term.out.getvalue().split("\n", 1)[1] == " one\n-----\n   1\n(1 row)\n"


def test_d_table_shows_its_indexes_on_main_and_in_a_world(tmp_path):
    """\\d table (the describe operation, every front end) names the table's indexes, as the
    branch has them."""
    import chronos_lite

    db = chronos_lite.init(tmp_path / "ix")
    db.sql("create table t(id integer primary key, name text); create index t_name on t(name)")
    db.fork("w")
    db.sql("create index t_both on t(name, id)", branch="w")
    assert db.call("describe", table="t").data["tables"][0]["indexes"] == [
        "CREATE INDEX t_name on t(name)"
    ]
    text = db.call("describe", table="t", branch="w").text
    assert text.endswith(
        "index: CREATE INDEX t_name on t(name)\nindex: CREATE INDEX t_both on t(name, id)"
    )
    db.close()


def test_an_operations_format_flag_is_this_calls_in_the_shell(term, shop):
    """\\branches --csv (--format csv, --json) prints what the command line would; --format
    table is the text even under .mode csv."""
    keys = typed("\\branches --csv", "\\branches --format ndjson", ".mode csv")
    assert term.run(keys + typed("\\branches --format table", "\\q")) == 0
    out = term.out.getvalue().split("\n", 1)[1]
    table = REGISTRY.call(shop.database, "branches", {}).text
    assert out == 'name\nmain\n{"name": "main"}\n' + table + "\n"
