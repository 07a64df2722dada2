"""Starting fast (issue 24): what a command imports, each in a new Python process.

The times are measured by benchmarks/bench_shell.py; here only what they rest on: a command
imports no module it doesn't use (jsonschema, prompt_toolkit, the operations it doesn't run,
apsw.ext, ...), and the registry still lists every operation, in order.
"""

from __future__ import annotations

import json
import subprocess
import sys

import chronos_lite
from chronos_lite.errors import ChronosError
from chronos_lite.operations import MODULES
from chronos_lite.operations.registry import Registry

# What no command that runs one statement needs (the validator, the prompt, the MCP SDK and
# a web server, loading files, vtab's old helper, tokens, the pager).
HEAVY = [
    "jsonschema",
    "prompt_toolkit",
    "mcp",
    "uvicorn",
    "sqlite_utils",
    "apsw.ext",
    "secrets",
    "shutil",
    "subprocess",
]

# The operations in the order they are listed (tools/list, help): as before they loaded lazily.
ORDER = [
    *("describe", "find", "sql", "get", "put", "insert", "delete"),
    *("fork", "set_meta", "branches", "discard"),
    *("diff", "merge", "merge_preview", "rebase", "check_reads", "simulate", "replay"),
    *("merge_policies", "check_merge_policy", "set_merge_policy", "drop_merge_policy"),
    *("reviews", "review"),
    *("merge_checks", "set_merge_check", "drop_merge_check"),
    *("readers", "mark_reader", "drop_reader"),
    *("restore", "checkpoint", "rollback", "history", "undo_merge", "config", "undo_agent"),
    *("agent", "audit", "mode", "index", "backup", "export", "verify", "hash"),
]


def python(code: str, cwd) -> dict:
    """Run ``code`` in a new Python process; it ends by printing a JSON object."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,  # (not the checkout: the package as installed)
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.splitlines()[-1])


MODULES_NOW = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def loaded_operations(modules: list[str]) -> set[str]:
    return set(MODULES.values()) & set(modules)


def test_importing_the_cli_imports_nothing_heavy_and_no_operation(tmp_path):
    modules = python(f"import chronos_lite.cli\n{MODULES_NOW}", tmp_path)
    assert "chronos_lite.cli" in modules
    assert [m for m in HEAVY if m in modules] == []
    assert loaded_operations(modules) == set()
    assert "chronos_lite.api" not in modules  # (the package's names load on first use)
    assert "chronos_lite.shell.session" not in modules


def test_one_sql_statement_imports_only_what_it_runs(tmp_path):
    chronos_lite.init(tmp_path / "shop").close()
    code = (
        "import contextlib, io\n"
        "from chronos_lite.cli import run\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    run([{str(tmp_path / 'shop')!r}, 'sql', 'select 41 + 1'])\n"
        "assert '42' in out.getvalue(), out.getvalue()\n"
        f"{MODULES_NOW}"
    )
    modules = python(code, tmp_path)
    assert [m for m in HEAVY if m in modules] == []
    assert "chronos_lite.shell.session" not in modules  # (an operation: not the shell)
    ran = loaded_operations(modules)
    assert "chronos_lite.operations.sql" in ran
    assert "chronos_lite.operations.branches" not in ran  # (fork's: not run)
    assert len(ran) < len(set(MODULES.values())) // 2


def test_the_shell_runs_a_script_without_the_prompt(tmp_path):
    chronos_lite.init(tmp_path / "shop").close()
    code = (
        "import contextlib, io\n"
        "from chronos_lite.cli import run\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert run([{str(tmp_path / 'shop')!r}, '-X', '-c', 'select 41 + 1']) == 0\n"
        "assert '42' in out.getvalue(), out.getvalue()\n"
        f"{MODULES_NOW}"
    )
    modules = python(code, tmp_path)
    assert "chronos_lite.shell.session" in modules
    assert [m for m in HEAVY if m in modules] == []
    assert "chronos_lite.shell.repl" not in modules


def test_names_are_every_operation_in_order_without_importing_them(tmp_path):
    code = (
        "import json, sys\n"
        "from chronos_lite.operations.registry import REGISTRY\n"
        "names = REGISTRY.names()\n"
        "before = sorted(sys.modules)\n"
        "REGISTRY.get('describe')\n"
        "after_get = sorted(sys.modules)\n"
        "listed = [op.name for op in REGISTRY]\n"
        "print(json.dumps({'names': names, 'before': before, 'after_get': after_get,\n"
        "                  'listed': listed, 'all': sorted(sys.modules)}))"
    )
    seen = python(code, tmp_path)
    assert seen["names"] == ORDER
    assert loaded_operations(seen["before"]) == set()
    assert loaded_operations(seen["after_get"]) == {"chronos_lite.operations.data"}
    assert seen["listed"] == ORDER
    assert loaded_operations(seen["all"]) == set(MODULES.values())


def test_the_index_names_each_operations_module():
    assert list(MODULES) == ORDER
    assert {op.name: op.handler.__module__ for op in chronos_lite.REGISTRY} == MODULES


def test_a_registry_refuses_a_name_its_module_does_not_register():
    registry = Registry()
    registry.index({"nothing": "chronos_lite.errors"})
    assert registry.names() == ["nothing"]
    assert "nothing" in registry and "other" not in registry
    try:
        registry.get("nothing")
    except ValueError as exc:
        assert "registers no operation nothing" in str(exc)
    else:
        raise AssertionError("a module that registers nothing was accepted")
    try:
        registry.get("other")
    except ChronosError as exc:
        assert "unknown operation 'other'; operations: nothing" in exc.message
    else:
        raise AssertionError("an unknown operation was found")
    assert not registry.reads_only("other")


def test_the_system_tables_answer_without_apsw_ext(tmp_path):
    chronos_lite.init(tmp_path / "shop").close()
    code = (
        "import json, sys, chronos_lite\n"
        f"db = chronos_lite.open({str(tmp_path / 'shop')!r})\n"
        "db.sql('create table t(id integer primary key, v text)')\n"
        "db.fork('w')\n"
        "db.sql(\"insert into t values (1, 'a')\", branch='w')\n"
        "rows = db.query(\"select table_name, id, diff_type from chronos_diff('w')\")\n"
        "where = db.query(\"select count(*) from chronos_diff where branch = 'w'\")\n"
        "worlds = db.query('select name from chronos_worlds')\n"
        "print(json.dumps({'rows': rows, 'where': where, 'worlds': worlds,\n"
        "                  'ext': 'apsw.ext' in sys.modules}))"
    )
    seen = python(code, tmp_path)
    assert seen["rows"] == [{"table_name": "t", "id": "1", "diff_type": "added"}]
    assert seen["where"] == [{"count(*)": 1}]
    assert seen["worlds"] == [{"name": "w"}]
    assert seen["ext"] is False
