"""The ``chronos`` command: ``chronos init <folder>`` and ``chronos <folder> <operation> ...``.

Every registry operation is a subcommand, named as the operation with ``_`` written ``-``. Its
required parameters are positional arguments in the schema's order; every parameter is also an
option (``--only-tables``), options go before or after the positionals, and ``-b/--branch``
works wherever a branch is read. Object and array values are given as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import chronos_lite

from .errors import ChronosError
from .operations.registry import REGISTRY, Operation, describe
from .shell import config
from .shell.cancel import Canceller
from .shell.session import Shell

USAGE = """usage:
  chronos init <folder> [--from FILE]     create a database (FILE: an SQLite file to adopt as main)
  chronos <folder> [-b BRANCH]            the interactive shell (psql-like; \\? for help)
  chronos <folder> [-c STATEMENT]... [-f FILE] | < FILE  [--json | --csv]
                                          run statements and exit (non-zero on the first error)
  chronos mcp <folder> [--allow-merge] [-b BRANCH]
                                          serve the database to an agent over MCP (stdio);
                                          safe mode unless --allow-merge
  chronos <folder> <operation> [arguments] [--options]
  chronos <folder> help [operation]       the operations, or one operation's arguments

options for every operation:
  -b, --branch NAME   the branch to work on (default main)
  --json              print the result as JSON data instead of text
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ChronosError(f"{message}\n{self.format_usage().strip()}")


def _cli_name(op: str) -> str:
    return op.replace("_", "-")


def _op_name(word: str) -> str:
    return word.replace("-", "_")


def _parse_value(spec: dict, text: str, name: str) -> Any:
    kind = spec.get("type")
    if kind in ("object", "array"):
        try:
            return json.loads(text)
        except ValueError:
            if kind == "array" and spec.get("items", {}).get("type") == "string":
                return [part.strip() for part in text.split(",") if part.strip()]
            raise ChronosError(
                f"'{name}' must be {describe(spec)} written as JSON, not {text}"
            ) from None
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ChronosError(f"'{name}' must be an integer, not {text}") from None
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ChronosError(f"'{name}' must be true or false, not {text}")
    return text


def _positionals(op: Operation) -> list[str]:
    """Required parameters, in the schema's order; then any the schema names as positional
    for the command line (``x-cli-positional``: ``config retention '7 days'``)."""
    extra = [n for n in op.schema.get("x-cli-positional", []) if n not in op.required]
    return op.required + extra


def op_parser(op: Operation, prog: str = "chronos <folder> ") -> argparse.ArgumentParser:
    """The operation's command line (``prog``: what comes before its name; the shell's \\)."""
    parser = _Parser(prog=f"{prog}{_cli_name(op.name)}", description=op.description, add_help=False)
    for name in _positionals(op):
        # Optional here so a missing one is reported by the registry, as on every front end.
        parser.add_argument(
            name, metavar=name.upper(), nargs="?", default=None, help=describe(op.properties[name])
        )
    for name, spec in op.properties.items():
        flags = [f"--{_cli_name(name)}"]
        if name == "branch":
            flags.insert(0, "-b")
        dest = f"opt_{name}"
        if spec.get("type") == "boolean":
            parser.add_argument(
                *flags,
                dest=dest,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=spec.get("description"),
            )
        else:
            parser.add_argument(
                *flags, dest=dest, default=None, metavar="VALUE", help=spec.get("description")
            )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def parse_operation_args(
    op: Operation, argv: Sequence[str], prog: str = "chronos <folder> "
) -> tuple[dict[str, Any], bool]:
    """The operation's arguments from a command line, and whether --json was asked for."""
    ns = op_parser(op, prog).parse_intermixed_args(list(argv))
    args: dict[str, Any] = {}
    for name, spec in op.properties.items():
        option = getattr(ns, f"opt_{name}")
        positional = getattr(ns, name, None) if name in _positionals(op) else None
        if option is not None and positional is not None:
            raise ChronosError(f"'{name}' given twice: as an argument and as --{_cli_name(name)}")
        text = option if option is not None else positional
        if isinstance(text, bool):
            args[name] = text
        elif text is not None:
            if name == "sql" and text == "-":
                text = sys.stdin.read()
            args[name] = _parse_value(spec, text, name)
    return args, ns.json


def _help(folder: str, words: list[str]) -> str:
    if words and words[0] == "mcp":
        return MCP_HELP.rstrip()
    if words:
        op = REGISTRY.get(_op_name(words[0]))
        return op_parser(op).format_help()
    lines = [USAGE, "operations:"]
    for op in REGISTRY:
        lines.append(f"  {_cli_name(op.name):<16}{op.title}")
    return "\n".join(lines)


def run(argv: Sequence[str]) -> int:
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_help("", argv[1:2]) if argv[1:2] else _help("", []))
        return 0
    if argv[0] == "--version":
        print(f"chronos {chronos_lite.__version__}")
        return 0
    if argv[0] == "init":
        return _init(argv[1:])
    if argv[0] == "mcp":
        return _mcp(argv[1:])
    folder, rest = argv[0], argv[1:]
    if rest[:1] and rest[0] in ("help", "-h", "--help"):
        print(_help(folder, rest[1:]))
        return 0
    if not rest or rest[0].startswith("-"):
        return _shell(folder, rest)
    name = _op_name(rest[0])
    if name not in REGISTRY:
        ops = ", ".join(_cli_name(o.name) for o in REGISTRY)
        raise ChronosError(f"unknown operation '{rest[0]}'; operations: {ops}")
    op = REGISTRY.get(name)
    if "-h" in rest[1:] or "--help" in rest[1:]:
        print(op_parser(op).format_help())
        return 0
    args, as_json = parse_operation_args(op, rest[1:])
    try:
        with chronos_lite.open(folder) as db:
            canceller = Canceller(db.interrupt)  # Ctrl-C stops SQLite at once
            try:
                reply = canceller.run(lambda: REGISTRY.call(db, name, args))
            finally:
                canceller.close()
    except ChronosError as exc:
        if not as_json:
            raise
        # scripts get a refusal as data too (the conflicts, the rows a rule names)
        error = {"error": exc.message, "code": exc.code, "data": exc.data}
        print(json.dumps(error, ensure_ascii=False, indent=2, default=str))
        print(f"chronos: {exc.message}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps(reply.data, ensure_ascii=False, indent=2, default=str))
    else:
        print(reply.text)
    return 0


def _init(argv: list[str]) -> int:
    parser = _Parser(prog="chronos init", add_help=False)
    parser.add_argument("folder")
    parser.add_argument("--from", dest="source", default=None)
    ns = parser.parse_intermixed_args(argv)
    db = chronos_lite.init(ns.folder, ns.source)
    tables = sorted(db.tables())
    db.close()
    noun = "table" if len(tables) == 1 else "tables"
    listing = f": {', '.join(tables)}" if tables else ""
    adopted = f" from {ns.source} ({len(tables)} {noun}{listing})" if ns.source else ""
    print(f"created chronos database {ns.folder}{adopted}")
    return 0


def _shell(folder: str, argv: list[str]) -> int:
    """``chronos <folder>``: the shell; with -c, -f or input from a pipe, a script."""
    parser = _Parser(prog=f"chronos {folder}", add_help=False)
    parser.add_argument("-b", "--branch", default="main")
    parser.add_argument("-c", "--command", action="append", default=[])
    parser.add_argument("-f", "--file", default=None)
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--json", dest="format", action="store_const", const="json")
    formats.add_argument("--csv", dest="format", action="store_const", const="csv")
    parser.add_argument("-X", "--no-config", action="store_true")
    ns = parser.parse_args(argv)
    settings = config.Settings(pager=None) if ns.no_config else config.load()
    script = _script(ns)
    for problem in settings.problems if script is None else []:  # scripts don't read it
        print(f"chronos: {problem}", file=sys.stderr)
    with chronos_lite.open(folder) as db:
        shell = Shell(db, ns.branch, settings=settings, interactive=script is None, fmt=ns.format)
        if script is None:
            from .shell import repl  # prompt_toolkit only for the prompt

            return repl.run(shell, folder, config.history_path(), settings.startup)
        try:
            return 0 if all(shell.run_script(text, name, True) for name, text in script) else 1
        finally:
            shell.close()


def _script(ns: argparse.Namespace) -> list[tuple[str, str]] | None:
    """What to run instead of the prompt: -c statements, a file, or what a pipe sends."""
    if ns.command or ns.file:
        commands = [("", command) for command in ns.command]
        try:  # -c statements first, then the file
            return commands + ([(ns.file, Path(ns.file).read_text())] if ns.file else [])
        except OSError as exc:
            raise ChronosError(f"can't read {ns.file}: {exc.strerror}") from None
    if not sys.stdin.isatty():
        return [("<stdin>", sys.stdin.read())]
    return None


MCP_HELP = """usage: chronos mcp <folder> [--allow-merge] [-b BRANCH] [--max-query-ms MS]
                    [--max-memory-mb MB] [--max-result-chars N]

Serves the database folder to an AI agent as MCP tools: JSON-RPC 2.0 over stdio, one message per
line (protocol 2025-06-18 and 2025-11-25 through initialize, 2026-07-28 stateless). Give the
folder as an absolute path: the client picks the working directory.

  (default)               safe mode: the agent reads every branch and forks; it writes only
                          on the branches it forked in this session; merge isn't listed (a
                          person merges with `chronos <folder> merge <branch>`)
  --allow-merge           the database's own user: every tool, merge included
  --agent NAME            not in this version (refused)
  -b BRANCH               the branch must exist (tools name their own branch; default main)
  --max-query-ms MS       each call's time limit (default 30000 in safe mode, none with
                          --allow-merge; 0: none); a call past it is rolled back
  --max-memory-mb MB      SQLite's memory for the server (default 256); a call that needs
                          more fails, the server goes on
  --max-result-chars N    characters a result may take (default 24000); a longer one is cut
                          and says how to page on

Claude Code:  claude mcp add chronos -- chronos mcp /abs/path/to/folder
See docs/mcp.md.
"""


def _mcp(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(MCP_HELP.rstrip())
        return 0
    if not argv:
        raise ChronosError(
            "give the database folder: chronos mcp <folder> (`chronos mcp --help` says more)"
        )
    parser = _Parser(prog="chronos mcp", add_help=False)
    parser.add_argument("folder")
    parser.add_argument("--allow-merge", action="store_true")
    parser.add_argument("--agent", default=None)
    parser.add_argument("-b", "--branch", default=None)
    parser.add_argument("--max-query-ms", type=_count("--max-query-ms"), metavar="MS")
    parser.add_argument(
        "--max-memory-mb", type=_count("--max-memory-mb", 16), default=256, metavar="MB"
    )
    parser.add_argument("--max-result-chars", type=_count("--max-result-chars", 1000), metavar="N")
    ns = parser.parse_intermixed_args(argv)
    from .mcp import core as mcp  # the server's imports only when serving

    return mcp.run(
        ns.folder,
        ns.allow_merge,
        ns.agent,
        ns.branch,
        max_query_ms=ns.max_query_ms,
        max_memory_mb=ns.max_memory_mb,
        max_result_chars=ns.max_result_chars or mcp.MAX_RESULT_CHARS,
    )


def _count(flag: str, least: int = 0) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``, or a clear error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < least:
            raise ChronosError(f"{flag} takes a whole number of at least {least}, not {text!r}")
        return value

    return parse


def main(argv: Sequence[str] | None = None) -> None:
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except ChronosError as exc:
        print(f"chronos: {exc.message}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        print("chronos: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except Exception as exc:  # never a traceback for a user, unless asked for
        if os.environ.get("CHRONOS_DEBUG"):
            raise
        print(f"chronos: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
