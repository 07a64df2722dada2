"""The MCP TypeScript SDK's streamable-HTTP client (npm's @modelcontextprotocol/sdk) runs an
agent's workflow against `chronos serve`: describe, fork, change the branch, diff, merge. The
SDK is installed by this test into .cache/node/ (npm; Node is the machine's, installed by
.ci/run where it is missing)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_conformance import installed
from test_http import serving

import chronos_lite

SDK = "1.32.2"
RUN_S = 120

pytestmark = pytest.mark.skipif(shutil.which("npm") is None, reason="npm (Node) isn't installed")


def test_the_typescript_sdk_runs_the_workflow(tmp_path: Path) -> None:
    folder = tmp_path / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("insert into users(name) values ('Ada'), ('Bo')")
        token = db.call(
            "agent",
            action="create",
            name="ts",
            rights=["read", "fork", "write_own", "merge_own", "write_main"],
        ).data["token"]
    sdk = installed(f"ts-sdk-{SDK}", f"@modelcontextprotocol/sdk@{SDK}")
    script = sdk / "workflow.mjs"  # (beside its node_modules, where an import finds the SDK)
    shutil.copy(Path(__file__).parent / "typescript" / "workflow.mjs", script)
    with serving(folder) as port:
        done = subprocess.run(
            ["node", str(script), f"http://127.0.0.1:{port}/mcp", token, "ts-task"],
            capture_output=True,
            text=True,
            timeout=RUN_S,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout)
    assert seen["server"]["name"] == "chronos"
    assert {"describe", "fork", "sql", "diff", "merge"} <= set(seen["tools"])
    assert "users: 2 rows" in seen["describe"]["text"]
    assert not seen["fork"]["error"] and "created branch ts-task" in seen["fork"]["text"]
    assert seen["sql"] == {"error": False, "text": "UPDATE 1"}
    assert seen["diff"]["text"].startswith("1 change on ts-task")
    assert not seen["merge"]["error"], seen["merge"]
    assert "merged 1 change" in seen["merge"]["text"]
    assert "Ada L." in seen["main"]["text"]
