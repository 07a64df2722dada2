"""The shell as a script runner, through the real command: -c, -f, stdin, --json, --csv, -b,
and Ctrl-C stopping a command-line call."""

from __future__ import annotations

import json
import os
import signal
import time
from io import StringIO
from pathlib import Path

import pytest
from helpers import run_cli
from terminal import (
    ADA,
    names,
)

import chronos_lite
from chronos_lite.operations.registry import REGISTRY
from chronos_lite.shell import config
from chronos_lite.shell.session import Shell

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

    from helpers import CHRONOS

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
