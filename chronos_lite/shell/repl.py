"""The interactive shell: prompt_toolkit's prompt around a :class:`Shell`.

Multi-line statements run at their ``;``, backslash commands at the end of their line; the
input history is kept per user; SQL is highlighted by pygments' lexer; Tab completes keywords,
the current branch's tables and columns, world names, chronos statements and commands (a single
candidate at once); ``\\e``'s text comes back as the next prompt's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import apsw
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import (
    CompleteEvent,
    Completer,
    Completion,
    get_common_complete_suffix,
)
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.output import Output
from pygments.lexers.sql import SqlLexer  # type: ignore[import-untyped]  # (no types-Pygments)

import chronos_lite

from .. import render
from ..operations.registry import REGISTRY
from ..statements import chronos_sql
from ..storage.branchref import BranchRef
from .dots import DOTS
from .session import ALIASES, BUILTINS, Shell

# What a word can hold: names like task-1, before-migration, main@yesterday; \commands.
_PARTIAL = re.compile(r"[\w\-.:@$\\]*$")
# After these words comes a table's name...
_TABLE_BEFORE = {"FROM", "JOIN", "INTO", "UPDATE", "TABLE"}
# ...and after these a branch's (FROM too, in FORK WORLD ... FROM).
_BRANCH_BEFORE = {"WORLD", "DIFF", "TO", "OF", "HISTORY"}
_BRANCH_COMMANDS = {
    "\\c",
    "\\diff",
    "\\merge",
    "\\merge-preview",
    "\\discard",
    "\\rebase",
    "\\history",
    "\\restore",
    "\\checkpoint",
    "\\rollback",
    "\\undo-merge",
}


class ShellCompleter(Completer):
    """Completes the word before the cursor from what can stand there."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self._tables: dict[str, list[str]] = {}
        self._read_for: tuple[int, str] | None = None  # (the shell's generation, its branch)
        self._keywords = sorted(
            set(apsw.keywords)
            | {
                w
                for f in chronos_sql.FORMS
                for g in f.head + f.clauses
                for i in g.items
                if i.kind == "word"
                for w in i.words
                if w.isalpha()
            }
        )

    def tables(self) -> dict[str, list[str]]:
        """The shell's branch's tables and their columns (read again after each call)."""
        key = (self.shell.generation, self.shell.branch)
        if self._read_for != key:
            db, branch = self.shell.db, BranchRef.parse(self.shell.branch).name
            world = db.resolve(branch)
            found = db.tables_for(world) if world is not None else db.tables()
            self._tables = {name: list(t.column_names) for name, (_n, t) in found.items()}
            self._read_for = key
        return self._tables

    def branches(self) -> list[str]:
        return ["main", *(w.name for w in self.shell.db.worlds())]

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        before = document.text_before_cursor
        if not document.current_line_before_cursor.strip() and not (
            complete_event.completion_requested
        ):
            return  # (a new line of a statement, nothing typed on it yet: no menu)
        m = _PARTIAL.search(before)
        assert m is not None  # (the pattern matches the empty string at the end)
        partial = m.group(0)
        words = before[: len(before) - len(partial)].split()
        previous = words[-1].upper() if words else ""
        first = before.lstrip()
        try:
            candidates = self._candidates(first, partial, previous, words)
        except Exception:  # a completion never breaks the prompt
            return
        lowered = partial.lower()
        seen: set[str] = set()
        for text in candidates:
            if text.lower().startswith(lowered) and text not in seen and text != partial:
                seen.add(text)
                yield Completion(text, start_position=-len(partial))

    def _candidates(self, first: str, partial: str, previous: str, words: list[str]) -> list[str]:
        if first.startswith("\\") and not words:
            ops = [f"\\{op.name.replace('_', '-')}" for op in REGISTRY]
            return [f"\\{w}" for w in BUILTINS] + [f"\\{a}" for a in ALIASES] + ops
        if words and words[0] in _BRANCH_COMMANDS and len(words) == 1:
            return self.branches()
        if first.startswith(".") and not words:
            return [f".{w}" for w in DOTS]
        if words and words[0] in ("\\d", "\\dt", ".schema", ".tables"):
            return sorted(self.tables())
        if previous in _BRANCH_BEFORE or (previous == "FROM" and "FORK" in first.upper()[:5]):
            return self.branches()
        tables = self.tables()
        if previous in _TABLE_BEFORE:
            return sorted(tables)
        if "." in partial:  # table.column
            table, _, _ = partial.rpartition(".")
            return [f"{table}.{c}" for c in tables.get(table, [])]
        upper = partial[:1].isupper()
        keywords = [k if upper else k.lower() for k in self._keywords]
        columns = sorted({c for cols in tables.values() for c in cols})
        return sorted(tables) + columns + keywords


def _bindings(shell: Shell) -> KeyBindings:
    keys = KeyBindings()

    @keys.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
        elif shell.is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    @keys.add("tab")
    def _tab(event: KeyPressEvent) -> None:
        """One candidate: taken at once; more: the menu, the first chosen (their common
        beginning typed first); on a line with nothing typed yet: four spaces."""
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.completions:
            if len(state.completions) == 1 and state.complete_index is None:
                buffer.apply_completion(state.completions[0])
            else:
                buffer.complete_next()
            return
        if not buffer.document.current_line_before_cursor.strip():
            buffer.insert_text("    ")
            return
        if buffer.completer is None:
            return
        requested = CompleteEvent(completion_requested=True)
        found = list(buffer.completer.get_completions(buffer.document, requested))
        if len(found) == 1:
            buffer.apply_completion(found[0])
        elif found:
            common = get_common_complete_suffix(buffer.document, found)
            if common:
                buffer.insert_text(common, fire_event=False)
            buffer.start_completion(select_first=not common)

    return keys


def history(path: Path) -> History:
    """The user's input history file; kept in memory if it can't be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()


def run(
    shell: Shell,
    folder: str,
    history_file: Path,
    startup: list[str],
    input: Input | None = None,
    output: Output | None = None,
) -> int:
    """The prompt loop, until \\q or Ctrl-D. Ctrl-C clears the input, or cancels a call."""
    session: PromptSession[str] = PromptSession(
        multiline=True,
        key_bindings=_bindings(shell),
        lexer=PygmentsLexer(SqlLexer),
        completer=ShellCompleter(shell),
        history=history(history_file),
        prompt_continuation=lambda _width, _line, _soft: shell.continuation(),
        input=input,
        output=output,
    )
    shell.out.write(
        render.terminal(f"chronos {chronos_lite.__version__} — {folder}, branch {shell.branch}.")
        + " \\? for help.\n"
    )
    for line in startup:
        shell.run_input(line, "startup")
    while not shell.quit:
        default, shell.edited = shell.edited or "", None  # (what \e left: Enter runs it)
        try:
            text = session.prompt(shell.prompt, default=default)
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        shell.run_input(text)
    shell.close()
    return 0
