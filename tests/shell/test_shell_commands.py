"""The shell's backslash commands: every operation as one, the same text as the MCP tool,
\\d, \\timing, \\x, \\o, \\i, and clear errors."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from helpers import run_cli
from terminal import (
    ADA,
    names,
    typed,
)

from chronos_lite.operations.registry import REGISTRY
from chronos_lite.shell.session import Shell

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
        assert re.search(rf"usage: \\{re.escape(word)}\s", out.getvalue()), word
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
    assert (
        term.err.getvalue() == "ERROR: no such column: nope (columns of users: id, name, email)\n"
    )


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
