"""tools/list sized for an agent (issue 30): the real server's list, with --allow-merge (every
tool), costs at most 24,000 characters of compact JSON, each tool still whole (title,
description, a plain-object inputSchema, annotations); and the tool counts docs/mcp.md gives
for each mode are the ones the server lists."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers import CHRONOS, ROOT, run_cli

BUDGET = 24_000  # characters of json.dumps(result, separators=(",", ":"), ensure_ascii=False)
MCP_MD = ROOT / "docs" / "mcp.md"
COMBINATORS = {"oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$ref", "$defs"}


def tools_list(folder: Path, *flags: str) -> dict:
    """The result of tools/list from `chronos mcp <folder> <flags>`, as the server sent it."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "size-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]
    proc = subprocess.run(
        [CHRONOS, "mcp", str(folder), *flags],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    return next(a for a in answers if a.get("id") == 2)["result"]


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def served(shop, folder: Path) -> Path:
    return folder


def test_tools_list_with_allow_merge_fits_the_budget(served: Path) -> None:
    result = tools_list(served, "--allow-merge")
    size = len(compact(result))
    tools = result["tools"]
    biggest = sorted(((len(compact(t)), t["name"]) for t in tools), reverse=True)[:3]
    assert size <= BUDGET, f"tools/list is {size} characters (the largest: {biggest})"
    assert len(tools) >= 31  # (every tool: a budget met by leaving tools out proves nothing)


def test_every_tool_is_whole(served: Path) -> None:
    for tool in tools_list(served, "--allow-merge")["tools"]:
        name = tool["name"]
        assert isinstance(tool.get("title"), str) and tool["title"].strip(), name
        assert isinstance(tool.get("description"), str) and tool["description"].strip(), name
        schema = tool.get("inputSchema")
        assert isinstance(schema, dict) and schema.get("type") == "object", name
        assert isinstance(schema.get("properties", {}), dict), name
        assert not COMBINATORS & set(schema), (name, COMBINATORS & set(schema))
        hints = tool.get("annotations")
        assert isinstance(hints, dict) and hints, name
        assert set(hints) <= {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert hints.get("openWorldHint") is False, name


# --- docs/mcp.md's tool counts ---------------------------------------------------------------


def _docs_count(pattern: str) -> int:
    found = re.findall(pattern, MCP_MD.read_text())
    assert len(found) == 1, f"docs/mcp.md: {pattern!r} matched {found}"
    return int(found[0])


def test_docs_tool_counts_are_the_servers(served: Path) -> None:
    """The modes table (safe, --allow-merge, --agent bot with the example's rights), the
    session's tools/list line and the Postgres section's count, against the real server."""
    safe = len(tools_list(served)["tools"])
    every = len(tools_list(served, "--allow-merge")["tools"])
    run_cli(served, "agent", "create", "bot", "--rights", "read,fork,write_own,merge_own")
    bot = len(tools_list(served, "--agent", "bot")["tools"])
    assert _docs_count(r"\| safe mode \(the default\) \| (\d+): all but ") == safe
    assert _docs_count(r"\| the database's own user \| all (\d+) \|") == every
    assert _docs_count(r"\| the agent `bot` \| those its rights allow: (\d+) for ") == bot
    assert _docs_count(r"One page of (\d+) tools in safe mode") == safe
    assert _docs_count(r"\((\d+) for the database's own user\)") == every
    # the --agent example's own rights, as the docs create the agent
    assert "agent create bot --rights read,fork,write_own,merge_own" in MCP_MD.read_text()
