"""What a message says to type is spelled for where it is read: flags on the command line and
in the shell's \\operations, parameters over MCP and in Python."""

from __future__ import annotations

import pytest
from helpers import run_cli

import chronos_lite
from chronos_lite import hints


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    shop = tmp_path_factory.mktemp("hints") / "shop"
    run_cli("init", shop)
    run_cli(shop, "sql", "create table t(id integer primary key, v int)")
    run_cli(shop, "sql", "insert into t values (1, 1), (2, 2), (3, 3)")
    run_cli(shop, "fork", "w")
    run_cli(shop, "sql", "-b", "w", "update t set v = v + 1")
    run_cli(shop, "fork", "child", "--from", "w")
    return shop


def test_the_command_line_spells_flags(shop):
    assert "call diff again with --offset 2 for the next ones" in (
        run_cli(shop, "diff", "w", "--limit", "2").stdout
    )
    refused = run_cli(shop, "discard", "w", check=False)
    assert "or pass --cascade (in SQL DISCARD WORLD w CASCADE)" in refused.stderr
    assert "pass --branch w2 to work on it" in run_cli(shop, "fork", "w2").stdout


def test_the_shell_spells_its_operations_flags(shop):
    out = run_cli(shop, "-c", "\\diff w --limit 2")
    assert "call diff again with --offset 2" in out.stdout
    forked = run_cli(shop, "-c", "FORK WORLD w3").stdout
    assert "USE WORLD w3 (or \\c w3) to work on it" in forked


def test_python_and_mcp_spell_parameters(shop):
    db = chronos_lite.open(shop)
    try:
        assert "call diff again with offset=2" in db.call("diff", branch="w", limit=2).text
        with pytest.raises(chronos_lite.ChronosError, match="or pass cascade=true"):
            db.discard("w")
    finally:
        db.close()


def test_spellings():
    assert hints.arg("offset", 20) == "offset=20"
    assert hints.arg("branch", "task 1") == 'branch="task 1"'
    with hints.spelled(hints.FLAGS):
        assert hints.arg("offset", 20) == "--offset 20"
        assert hints.arg("branch", "task 1") == "--branch 'task 1'"
        assert hints.arg("skip_changed") == "--skip-changed"
        assert hints.arg("rows", {"t/1": "ours"}) == """--rows '{"t/1": "ours"}'"""
        assert hints.op("merge_preview") == "merge-preview"
    assert hints.op("merge_preview") == "merge_preview"
