"""The shell's work, whatever its input: an interactive prompt, ``-c``, a file or stdin.

Statements go to the registry's ``sql`` operation on the shell's branch (chronos statements
included: the ``sql`` operation parses them); backslash commands go to the registry operation
they name, with the CLI's arguments (the shell's own: ``BUILTINS``, some in modules of their
own; sqlite3's dot-commands: ``dots``). Ctrl-C during a call interrupts SQLite (the call then
fails and rolls back) and the shell goes on.
"""

from __future__ import annotations

import shlex
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import apsw

from .. import progress, render, rowformats, sqltext
from ..cliargs import op_parser, parse_operation_call
from ..errors import BAD_ARGUMENT, NOT_FOUND, ChronosError
from ..operations.registry import REGISTRY, Operation, Reply
from ..statements import chronos_sql
from ..storage.branchref import BranchRef
from ..storage.db import Database
from . import dots, editor, output, relations
from .cancel import Canceller
from .config import Settings
from .progress import Bars, WhileLong

TRANSACTION_ENDS = {"COMMIT", "END"}


@dataclass
class Command:
    run: Callable[[Shell, str], None]
    args: str
    help: str


class Shell:
    def __init__(
        self,
        db: Database,
        branch: str = "main",
        out: TextIO | None = None,
        err: TextIO | None = None,
        settings: Settings | None = None,
        interactive: bool = False,
        fmt: str | None = None,
    ) -> None:
        self.db = db
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        settings = settings or Settings(pager=None)
        self.interactive = interactive
        # a script's output doesn't depend on the user's settings; the prompt's does
        self.format = fmt or (settings.format if interactive else "aligned")
        self.expanded = settings.expanded if interactive else "off"
        self.timing = settings.timing if interactive else False
        tty = interactive and getattr(self.out, "isatty", lambda: False)()
        self.pager = settings.pager if tty else None
        self.pending: list[str] | None = None  # a transaction typed over several inputs
        self.pending_at: list[str] = []  # where each of them was read (file:line)
        self.where = ""  # where the input being run was read
        self.generation = 0  # moves on after every call: completion reads table names again
        self.branch, self.parent = "main", "main"
        self.switch(branch)
        self.running = threading.Event()  # set while a call runs
        self.quit = False
        self.file: TextIO | None = None  # \o
        self.elapsed = 0.0  # the last call's time, for the timing command
        self.last_query = ""  # the last statement run, for \e
        self.edited: str | None = None  # what \e left, for the next prompt to start with
        self.canceller = Canceller(db.interrupt)

    # --- the prompt ---------------------------------------------------------------------

    def prompt(self) -> str:
        return f"{render.terminal(self.branch)}={'*' if self.pending is not None else ''}> "

    def continuation(self) -> str:
        return f"{render.terminal(self.branch)}-> ".rjust(len(self.prompt()))

    @staticmethod
    def is_complete(text: str) -> bool:
        """Whether an input is ready to run: a backslash (or sqlite3 dot-) command at its
        line's end, a statement at its ``;`` (as SQLite reads it: triggers end at END;) or at
        a line of its own that is ``\\e``."""
        stripped = text.strip()
        if not stripped or stripped.startswith(("\\", ".")) or stripped.lower() in ("quit", "exit"):
            return True
        return apsw.complete(text) or stripped.splitlines()[-1].strip() == "\\e"

    # --- running input ------------------------------------------------------------------

    def run_input(self, text: str, where: str = "") -> bool:
        """Run one complete input; errors are shown. False if it failed."""
        self.where = where
        try:
            self._run_input(text)
            return True
        except ChronosError as exc:  # (a transaction's statement names its own line)
            at = exc.data.get("at") if isinstance(exc.data, dict) else None
            self._error(exc.message, at or where)
            return False
        finally:
            self._follow_branch()

    def run_script(self, text: str, name: str, stop_on_error: bool) -> bool:
        """Run a file's statements and backslash commands in order; False if one failed."""
        ok = True
        for line, piece in split_script(text):
            if self.quit:
                break
            if not self.run_input(piece, f"{name}:{line}" if name else ""):
                ok = False
                if stop_on_error:
                    break
        if self.pending is not None and not self.quit:
            self.pending = None
            self._error("the input ended inside a transaction: it was not run (no COMMIT)", name)
            ok = False
        return ok

    def _run_input(self, text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        if stripped.startswith("\\"):
            self._backslash(stripped[1:])
            return
        if stripped.startswith("."):
            dots.run(self, stripped)
            return
        if stripped.lower().rstrip(";") in ("quit", "exit"):
            self.quit = True
            return
        query, _, last = stripped.rpartition("\n")
        if last.strip() == "\\e":  # typed on a statement's later line: edit the lines before it
            editor.edit(self, query)
            return
        self.last_query = stripped
        for stmt in sqltext.split_statements(text):
            self._statement(stmt)

    def _statement(self, stmt: str) -> None:
        words = sqltext.keywords(stmt, 2)
        if self.pending is not None:
            self._in_transaction(stmt, words)
            return
        if words[:1] == ["BEGIN"]:
            self.pending, self.pending_at = [stmt], [self.where]
            self._tag("BEGIN")
            return
        if chronos_sql.is_chronos(stmt):
            op, args = chronos_sql.parse(stmt, self.branch)
            if op == chronos_sql.USE:
                self.switch(args["branch"])
                self._note(f"now on {self.branch}")
                return
        self._sql(stmt)

    def _in_transaction(self, stmt: str, words: list[str]) -> None:
        """A statement typed after BEGIN. Each call is its own session, so the transaction
        runs as one call at COMMIT; until then each statement is shown as it would be, by
        running the transaction so far and rolling it back (a prompt's, not a script's: that
        would run a long script's statements over and over)."""
        assert self.pending is not None
        if words[:1] and words[0] in TRANSACTION_ENDS:
            script, self.pending = _joined([*self.pending, stmt]), None
            try:
                self._sql(script, first=-1 if self.interactive else 1)  # (BEGIN was shown)
            except ChronosError as exc:
                raise _in_script(exc, self.pending_at) from None
        elif words in (["ROLLBACK"], ["ROLLBACK", "TRANSACTION"]):
            self.pending = None
            self._tag("ROLLBACK")
        elif chronos_sql.is_chronos(stmt):
            if chronos_sql.lead(stmt) == "USE WORLD":
                raise ChronosError("a transaction is open: COMMIT or ROLLBACK before switching")
            raise ChronosError(
                f"{chronos_sql.lead(stmt)} runs its own transaction: COMMIT or ROLLBACK first"
            )
        elif not self.interactive:
            self.pending.append(stmt)
            self.pending_at.append(self.where)
        else:
            trial = _joined([*self.pending, stmt, "ROLLBACK"])
            try:
                self._sql(trial, first=len(self.pending), last=len(self.pending))
            except ChronosError as exc:
                failed = exc.data if isinstance(exc.data, dict) else {}
                reason = failed.get("error", exc.message)
                raise ChronosError(
                    f"{reason} (the transaction goes on without this statement)", exc.code
                ) from None
            self.pending.append(stmt)
            self.pending_at.append(self.where)

    def _sql(self, sql: str, first: int = 0, last: int | None = None) -> None:
        """Run a call and show its results from ``first`` to ``last`` (negative: from the
        end)."""
        reply = self.call("sql", {"sql": sql, "branch": self.branch})
        results = reply.data["results"]
        for result in results[first : None if last is None else last + 1]:
            if self.format == "json" and "data" in result:  # a chronos statement's data
                self._print(output.json_text(result["data"]), exact=True)
            elif "columns" in result:
                self._result(result["columns"], result["rows"])
            elif self.format == "json":
                self._print(output.json_text({"tag": result["tag"]}), exact=True)
            elif self.format in output.ROWS_ONLY and "data" not in result:
                self.err.write(render.terminal(result["tag"]) + "\n")  # stdout: the rows only
            else:  # (a chronos statement's report, DIFF's, is what was asked for)
                self._print(result["tag"])
        if reply.data.get("rolled_back"):
            self._print(reply.text.rsplit("\n", 1)[-1])
        self._show_time()

    def _result(self, columns: list[str], rows: list[list[Any]]) -> None:
        if self.format == "json":
            self._print(output.json_rows(columns, rows), exact=True)
        elif self.format in output.ROWS_ONLY:
            self._print(output.rows_text(self.format, columns, rows), exact=True)
        else:
            width = output.terminal_size().columns if self.expanded == "auto" else 0
            self._print(output.table(columns, rows, self.expanded, width))

    def call(self, name: str, args: dict[str, Any]) -> Reply:
        """A registry call; Ctrl-C during it interrupts SQLite, and it fails with nothing
        changed (see cancel.py)."""
        started = time.perf_counter()
        self.running.set()
        bars = Bars(name.replace("_", "-"))  # (on a terminal: what a long call reports)
        try:
            with progress.listening(bars), WhileLong(f"{name} running", [bars]):
                reply = self.canceller.run(lambda: REGISTRY.call(self.db, name, args))
        finally:
            bars.close()
            self.running.clear()
            self.generation += 1
        self.elapsed = time.perf_counter() - started
        return reply

    def _show_time(self) -> None:
        if self.timing:
            self._note(f"Time: {self.elapsed * 1000:.3f} ms")

    # --- branches -----------------------------------------------------------------------

    def switch(self, branch: str) -> None:
        """Work on ``branch`` from now on (a world, main, or name@when to read the past)."""
        if self.pending is not None:
            raise ChronosError("a transaction is open: COMMIT or ROLLBACK before switching")
        ref = BranchRef.parse(branch)
        world = self.db.resolve(ref.name)  # a clear error for one that doesn't exist
        if ref.past:
            self.db.end_call(self.db.session(branch))  # a moment it can't read: refused now
        self.branch = branch
        self.parent = world.parent if world is not None and world.parent else "main"
        self.generation += 1

    def _follow_branch(self) -> None:
        """After a merge or discard of the shell's own world: back to where it came from."""
        name = BranchRef.parse(self.branch).name
        if name == "main":
            return
        try:
            self.db.resolve(name)
        except ChronosError:
            gone, self.branch = self.branch, self.parent
            try:
                self.db.resolve(self.branch)
            except ChronosError:
                self.branch = "main"
            self._note(f"({gone} is finished: now on {self.branch})")

    # --- backslash commands -------------------------------------------------------------

    def _backslash(self, text: str) -> None:
        word, _, rest = text.partition(" ")
        word, rest = word.strip(), rest.strip()
        builtin = BUILTINS.get(word)
        if builtin is not None:
            builtin.run(self, rest)
            return
        name = ALIASES.get(word, word.replace("-", "_"))
        if name not in REGISTRY:
            raise ChronosError(f"unknown command \\{word}; \\? lists the commands")
        self.operation(REGISTRY.get(name), rest, word)

    def operation(self, op: Operation, rest: str, word: str) -> None:
        """``\\<operation> arguments``: the CLI's arguments, the MCP tool's text."""
        try:
            argv = shlex.split(rest)
        except ValueError as exc:
            raise ChronosError(f"\\{word}: {exc} (close the quote)") from None
        args, shown_as = parse_operation_call(op, argv, "\\")
        fmt = shown_as or self.format  # (--format: this call's)
        if "branch" in op.properties and "branch" not in args:
            if "branch" not in op.required or op.read_only:
                args["branch"] = self.branch
        if "from" in op.properties and "from" not in args and self.branch != "main":
            args["from"] = self.branch  # (fork) from the shell's branch, as FORK WORLD
        reply = self.call(op.name, args)
        if fmt == "json":
            self._print(output.json_text(reply.data), exact=True)
        elif fmt in output.ROWS_ONLY:  # (the rows the command line's --format finds)
            self._print(rowformats.formatted(fmt, reply.data).rstrip("\n"), exact=True)
        elif reply.table and self.expanded == "on":  # (auto: the MCP tool's text as it is)
            self._result(*reply.table)
        else:
            self._print(reply.text)
        self._show_time()

    def _help(self, rest: str) -> None:
        if rest:
            word = rest.lstrip("\\")
            name = ALIASES.get(word, word.replace("-", "_"))
            if word in BUILTINS:
                self._print(f"\\{word} {BUILTINS[word].args}  {BUILTINS[word].help}")
            else:
                self._print(op_parser(REGISTRY.get(name), "\\").format_help().rstrip())
            return
        lines = ["Shell commands:"]
        for word, command in BUILTINS.items():
            lines.append(f"  \\{(word + ' ' + command.args).strip():<22}{command.help}")
        lines.append(f"  ({dots.SUMMARY})")
        lines.append("Operations (as the CLI and MCP tools; \\? <command> shows the arguments):")
        shown = {v: k for k, v in ALIASES.items()}
        for op in REGISTRY:
            word = op.name.replace("_", "-")
            alias = f" (\\{shown[op.name]})" if op.name in shown else ""
            lines.append(f"  \\{word:<22}{op.title}{alias}")
        lines.append("Statements end with ;  chronos statements: see docs/sql.md, e.g.")
        lines.extend(f"  {f.text}" for f in chronos_sql.FORMS)
        self._print("\n".join(lines))

    def _connect(self, rest: str) -> None:
        if not rest:
            self._note(f"on {self.branch}")
            return
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            raise ChronosError(f"\\c: {exc} (close the quote)") from None
        self.switch(" ".join(words))  # name@when may hold spaces: \\c main@-10 minutes
        self._note(f"now on {self.branch}")

    def _toggle(self, rest: str, current: str, name: str, choices: tuple[str, ...]) -> str:
        if not rest:
            return "off" if current != "off" else "on"
        if rest not in choices:
            raise ChronosError(f"\\{name} takes {' | '.join(choices)}, not {rest}", BAD_ARGUMENT)
        return rest

    def _timing(self, rest: str) -> None:
        self.timing = (
            self._toggle(rest, "on" if self.timing else "off", "timing", ("on", "off")) == "on"
        )
        self._note(f"Timing is {'on' if self.timing else 'off'}.")

    def _expanded(self, rest: str) -> None:
        self.expanded = self._toggle(rest, self.expanded, "x", output.EXPANDED)
        self._note(f"Expanded display is {self.expanded}.")

    def _include(self, rest: str) -> None:
        path = Path(rest).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise ChronosError(f"\\i: can't read {rest}: {exc.strerror}", NOT_FOUND) from None
        stop = not self.interactive  # at the prompt, like psql, a file's errors are shown
        if not self.run_script(text, rest, stop_on_error=stop) and stop:
            raise ChronosError(f"\\i {rest} stopped at its first error", BAD_ARGUMENT)

    def _output(self, rest: str) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        if rest:
            try:
                self.file = open(Path(rest).expanduser(), "w")
            except OSError as exc:
                raise ChronosError(f"\\o: can't write {rest}: {exc.strerror}") from None

    def _quit(self, _rest: str) -> None:
        self.quit = True

    # --- output -------------------------------------------------------------------------

    def _print(self, text: str, exact: bool = False) -> None:
        """Write a result: what a terminal would obey escaped (``render.terminal``), but in
        ``exact`` data (CSV: every character of its values, for a program; JSON: those as
        JSON's own escapes already)."""
        text = text if exact else render.terminal(text)
        if self.file is not None:
            self.file.write(text + "\n")
            self.file.flush()
        else:
            output.show(text, self.out, self.pager)

    def _note(self, text: str) -> None:
        """What the shell says of itself (now on w, Timing is on): beside the results, or on
        stderr when stdout carries JSON or CSV for a program to read."""
        if self.format == "json" or self.format in output.ROWS_ONLY:
            self.err.write(render.terminal(text) + "\n")
            self.err.flush()
        else:
            self._print(text)

    def _tag(self, tag: str) -> None:
        """A statement's tag (BEGIN, ROLLBACK) as its format shows tags."""
        if self.format == "json":
            self._print(output.json_text({"tag": tag}), exact=True)
        elif self.format in output.ROWS_ONLY:
            self.err.write(render.terminal(tag) + "\n")
        else:
            self._print(tag)

    def _error(self, message: str, where: str) -> None:
        prefix = f"{where}: " if where else ""
        self.err.write(render.terminal(f"{prefix}ERROR: {message}") + "\n")
        self.err.flush()

    def close(self) -> None:
        self.canceller.close()
        if self.file is not None:
            self.file.close()
            self.file = None


BUILTINS: dict[str, Command] = {
    "?": Command(Shell._help, "[command]", "this help, or one command's arguments"),
    "c": Command(Shell._connect, "[branch]", "work on a branch: main, a world, or name@when"),
    "d": Command(relations.list_relations, "[table]", "the tables and views, or describe one"),
    "dt": Command(relations.list_tables, "[pattern]", "the tables (as sqlite3's .tables)"),
    "e": Command(editor.edit_last, "", "edit the query (or the last) in $EDITOR; Enter runs it"),
    "timing": Command(Shell._timing, "[on|off]", "show each statement's time"),
    "x": Command(Shell._expanded, "[on|off|auto]", "expanded output: a record per row"),
    "i": Command(Shell._include, "<file>", "run a file's statements and commands"),
    "o": Command(Shell._output, "[file]", "send results to a file (no file: back here)"),
    "q": Command(Shell._quit, "", "quit (or Ctrl-D)"),
}
# Short names for operations, as psql spells them.
ALIASES = {"d": "describe", "worlds": "branches"}


def _in_script(exc: ChronosError, lines: list[str]) -> ChronosError:
    """A transaction's failure, named by the statement that failed and the line it was on
    (not the COMMIT's line, nor its number in the call that ran the transaction)."""
    failed = exc.data if isinstance(exc.data, dict) else {}
    index = failed.get("statement", 0) - 1
    if not 0 <= index < len(lines) or "error" not in failed:
        return exc
    return ChronosError(
        f"{failed['error']} (the transaction was rolled back: nothing of it was written)",
        exc.code,
        {"at": lines[index]},
    )


def _joined(statements: list[str]) -> str:
    """Statements as one script again (each ``;`` on a line of its own: a statement may end
    in a -- comment)."""
    return "\n;\n".join(statements)


def split_script(text: str) -> list[tuple[int, str]]:
    """A file's inputs with the line each starts on: a backslash command is its line, a
    statement runs to its ``;``; what's left at the end runs as it is."""
    pieces: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), start=1):
        if not buffer and line.strip().startswith(("\\", ".")):
            pieces.append((number, line.strip()))
            continue
        if not buffer:
            if not line.strip():
                continue
            start = number
        buffer.append(line)
        joined = "\n".join(buffer)
        if apsw.complete(joined):
            pieces.append((start, joined))
            buffer = []
    if buffer and "\n".join(buffer).strip():
        pieces.append((start, "\n".join(buffer)))
    return pieces
