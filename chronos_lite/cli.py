"""The ``chronos`` command: ``chronos init <folder>``, ``chronos <folder> <operation> ...`` (a
registry operation, its arguments parsed by ``cliargs``), ``chronos <folder>`` (the shell, or a
script), ``chronos mcp <folder>`` (the MCP server over stdio), ``chronos <folder> web`` (the
review page), and ``chronos <folder> replicate <url>`` / ``chronos restore-replica <url>
<folder>`` (Litestream, run by ``copies/litestream``)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chronos_lite

from . import hints, progress, render, rowformats
from .cliargs import (
    MCP_HELP,
    REPLICATE_HELP,
    RESTORE_REPLICA_HELP,
    SERVE_HELP,
    WEB_HELP,
    Parser,
    cli_name,
    count,
    help_text,
    op_name,
    op_parser,
    parse_operation_call,
)
from .errors import ChronosError
from .opening import open_folder
from .operations.registry import REGISTRY
from .shell.cancel import Canceller
from .shell.progress import Bars, WhileLong
from .storage.folder import create

# The shell's modules (its settings, its session, prompt_toolkit for the prompt) and the MCP
# server's are imported by the command that needs them: `chronos <folder> sql ...` starts
# without them.


def run(argv: Sequence[str]) -> int:
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(help_text("", argv[1:2]) if argv[1:2] else help_text("", []))
        return 0
    if argv[0] in ("--version", "-V"):  # (-V: sqlite-utils' and Python's spelling)
        print(f"chronos {chronos_lite.__version__}")
        return 0
    if argv[0] == "init":
        return _init(argv[1:])
    if argv[0] == "mcp":
        return _mcp(argv[1:])
    if argv[0] == "serve":
        return _serve(argv[1:])
    if argv[0] == "restore-replica":
        return _restore_replica(argv[1:])
    folder, rest = argv[0], argv[1:]
    if rest[:1] and rest[0] in ("help", "-h", "--help"):
        print(help_text(folder, rest[1:]))
        return 0
    if not rest or rest[0].startswith("-"):
        return _shell(folder, rest)
    if rest[0] == "web":  # (a front end, not an operation: the review page)
        return _web(folder, rest[1:])
    if rest[0] == "replicate":  # (Litestream's process, not an operation on the database)
        return _replicate(folder, rest[1:])
    if rest[0] in ("init", "mcp", "serve"):  # (a command of its own, before the folder)
        line = shlex.join([rest[0], folder, *rest[1:]])
        raise ChronosError(f"{rest[0]} comes before the folder: chronos {line}")
    name = op_name(rest[0])
    if name not in REGISTRY:
        ops = ", ".join(cli_name(o) for o in REGISTRY.names())
        raise ChronosError(f"unknown operation '{rest[0]}'; operations: {ops}")
    op = REGISTRY.get(name)
    if "-h" in rest[1:] or "--help" in rest[1:]:
        print(op_parser(op).format_help())
        return 0
    args, asked = parse_operation_call(op, rest[1:])
    shown_as = asked or "table"
    try:
        reply = _call_cancellable(folder, name, args)
    except ChronosError as exc:
        if shown_as != "json":
            raise
        # scripts get a refusal as data too (the conflicts, the rows a rule names)
        error = {"error": exc.message, "code": exc.code, "data": exc.data}
        print(_json(error))
        print(f"chronos: {render.terminal(exc.message)}", file=sys.stderr)
        return 1
    # (one write, newline included: two chronos processes on one pipe never interleave a line)
    print(_shown(reply, shown_as), end="")
    return 0


def _shown(reply: Any, shown_as: str) -> str:
    """A reply as the command line prints it: its text, its data as JSON, or its rows."""
    if shown_as == "json":
        return _json(reply.data) + "\n"
    if shown_as in rowformats.TABULAR:
        return rowformats.formatted(shown_as, reply.data)
    return render.terminal(reply.text) + "\n"


def _json(data: Any) -> str:
    """Data as JSON, every character kept (what a terminal would obey as JSON's escapes;
    what JSON can't hold: blobs as {"$blob": hex}, else text)."""
    finite = render.finite(data)
    return render.json_text(
        json.dumps(finite, ensure_ascii=False, indent=2, default=render.json_default)
    )


# What adopting a file changes in the app's schema, and why (nothing else is changed)
ADOPTED = (
    "made the integer primary key of {tables} AUTOINCREMENT, so no id is used twice (a world's "
    "new row can't take an id main deleted); nothing else of the schema changed"
)
KEY_MOVED = " but the PRIMARY KEY clause of {tables}, now on its column (the same key)"


def _init(argv: list[str]) -> int:
    parser = Parser(prog="chronos init", add_help=False)
    parser.add_argument("folder")
    parser.add_argument("--from", dest="source", default=None)
    ns = parser.parse_intermixed_args(argv)
    bars = Bars("init")
    try:
        with progress.listening(bars):  # (a big file's adoption shows a bar on a terminal)
            created = create(ns.folder, ns.source)
    finally:
        bars.close()
    with open_folder(ns.folder) as db:
        tables = sorted(db.tables())
    noun = "table" if len(tables) == 1 else "tables"
    listing = f": {', '.join(tables)}" if tables else ""
    adopted = f" from {ns.source} ({len(tables)} {noun}{listing})" if ns.source else ""
    print(render.terminal(f"created chronos database {ns.folder}{adopted}"))
    if created.autoincrement:
        said = ADOPTED.format(tables=", ".join(created.autoincrement))
        if created.key_moved:
            said += KEY_MOVED.format(tables=", ".join(created.key_moved))
        print(render.terminal(said))
    return 0


# A script's formats: the operations' (the shell's own name for their table: aligned)
SCRIPT_FORMATS = {**{f: f for f in rowformats.FORMATS}, "table": "aligned"}


def _shell(folder: str, argv: list[str]) -> int:
    """``chronos <folder>``: the shell; with -c, -f or input from a pipe, a script."""
    parser = Parser(prog=f"chronos {folder}", add_help=False)
    parser.add_argument("-b", "--branch", default="main")
    parser.add_argument("-c", "--command", action="append", default=[])
    parser.add_argument("-f", "--file", default=None)
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--format", choices=SCRIPT_FORMATS, default=None)
    formats.add_argument("--json", dest="format", action="store_const", const="json")
    formats.add_argument("--csv", dest="format", action="store_const", const="csv")
    parser.add_argument("-X", "--no-config", action="store_true")
    ns = parser.parse_args(argv)
    from .shell import config
    from .shell.session import Shell

    settings = config.Settings(pager=None) if ns.no_config else config.load()
    script = _script(ns)
    for problem in settings.problems if script is None else []:  # scripts don't read it
        print(f"chronos: {render.terminal(problem)}", file=sys.stderr)
    with (
        open_folder(folder, keep_temp=True) as db,  # (a session: TEMP objects last)
        hints.spelled(hints.SHELL),  # (its backslash operations take flags; USE WORLD switches)
    ):
        fmt = SCRIPT_FORMATS.get(ns.format) if ns.format else None
        shell = Shell(db, ns.branch, settings=settings, interactive=script is None, fmt=fmt)
        if script is None:
            from .mcp.host import hosting
            from .shell import repl  # prompt_toolkit only for the prompt

            with hosting(folder, "the shell"):  # a chronos mcp started meanwhile joins it
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
            if ns.file == "-":  # (stdin, as every file a command reads)
                return [*commands, ("<stdin>", sys.stdin.read())]
            return commands + ([(ns.file, Path(ns.file).read_text())] if ns.file else [])
        except OSError as exc:
            raise ChronosError(f"can't read {ns.file}: {exc.strerror}") from None
    if not sys.stdin.isatty():
        return [("<stdin>", sys.stdin.read())]
    return None


def _mcp(argv: list[str]) -> int:
    parser = _server_parser("mcp", argv)
    if parser is None:
        print(MCP_HELP.rstrip())
        return 0
    parser.add_argument("--allow-merge", action="store_true")
    parser.add_argument("--agent", default=None)
    parser.add_argument("-b", "--branch", default=None)
    parser.add_argument("--no-join", action="store_true")
    ns = _limits(parser).parse_intermixed_args(argv)
    from .mcp import core, start  # the server's imports only when serving

    return start.run(
        ns.folder,
        ns.allow_merge,
        ns.agent,
        ns.branch,
        max_query_ms=ns.max_query_ms,
        max_memory_mb=ns.max_memory_mb,
        max_result_chars=ns.max_result_chars or core.MAX_RESULT_CHARS,
        join=not ns.no_join,
    )


def _server_parser(command: str, argv: list[str]) -> Parser | None:
    """The parser of a server's arguments, from its folder on; None: help was asked."""
    if "-h" in argv or "--help" in argv:
        return None
    if not argv:
        raise ChronosError(
            f"give the database folder: chronos {command} <folder> (`chronos {command} --help` "
            "says more)"
        )
    parser = Parser(prog=f"chronos {command}", add_help=False)
    parser.add_argument("folder")
    return parser


def _limits(parser: Parser) -> Parser:
    """A call's limits, the flags both servers end with."""
    parser.add_argument("--max-query-ms", type=count("--max-query-ms"), metavar="MS")
    parser.add_argument(
        "--max-memory-mb", type=count("--max-memory-mb", 16), default=256, metavar="MB"
    )
    parser.add_argument("--max-result-chars", type=count("--max-result-chars", 1000), metavar="N")
    return parser


def _serve(argv: list[str]) -> int:
    parser = _server_parser("serve", argv)
    if parser is None:
        print(SERVE_HELP.rstrip())
        return 0
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=count("--port"), default=7070)
    parser.add_argument("--safe", action="store_true")
    parser.add_argument("--token", default=None)
    parser.add_argument("--admin-token", default=None)
    parser.add_argument("--tls-cert", default=None)
    parser.add_argument("--tls-key", default=None)
    ns = _limits(parser).parse_intermixed_args(argv)
    from .mcp import core, serve  # the server's imports only when serving

    options = serve.Options(
        host=ns.host,
        port=ns.port,
        safe=ns.safe,
        token=ns.token,
        admin_token=ns.admin_token,
        tls_cert=ns.tls_cert,
        tls_key=ns.tls_key,
        max_query_ms=ns.max_query_ms,
        max_memory_mb=ns.max_memory_mb,
        max_result_chars=ns.max_result_chars or core.MAX_RESULT_CHARS,
    )
    return serve.run(ns.folder, options)


def _web(folder: str, argv: list[str]) -> int:
    """``chronos <folder> web``: the review page in a browser."""
    if "-h" in argv or "--help" in argv:
        print(WEB_HELP.rstrip())
        return 0
    parser = Parser(prog=f"chronos {folder} web", add_help=False)
    parser.add_argument("--port", type=count("--port"), default=0)
    parser.add_argument("--no-browser", action="store_true")
    ns = parser.parse_intermixed_args(argv)
    if ns.port > 65535:
        raise ChronosError(f"--port takes a port up to 65535 (0: any free one), not {ns.port}")
    from .web import server  # (the page's imports only when serving it)

    return server.open_web(folder, ns.port, not ns.no_browser)


def _replicate(folder: str, argv: list[str]) -> int:
    """``chronos <folder> replicate <url>``: Litestream streams every commit until stopped."""
    if "-h" in argv or "--help" in argv:
        print(REPLICATE_HELP.rstrip())
        return 0
    parser = Parser(prog=f"chronos {folder} replicate", add_help=False)
    parser.add_argument("url")
    ns = parser.parse_intermixed_args(argv)
    from .copies import litestream

    def say(text: str) -> None:
        print(f"chronos: {render.terminal(text)}", file=sys.stderr, flush=True)

    code = litestream.replicate(folder, ns.url, say)
    say(f"Litestream stopped (exit status {code})")
    return code


def _restore_replica(argv: list[str]) -> int:
    """``chronos restore-replica <url> <folder>``: a replica into a new folder, checked by
    chronos before the folder takes its name."""
    if "-h" in argv or "--help" in argv:
        print(RESTORE_REPLICA_HELP.rstrip())
        return 0
    parser = Parser(prog="chronos restore-replica", add_help=False)
    parser.add_argument("url")
    parser.add_argument("folder")
    ns = parser.parse_intermixed_args(argv)
    from .copies import litestream

    with litestream.restoring(ns.url, ns.folder) as restored:
        with chronos_lite.open(restored) as db:
            checked = _checked(db, restored, ns.folder)
        print(render.terminal(checked))
    print(render.terminal(f"restored {ns.url} into {ns.folder}"))
    return 0


def _checked(db: chronos_lite.Chronos, temp: Path, destination: str) -> str:
    """The verify operation on a restored folder (SQLite's integrity check and each branch's
    content hash), its text naming the folder it becomes; a copy that fails it is refused."""
    reply = db.call("verify")
    text = reply.text.replace(str(temp), destination)
    if not reply.data.get("ok"):
        raise ChronosError(
            f"the restored copy fails chronos' check, so {destination} was not made:\n{text}"
        )
    return text


def _call_cancellable(folder: str, name: str, args: dict[str, Any]) -> Any:
    """One operation on the folder, which Ctrl-C stops (with nothing changed) from the moment
    the command starts opening the folder until the call ends; on a terminal, a bar of what it
    reports as it goes (or, past a second and a half without, of the time it runs)."""
    opened: list[Any] = []
    bars = Bars(f"{cli_name(name)}")
    canceller = Canceller(lambda: opened and opened[0].interrupt())  # stops SQLite at once
    try:

        def call() -> Any:
            with open_folder(folder, keep_temp=True) as db:
                opened.append(db)
                if canceller.cancelled:  # Ctrl-C came while the folder was opening
                    raise ChronosError("cancelled", "57014")
                try:
                    with (
                        progress.listening(bars),
                        hints.spelled(hints.FLAGS),  # (what a message says to type: flags)
                        WhileLong(f"{cli_name(name)} running", [bars]),
                    ):
                        return REGISTRY.call(db, name, args)
                finally:
                    bars.close()

        return canceller.run(call)
    finally:
        canceller.close()


def main(argv: Sequence[str] | None = None) -> None:
    # A background job of a script inherits SIGINT ignored, and Python then installs no
    # handler: like sqlite3's shell, chronos stops on SIGINT wherever it was started.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except ChronosError as exc:
        print(f"chronos: {render.terminal(exc.message)}", file=sys.stderr)
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
        said = render.terminal(str(exc))
        print(f"chronos: internal error: {type(exc).__name__}: {said}", file=sys.stderr)
        code = 2
    sys.exit(code)


if __name__ == "__main__":
    main()
