"""sqlite3's dot-commands, for the habits people bring: ``.tables``, ``.schema``, ``.help``,
``.mode``, ``.read``, ``.output``, ``.timer``, ``.quit``. A line that starts with ``.`` at the
start of an input is one (no SQL starts so; a ``.`` on a statement's later line stays SQL); the
others are named with the shell's psql-style equivalents, never left to wait for a ``;``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import BAD_ARGUMENT, ChronosError
from . import relations


class Dotted(relations.Lister, Protocol):
    """What the dot-commands use of the shell (session.Shell): the listing commands' too."""

    format: str
    expanded: str

    def _backslash(self, text: str) -> None: ...

    def _print(self, text: str) -> None: ...


@dataclass
class Dot:
    run: Callable[[Dotted, str], None]
    args: str
    help: str
    psql: str  # the shell's own command for it


def _as(command: str) -> Callable[[Dotted, str], None]:
    """A dot-command that is one of the shell's backslash commands."""
    return lambda shell, rest: shell._backslash(f"{command} {rest}".strip())


def _schema(shell: Dotted, rest: str) -> None:
    text = relations.schema_text(shell.db, shell.branch, rest)
    if text:
        shell._print(text)
    else:
        shell._note(f"no tables on {shell.branch} yet: create one (CREATE TABLE)")


# sqlite3's modes and what the shell shows for them (format, expanded)
MODES = {
    "table": ("aligned", "off"),
    "box": ("aligned", "off"),
    "column": ("aligned", "off"),
    "aligned": ("aligned", "off"),
    "line": ("aligned", "on"),
    "csv": ("csv", "off"),
    "tabs": ("tsv", "off"),
    "markdown": ("markdown", "off"),
    "json": ("json", "off"),
}


def _mode(shell: Dotted, rest: str) -> None:
    if not rest:
        shell._note(f"results show as {shell.format}{' records' if shell.expanded == 'on' else ''}")
        return
    if rest not in MODES:
        raise ChronosError(f".mode takes {' | '.join(MODES)}, not {rest}", BAD_ARGUMENT)
    shell.format, shell.expanded = MODES[rest]
    shell._note(f"results show as {shell.format}{' records' if shell.expanded == 'on' else ''}")


def _headers(_shell: Dotted, _rest: str) -> None:
    raise ChronosError(
        ".headers: results always show their column names here (as psql's do); "
        ".mode csv gives CSV with its header line",
        BAD_ARGUMENT,
    )


def _help(shell: Dotted, _rest: str) -> None:
    lines = ["sqlite3's dot-commands (at the start of an input; the shell's own beside them):"]
    for word, dot in DOTS.items():
        lines.append(f"  {f'.{word} {dot.args}'.strip():<30}{dot.help:<44}{dot.psql}".rstrip())
    lines.append("\\? lists the shell's commands; statements end with ;")
    shell._print("\n".join(lines))


DOTS: dict[str, Dot] = {
    "tables": Dot(_as("dt"), "[pattern]", "the tables", "\\dt [pattern]"),
    "schema": Dot(_schema, "[table]", "CREATE statements: tables, indexes, views", "\\d <table>"),
    "mode": Dot(_mode, "[mode]", "table, line, csv, tabs, markdown or json", "\\x, --format"),
    "headers": Dot(_headers, "", "(column names always show)", ""),
    "read": Dot(_as("i"), "<file>", "run a file's statements and commands", "\\i <file>"),
    "output": Dot(_as("o"), "[file]", "send results to a file (no file: back here)", "\\o"),
    "timer": Dot(_as("timing"), "[on|off]", "show each statement's time", "\\timing"),
    "help": Dot(_help, "", "this list", "\\?"),
    "quit": Dot(_as("q"), "", "quit", "\\q"),
    "exit": Dot(_as("q"), "", "quit", "\\q"),
}
SUMMARY = "sqlite3's dot-commands work too: .tables, .schema [table], .mode, ...; .help lists them"


def run(shell: Dotted, text: str) -> None:
    """A dot-command line: run it, or say which ones there are."""
    word, _, rest = text.strip()[1:].partition(" ")
    dot = DOTS.get(word.lower())
    if dot is None:
        known = ", ".join(f".{w}" for w in DOTS if w != "exit")
        raise ChronosError(
            f"unknown command .{word}: the sqlite3 commands here are {known}; the shell's own "
            "are \\dt, \\d <table>, \\i, \\o, \\timing, \\q (\\? lists them)",
            BAD_ARGUMENT,
        )
    dot.run(shell, rest.strip())
