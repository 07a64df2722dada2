"""The docs stay true to the code: every operation and parameter of the registry is documented
in docs/cli.md (and, for MCP tools, docs/mcp.md), and every page's examples still print what
the page shows (docs/run.py --check, one test per page so xdist spreads them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from chronos_lite import REGISTRY

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
# The slowest pages first, so the two workers each start on a long one.
SLOW_FIRST = ["cli.md", "storage.md", "mcp.md", "sql.md"]


def cli_name(name: str) -> str:
    return name.replace("_", "-")


def section(page: Path, heading: str) -> str:
    """The text under `### heading` up to the next heading of that level or above."""
    text = page.read_text()
    m = re.search(
        rf"^### `?{re.escape(heading)}`?\s*$(.*?)(?=^#{{1,3}} )", text + "\n# ", re.M | re.S
    )
    return m.group(1) if m else ""


def positional(op, name: str) -> bool:
    return name in op.required or name in op.schema.get("x-cli-positional", [])


CLI_PARAMS = [(op.name, p) for op in REGISTRY for p in [None, *op.properties]]
MCP_PARAMS = [(op.name, p) for op in REGISTRY if op.mcp for p in [None, *op.properties]]


def _id(pair: tuple[str, str | None]) -> str:
    return f"{pair[0]}" if pair[1] is None else f"{pair[0]}-{pair[1]}"


@pytest.mark.parametrize("operation, parameter", CLI_PARAMS, ids=map(_id, CLI_PARAMS))
def test_cli_md_documents(operation: str, parameter: str | None) -> None:
    op = REGISTRY.get(operation)
    text = section(DOCS / "cli.md", cli_name(operation))
    assert text, f"docs/cli.md has no section `### {cli_name(operation)}`"
    if parameter is None:
        return
    option = f"--{cli_name(parameter)}"
    # A positional parameter is named in the section's table; every other one by its option.
    shown = option in text or (positional(op, parameter) and f"`{parameter}`" in text)
    assert shown, f"docs/cli.md's {cli_name(operation)} section doesn't mention {option}"


@pytest.mark.parametrize("operation, parameter", MCP_PARAMS, ids=map(_id, MCP_PARAMS))
def test_mcp_md_documents(operation: str, parameter: str | None) -> None:
    text = section(DOCS / "mcp.md", operation)
    assert text, f"docs/mcp.md has no section `### {operation}` for the tool"
    if parameter is not None:
        assert f"`{parameter}`" in text, f"docs/mcp.md's {operation} tool doesn't name {parameter}"


def _slow_first(page: Path) -> int:
    return SLOW_FIRST.index(page.name) if page.name in SLOW_FIRST else len(SLOW_FIRST)


@pytest.mark.parametrize(
    "page", sorted(PAGES, key=_slow_first), ids=lambda p: p.relative_to(ROOT).as_posix()
)
def test_page_examples_run(page: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(DOCS / "run.py"), "--check", str(page)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"{run.stdout}{run.stderr}\n(python3 dev.py docs rewrites them)"


def _package_rows(page: str) -> list[tuple[list[str], str]]:
    """docs/architecture.md's package table: each row's folders or files, and its text."""
    rows = []
    table = Path(page).read_text().split("## The packages", 1)[1].split("\n## ", 1)[0]
    for line in table.splitlines():
        cells = line.split("|")
        if len(cells) > 3 and "`" in cells[1]:
            rows.append((re.findall(r"`([^`]+)`", cells[1]), cells[2]))
    return rows


def test_architecture_md_names_every_module() -> None:
    package = ROOT / "chronos_lite"
    rows = _package_rows(str(ROOT / "docs" / "architecture.md"))
    unnamed = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if path.name == "__init__.py":
            continue
        folder = relative.parent.as_posix() + "/"
        named = any(
            relative.as_posix() in places or (folder in places and f"`{path.stem}`" in text)
            for places, text in rows
        )
        if not named:
            unnamed.append(relative.as_posix())
    assert unnamed == []
