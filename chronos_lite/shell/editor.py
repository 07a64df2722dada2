"""``\\e``, as psql's: the query being typed (or, with none, the last one) opens in
``$VISUAL`` or ``$EDITOR`` (else the first of editor, nano, vi found), and what the editor leaves
comes back at the prompt, to be run with Enter. Only at the prompt: a script has no editor."""

from __future__ import annotations

import os
import shlex
from typing import Protocol

from ..errors import BAD_ARGUMENT, ChronosError

FALLBACKS = ("editor", "nano", "vi")


class Editing(Protocol):
    """What ``\\e`` uses of the shell (session.Shell)."""

    interactive: bool
    last_query: str  # the last statement it ran
    edited: str | None  # what the next prompt starts with


def command() -> str | None:
    """The editor to run: $VISUAL, $EDITOR, else the first fallback on the PATH."""
    import shutil  # (only for \e: a script's start needn't pay for it)

    for variable in ("VISUAL", "EDITOR"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable]
    return next((found for name in FALLBACKS if (found := shutil.which(name))), None)


def edit_last(shell: Editing, rest: str) -> None:
    """``\\e`` alone on the prompt's first line: the last query."""
    if rest:
        raise ChronosError(
            "\\e edits the query at the prompt; \\i <file> runs a file", BAD_ARGUMENT
        )
    edit(shell, "")


def edit(shell: Editing, query: str) -> None:
    """Open ``query`` (none: the last one) in the editor; the next prompt starts with what it
    leaves (with the query as it was if the editor fails: nothing typed is lost)."""
    if not shell.interactive:
        raise ChronosError("\\e edits a query at the prompt: a script can't", BAD_ARGUMENT)
    text = query.strip() or shell.last_query
    editor = command()
    if editor is None:
        shell.edited = text
        raise ChronosError(
            "\\e: no editor: set $EDITOR (or $VISUAL), e.g. export EDITOR=nano", BAD_ARGUMENT
        )
    shell.edited = text  # (until the editor has written its own)
    shell.edited = _run(editor, text) or None


def _run(editor: str, text: str) -> str:
    """The text after ``editor`` has edited it in a temporary .sql file."""
    import signal
    import subprocess
    import tempfile
    import threading

    with tempfile.TemporaryDirectory(prefix="chronos-edit-") as folder:
        path = os.path.join(folder, "query.sql")
        with open(path, "w") as file:
            file.write(text + "\n" if text else "")
        # Ctrl-C belongs to the editor while it runs (it reaches the whole process group)
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            code = subprocess.call([*shlex.split(editor), path])
        except (OSError, ValueError) as exc:
            raise ChronosError(f"\\e: can't run {editor}: {exc}", BAD_ARGUMENT) from None
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        if code != 0:
            raise ChronosError(
                f"\\e: {editor} exited with status {code}; the query is as it was", BAD_ARGUMENT
            )
        with open(path) as file:
            return file.read().rstrip("\n")
