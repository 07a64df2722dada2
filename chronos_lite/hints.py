"""A message's advice spelled for the front end that shows it: ``offset=20`` to an MCP client
or in Python, ``--offset 20`` on the command line and in the shell's ``\\diff`` (the same
operation, its parameters as flags), so that what a message says to type is what works where
it is read.

The front end says how it spells calls (``spelled``) around the call; the engine writes a
parameter with ``arg`` and an operation with ``op``. Where nothing was said (MCP, the Python
API, the review page), calls are spelled as parameters."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# parameters (MCP, Python); flags (the command line); the shell (its \operations take flags,
# and it switches branch with USE WORLD)
CALL, FLAGS, SHELL = "call", "flags", "shell"

_SPELLING: ContextVar[str] = ContextVar("chronos_spelling", default=CALL)


@contextmanager
def spelled(spelling: str) -> Iterator[None]:
    """Messages made in this context spell calls as ``spelling`` does (CALL, FLAGS, SHELL)."""
    token = _SPELLING.set(spelling)
    try:
        yield
    finally:
        _SPELLING.reset(token)


def flags() -> bool:
    return _SPELLING.get() != CALL


def work_on(branch: str) -> str:
    """How the caller goes on on ``branch``: ``pass branch="task-1"``, ``pass --branch task-1``,
    ``USE WORLD task-1`` in the shell."""
    if _SPELLING.get() == SHELL:
        return f"USE WORLD {branch} (or \\c {branch})"
    return f"pass {arg('branch', branch)}"


def arg(name: str, value: Any = True) -> str:
    """A parameter and its value as the caller types it: ``confirm=true``, ``--confirm``;
    ``offset=20``, ``--offset 20``; ``branch="task-1"``, ``--branch task-1``."""
    if not flags():
        return f"{name}={json.dumps(value, ensure_ascii=False)}"
    flag = "--" + name.replace("_", "-")
    if value is True:
        return flag
    if value is False:
        return f"--no-{name.replace('_', '-')}"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"{flag} {shlex.quote(text)}"


def param(name: str) -> str:
    """A parameter's name as the caller types it: ``by_columns``, ``--by-columns``."""
    return "--" + name.replace("_", "-") if flags() else name


def op(name: str) -> str:
    """An operation as the caller names it: ``merge_preview``, ``merge-preview``."""
    return name.replace("_", "-") if flags() else name
