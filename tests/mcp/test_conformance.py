"""The official MCP conformance suite (npm's @modelcontextprotocol/conformance) against
`chronos serve`, with the scenarios that don't apply to a tools-only server listed, and why, in
tests/mcp/conformance/. The suite is installed by this test into .cache/node/ (npm; Node is
the machine's, installed by .ci/run where it is missing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT
from test_http import serving

import chronos_lite

SUITE_0_1 = "0.1.13"  # the newest 0.1.x that runs on Node 20 (0.1.14 on need Node 22's fs.globSync)
SUITE_0_2 = "0.2.0-alpha.12"  # the revision 2026-07-28's scenarios; on Node 22 (npm's node@22)
CACHE = ROOT / ".cache" / "node"
HERE = Path(__file__).parent / "conformance"
INSTALL_S = 600
RUN_S = 600

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm (Node) isn't installed")


def installed(name: str, *packages: str) -> Path:
    """``packages`` installed by npm into .cache/node/<name> (once); that folder."""
    folder = CACHE / name
    if not (folder / "node_modules" / ".done").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", *packages],
            check=True,
            capture_output=True,
            timeout=INSTALL_S,
        )
        (folder / "node_modules" / ".done").touch()
    return folder


@pytest.fixture
def shop(tmp_path):
    folder = tmp_path / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("insert into users(name) values ('Ada')")
    return folder


def test_the_conformance_suite_0_1_passes_what_applies(shop):
    suite = installed("conformance-0.1", f"@modelcontextprotocol/conformance@{SUITE_0_1}")
    with serving(shop, "--safe") as port:
        done = subprocess.run(
            [
                "node",
                str(suite / "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
                "server",
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "--expected-failures",
                str(HERE / "expected-failures-0.1.yml"),
            ],
            capture_output=True,
            text=True,
            timeout=RUN_S,
        )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_the_conformance_suite_0_2_passes_what_applies_to_2026_07_28(shop):
    node = installed("node22", "node@22") / "node_modules" / ".bin" / "node"
    suite = installed("conformance-0.2", f"@modelcontextprotocol/conformance@{SUITE_0_2}")
    with serving(shop, "--safe") as port:
        done = subprocess.run(
            [
                str(node),
                str(suite / "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
                "server",
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "--spec-version",
                "2026-07-28",
                "--suite",
                "all",
                "--expected-failures",
                str(HERE / "expected-failures-0.2.yml"),
            ],
            capture_output=True,
            text=True,
            timeout=RUN_S,
        )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
