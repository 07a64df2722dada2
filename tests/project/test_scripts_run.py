"""The benchmarks and the example are scripts people run: they must keep working (no timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import ROOT


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_benchmark_quick_run_completes(tmp_path):
    out = tmp_path / "figures.json"
    proc = _run("benchmarks/bench_worlds.py", "--quick", "--json", str(out))
    assert "targets missed" in proc.stdout
    assert out.read_text().startswith(("{", "["))


def test_find_benchmark_quick_run_completes(tmp_path):
    out = tmp_path / "figures.json"
    proc = _run("benchmarks/bench_find.py", "--quick", "--json", str(out))
    assert "targets missed" in proc.stdout and "find where (indexed field)" in proc.stdout
    assert out.read_text().startswith("{")


def test_quickstart_example_runs(tmp_path):
    proc = _run("examples/quickstart.py", str(tmp_path / "shop"))
    out = proc.stdout
    # the whole loop: adopt, fork, change, diff, merge preview, merge, undo
    for said in (
        "(4 tables: customers, order_lines, orders, products)",
        "~ products/2  price: 24.0 -> 26.4",
        "Merge with --version 3",
        "merged 4 changes from pen-prices into main",
        "undid the merge of pen-prices into main: 4 rows put back",
    ):
        assert said in out, said
    reports = [part for part in out.split("$ chronos ") if "revenue" in part]
    assert " pens     |      2 |   30.25" in reports[-1]  # (main's report as it was)


def test_merge_benchmark_quick_run_completes(tmp_path):
    out = tmp_path / "figures.json"
    proc = _run("benchmarks/bench_merge.py", "--quick", "--json", str(out))
    assert "merge of 2,000 changes" in proc.stdout
    assert out.read_text().startswith("{")


def test_mcp_benchmark_quick_run_completes():
    proc = _run("benchmarks/bench_mcp.py", "--quick", "--no-reference")
    assert "targets missed" in proc.stdout and "chronos sql, world" in proc.stdout


def test_mcp_http_benchmark_quick_run_completes(tmp_path):
    out = tmp_path / "figures.json"
    proc = _run("benchmarks/bench_mcp_http.py", "--quick", "--json", str(out))
    assert "targets missed" in proc.stdout and "sql over HTTP, a world, p50" in proc.stdout
    assert out.read_text().startswith("{")


def test_history_benchmark_quick_run_completes(tmp_path):
    out = tmp_path / "figures.json"
    proc = _run("benchmarks/bench_history.py", "--quick", "--json", str(out))
    assert "targets missed" in proc.stdout and "point lookup, world AS OF" in proc.stdout
    assert "warning" not in proc.stderr  # AS OF gave the rows noted at the moment
    assert out.read_text().startswith("{")


def test_shell_benchmark_quick_run_completes(tmp_path):
    out = tmp_path / "figures.json"
    proc = _run("benchmarks/bench_shell.py", "--quick", "--json", str(out))
    assert "point select in the shell" in proc.stdout and "start and answer" in proc.stdout
    assert out.read_text().startswith("{")


def test_sql_statements_example_runs(tmp_path):
    import os

    env = {**os.environ, "CHRONOS": str(Path(sys.executable).with_name("chronos"))}
    proc = subprocess.run(
        ["bash", str(ROOT / "examples/sql_statements.sh"), str(tmp_path / "story")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FORK WORLD" in proc.stdout and "its form:" in proc.stdout


def test_write_study_quick_run_completes():
    # (it names the world's triggers: a renamed one must be renamed there too)
    proc = _run("benchmarks/study_world_writes.py", "--quick")
    assert "without step  0" in proc.stdout and "prepare a new INSERT text" in proc.stdout
