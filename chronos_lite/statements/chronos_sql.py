"""Chronos' own SQL statements: one small parser for the shell, the ``sql`` tool and the CLI.

Each statement names the registry operation it runs; the parser only turns its words into that
operation's arguments (the registry validates and runs them, as for every front end). The
grammar below is also what an error shows and what docs/sql.md lists:

* ``WORD`` a keyword (``TO|AT``: either), ``<what:arg>`` a name (``name@when`` where a moment
  can be read), ``'<what:arg>'`` an SQL string, ``<what:arg:int>`` a number, ``ours|theirs`` one
  of those words, ``(<meta>)`` a list ``(key = value, ...)``.
* ``[...]`` is optional; the optional clauses that end a form may come in any order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .. import sqltext
from ..errors import BAD_ARGUMENT, ChronosError
from . import formargs

GRAMMAR: tuple[tuple[str, str], ...] = (
    ("fork", "FORK WORLD <name> [FROM <branch:from>] [WITH (<meta>)]"),
    (
        "merge",
        "MERGE WORLD <branch> [INTO <world:into>] [AT VERSION <n:version:int>] [DRY RUN] "
        "[RESOLVE ours|theirs] [BY COLUMNS]",
    ),
    ("discard", "DISCARD WORLD <branch> [CASCADE]"),
    ("branches", "SHOW WORLDS"),
    ("history", "SHOW HISTORY [OF] [<branch>] [LIMIT <n:limit:int>]"),
    (
        "find",
        "FIND IN <table> [WHERE (<meta>)] [TEXT '<text>'] [VECTOR '<vector>' IN <vector_field>] "
        "[LIMIT <n:limit:int>] [OFFSET <n:offset:int>] [EF <n:ef:int>] [ON <branch>]",
    ),
    ("diff", "DIFF [<branch>] [TO <other:to>] [AS SQL] [READERS]"),
    (
        "rebase",
        "REBASE WORLD <branch> [AT VERSION <n:version:int>] [RESOLVE ours|theirs] [BY COLUMNS]",
    ),
    ("check_reads", "CHECK READS [OF] <branch>"),
    (
        "simulate",
        "SIMULATE <n:worlds:int> WORLDS PREFIX <prefix> SCRIPT '<script>' SCORE '<score>' "
        "[FROM <branch:from>] [KEEP <n:keep:int>] [ORDER asc|desc] [SEED <n:seed:int>] "
        "[THREADS <n:threads:int>]",
    ),
    ("replay", "REPLAY WORLD <world> [AS <name:as>]"),
    ("checkpoint", "CHECKPOINT WORLD <branch> [AS] <checkpoint:name>"),
    ("rollback", "ROLLBACK WORLD <branch> TO <checkpoint>"),
    ("restore", "RESTORE WORLD <branch> TO|AT '<moment:at>'"),
    ("undo_merge", "UNDO MERGE <branch> [SKIP CHANGED]"),
    ("undo_agent", "UNDO AGENT <name:agent> SINCE '<moment:since>' [WHERE run_id = '<run>']"),
    ("use", "USE WORLD <branch>"),
    ("agent", "CREATE AGENT <name> [WITH (<meta>)]"),
    ("agent", "ALTER AGENT <name> SET (<meta>)"),
    ("agent", "DROP AGENT <name>"),
    ("agent", "SHOW AGENTS"),
    ("audit", "SHOW AUDIT [<agent>] [SINCE '<moment:since>'] [LIMIT <n:limit:int>]"),
    (
        "set_merge_check",
        "CREATE OR REPLACE MERGE CHECK <name> [ON TABLES (<table>, ...)] "
        "[WITH (timeout_ms = <n>)] AS <select>",
    ),
    (
        "set_merge_check",
        "CREATE MERGE CHECK <name> [ON TABLES (<table>, ...)] [WITH (timeout_ms = <n>)] "
        "AS <select>",
    ),
    ("drop_merge_check", "DROP MERGE CHECK <name>"),
    ("merge_checks", "SHOW MERGE CHECKS"),
    ("mark_reader", "MARK READER <name> READS (<table.column>, ...) [CRITICAL]"),
    ("drop_reader", "DROP READER <name>"),
    ("readers", "SHOW READERS"),
    ("set_merge_policy", "CREATE MERGE POLICY <name> [WITH (<meta>)]"),
    ("set_merge_policy", "ALTER MERGE POLICY <name> SET (<meta>)"),
    ("drop_merge_policy", "DROP MERGE POLICY <name> [CASCADE]"),
    ("merge_policies", "SHOW MERGE POLICIES"),
    ("reviews", "SHOW REVIEWS"),
    ("review", "REVIEW WORLD <branch> approve|reject|pass:verdict REASON '<reason>'"),
    ("mode", "SET MODE <mode>"),
    ("mode", "SHOW MODE"),
)
# Keys whose value may be a bare name: ALTER AGENT bot SET (policy = small).
NAMED_VALUES = {"policy", "reviewer"}
# CREATE MERGE CHECK ends with a query, read as written: its own reader (merge_check_args).
MERGE_CHECK = "set_merge_check"
# The agent statements' action, by their first words; their (key = value, ...) list is the
# operation's arguments (rights = 'read, fork', max_query_ms = 2000, enabled = false).
ACTIONS = {
    ("CREATE", "AGENT"): "create",
    ("ALTER", "AGENT"): "alter",
    ("DROP", "AGENT"): "drop",
    ("SHOW", "AGENTS"): "list",
}
# First words SQLite has too: a chronos statement only with the second word of one of its forms
SHARED_FIRST = {"ROLLBACK", "CREATE", "ALTER", "DROP"}
# MERGE ... DRY RUN is the merge's preview; USE WORLD is the shell's (it switches branch).
OPERATION_FOR_FLAG = {("merge", "dry_run"): "merge_preview"}
USE = "use"


@dataclass
class Item:
    kind: str  # word | slot | string | int | choice | meta
    words: tuple[str, ...] = ()  # a keyword's spellings, or a choice's values
    arg: str = ""
    shown: str = ""


@dataclass
class Group:
    items: list[Item]
    optional: bool = False

    @property
    def text(self) -> str:
        inner = " ".join(i.shown for i in self.items)
        return f"[{inner}]" if self.optional else inner


@dataclass
class Form:
    op: str
    text: str
    head: list[Group] = field(default_factory=list)  # in order
    clauses: list[Group] = field(default_factory=list)  # trailing optional: any order

    @property
    def lead(self) -> tuple[str, ...]:
        """The keywords it starts with (at most two): what tells it from its neighbours."""
        words: list[str] = []
        for group in self.head[:2]:
            if group.optional or group.items[0].kind != "word":
                break
            words.append(group.items[0].words[0])
        return tuple(words)


_NUMBER = re.compile(r"^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE]-?[0-9]+)?$", re.ASCII)
_SLOT = re.compile(r"^(')?<([a-z_]+)(?::([a-z_]+))?(?::(int))?>(')?$")


def _item(token: str) -> Item:
    if token == "(<meta>)":
        return Item("meta", arg="meta", shown="(key = value, ...)")
    slot = _SLOT.match(token)
    if slot:
        quoted, what, arg, num = slot.group(1), slot.group(2), slot.group(3), slot.group(4)
        kind = "string" if quoted else "int" if num else "slot"
        shown = f"'<{what}>'" if quoted else f"<{what}>"
        return Item(kind, arg=arg or what, shown=shown)
    if token.isupper() or not token.isalpha() and token.replace("|", "").isupper():
        return Item("word", tuple(token.split("|")), shown=token.split("|")[0])
    if "|" in token:  # (a choice in a form's head names its argument: approve|reject:verdict)
        choices, _, arg = token.partition(":")
        return Item("choice", tuple(choices.split("|")), arg=arg, shown=choices)
    return Item("word", (token,), shown=token)  # run_id, =: written as they are


def _form(op: str, text: str) -> Form:
    groups: list[Group] = []
    for part in re.findall(r"\[[^\]]*\]|[^\s\[]+", text):
        if part.startswith("["):
            groups.append(Group([_item(t) for t in part[1:-1].split()], optional=True))
        else:
            groups.append(Group([_item(part)]))
    trailing = len(groups)
    while (
        trailing and groups[trailing - 1].optional and groups[trailing - 1].items[0].kind == "word"
    ):
        trailing -= 1
    clauses = groups[trailing:]
    for clause in clauses:  # a choice clause (RESOLVE ours|theirs) sets its keyword's arg
        for item in clause.items:
            if item.kind == "choice":
                item.arg = clause.items[0].words[0].lower()
    shown = " ".join(g.text for g in groups)
    return Form(op, shown, groups[:trailing], clauses)


FORMS = [_form(op, text) for op, text in GRAMMAR]
FIRST_WORDS = {f.head[0].items[0].words[0] for f in FORMS}


def is_chronos(stmt: str) -> bool:
    """Whether a statement is one of chronos' (its first word is one of theirs; ROLLBACK only
    as ROLLBACK WORLD, a transaction's ROLLBACK stays SQLite's)."""
    words = sqltext.keywords(stmt, 2)
    if not words or words[0] not in FIRST_WORDS:
        return False
    if words[0] in SHARED_FIRST:
        return any(list(f.lead) == words[:2] for f in forms_for(words[0]))
    return True


def forms_for(first: str) -> list[Form]:
    return [f for f in FORMS if f.head[0].items[0].words[0] == first]


def lead(stmt: str) -> str:
    """The keywords a chronos statement starts with, as the grammar spells them (FORK WORLD,
    DIFF, SHOW WORLDS): what a message names it by."""
    words = [t.upper() for t, kind in _tokens(stmt)[:2] if kind == "word"]
    for form in forms_for(words[0] if words else ""):
        if list(form.lead) == words[: len(form.lead)]:
            return " ".join(form.lead)
    return words[0] if words else ""


@cache
def _grammar_words(first: str) -> frozenset[str]:
    return frozenset(
        w
        for f in forms_for(first)
        for g in f.head + f.clauses
        for i in g.items
        if i.kind == "word"
        for w in i.words
    )


def parse(stmt: str, branch: str | None = None) -> tuple[str, dict[str, Any]]:
    """The registry operation a statement runs, and its arguments. ``branch``: the session's
    branch, what a statement leaving its branch out (DIFF, SHOW HISTORY) is about."""
    tokens = _tokens(stmt)
    first = tokens[0][0].upper() if tokens else ""
    candidates = forms_for(first)
    if not candidates:
        raise ChronosError(f"not a chronos statement: {stmt.strip()[:40]}", BAD_ARGUMENT)
    second = tokens[1][0].upper() if len(tokens) > 1 and tokens[1][1] == "word" else ""
    chosen = [f for f in candidates if len(f.lead) < 2 or f.lead[1] == second]
    third = tokens[2][0].upper() if len(tokens) > 2 and tokens[2][1] == "word" else ""
    chosen = [f for f in chosen if _third_word(f) in ("", third)] or chosen  # (MERGE CHECK|POLICY)
    if not chosen:
        shown = " ".join(t for t, _ in tokens[:2])
        listing = "; ".join(f.text for f in candidates)
        raise ChronosError(f"unknown statement {shown}: chronos has {listing}", BAD_ARGUMENT)
    form = chosen[0]
    if form.op == MERGE_CHECK:
        try:
            return MERGE_CHECK, merge_check_args(stmt)
        except _Unexpected as exc:
            raise ChronosError(f"{exc}; its form: {form.text}", BAD_ARGUMENT) from None
    if form.op == formargs.MARK_READER:  # (its list of names: its own reader)
        return form.op, formargs.mark_reader_args(stmt, form.text)
    try:
        op, args = _Reader(form, tokens, branch).read()
    except _Unexpected as exc:
        raise ChronosError(f"{exc}; its form: {form.text}", BAD_ARGUMENT) from None
    if form.lead in ACTIONS:
        args = formargs.agent_args(ACTIONS[form.lead], args)
    elif op == "set_merge_policy":
        args = formargs.policy_args(args)
    elif op == "drop_merge_policy" and args.pop("cascade", False):
        args["release_agents"] = True
    elif op == "find":
        args = formargs.find_args(args, branch)
    return op, args


def _third_word(form: Form) -> str:
    """A form's third keyword, when its head has one there (CREATE MERGE POLICY)."""
    if len(form.head) < 3 or form.head[2].optional or form.head[2].items[0].kind != "word":
        return ""
    return form.head[2].items[0].words[0]


class _Unexpected(Exception):
    pass


def _tokens(stmt: str) -> list[tuple[str, str]]:
    """Words (names like before-migration, 10:00 or main@yesterday included), quoted names,
    strings and punctuation; the trailing ``;`` left out."""
    out = [(text, kind) for text, kind, _s, _e in sqltext.tokens(stmt, "_-.:@$")]
    while out and out[-1] == (";", "punct"):
        out.pop()
    return out


class _Reader:
    def __init__(self, form: Form, tokens: list[tuple[str, str]], branch: str | None) -> None:
        self.form, self.tokens, self.at = form, tokens, 0
        self.branch = branch or "main"
        self.args: dict[str, Any] = {}
        self.flags: set[str] = set()

    def read(self) -> tuple[str, dict[str, Any]]:
        for group in self.form.head:
            if group.optional:
                self._optional(group)
            else:
                self._group(group)
        seen: set[int] = set()
        while self.at < len(self.tokens):
            index = self._clause_here()
            if index is None or index in seen:
                word = self.tokens[self.at][0]
                why = "given twice" if index in seen else "unexpected"
                raise _Unexpected(f"{why}: {word}")
            seen.add(index)
            self._group(self.form.clauses[index])
        slots = {i.arg for g in self.form.clauses for i in g.items if i.kind == "slot"}
        if "from" in slots and "from" not in self.args and self.branch != "main":
            self.args["from"] = self.branch  # left out: from the session's branch, as <branch>
        op = self.form.op
        for flag in self.flags:
            op = OPERATION_FOR_FLAG.get((self.form.op, flag), op)
            if (self.form.op, flag) not in OPERATION_FOR_FLAG:
                self.args[flag] = True
        return op, self.args

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _optional(self, group: Group) -> None:
        first = group.items[0]
        token = self._peek()
        if first.kind == "word":
            if token and token[1] == "word" and token[0].upper() in first.words:
                self._group(group)
        elif token is None or self._is_keyword(token):
            if first.arg == "branch":  # left out: the session's branch
                self.args["branch"] = self.branch
        else:
            self._group(group)

    def _is_keyword(self, token: tuple[str, str]) -> bool:
        first = self.form.head[0].items[0].words[0]
        return token[1] == "word" and token[0].upper() in _grammar_words(first)

    def _clause_here(self) -> int | None:
        token = self._peek()
        if token is None or token[1] != "word":
            return None
        for index, clause in enumerate(self.form.clauses):
            if token[0].upper() in clause.items[0].words:
                return index
        return None

    def _group(self, group: Group) -> None:
        for item in group.items:
            self._item(item)
        words = [i.words[0] for i in group.items if i.kind == "word"]
        if all(i.kind == "word" for i in group.items) and group.optional and len(words) > 0:
            if group in self.form.clauses:
                self.flags.add("_".join(w.lower() for w in words))

    def _item(self, item: Item) -> None:
        token = self._peek()
        if token is None:
            raise _Unexpected(f"{item.shown} is missing")
        text, kind = token
        if item.kind == "word":
            quoted = kind in ("string", "name")  # 'RUN' is a value, not the keyword
            if quoted or text.upper() not in (w.upper() for w in item.words):
                raise _Unexpected(f"expected {item.shown}, not {text}")
            self.at += 1
        elif item.kind == "slot":
            self.args[item.arg] = self._name(item)
        elif item.kind == "string":
            if kind != "string":
                raise _Unexpected(f"expected {item.shown} (an SQL string in quotes), not {text}")
            self.args[item.arg] = text
            self.at += 1
        elif item.kind == "int":
            if kind != "word" or not (text.isascii() and text.isdigit()):
                raise _Unexpected(f"expected {item.shown}, a number, not {text}")
            self.args[item.arg] = int(text)
            self.at += 1
        elif item.kind == "choice":
            if text.lower() not in item.words:
                raise _Unexpected(f"expected {item.shown}, not {text}")
            self.args[item.arg] = text.lower()
            self.at += 1
        elif item.kind == "meta":
            self.args["meta"] = self._meta()

    def _name(self, item: Item) -> str:
        text, kind = self.tokens[self.at]
        if kind not in ("word", "name", "string") or (
            kind == "word" and self._is_keyword((text, kind))
        ):
            raise _Unexpected(f"expected {item.shown}, not {text}")
        self.at += 1
        nxt = self._peek()
        if kind == "word" and text.endswith("@") and nxt and nxt[1] == "string":
            self.at += 1  # name@'2026-11-30 10:00'
            return text + nxt[0]
        return text

    def _meta(self) -> dict[str, Any]:
        """``(key = value, ...)``: values are SQL strings, numbers, true, false or null."""
        expected = "expected (key = value, ...) with values in quotes or numbers"
        self._expect("(", expected)
        meta: dict[str, Any] = {}
        while True:
            key = self._peek()
            if key is None:
                raise _Unexpected("WITH ( is not closed: ) is missing")
            if key[1] not in ("word", "name"):
                raise _Unexpected(f"expected a key (a name), not {key[0]!r}")
            if key[0] in meta:
                raise _Unexpected(f"given twice: {key[0]}")
            self.at += 1
            self._expect("=", f"expected = after {key[0]}")
            meta[key[0]] = self._value(expected, key[0].lower() in NAMED_VALUES)
            token = self._peek()
            if token == (")", "punct"):
                self.at += 1
                return meta
            if token is None:
                raise _Unexpected("WITH ( is not closed: ) is missing")
            self._expect(",", f"expected , or ) after {key[0]}'s value")

    def _value(self, expected: str, bare: bool = False) -> Any:
        token = self._peek()
        sign = ""
        if token == ("-", "punct"):
            sign, self.at = "-", self.at + 1
            token = self._peek()
        if token is None:
            raise _Unexpected(expected)
        text, kind = token
        self.at += 1
        if kind == "string" and not sign:
            return text
        if kind == "word":
            lowered = text.lower()
            if lowered in ("true", "false", "null") and not sign:
                return {"true": True, "false": False, "null": None}[lowered]
            if _NUMBER.match(text):  # written as SQL writes numbers: no nan, inf, ², 1_000
                number = float(sign + text) if "." in text or "e" in lowered else int(sign + text)
                if math.isfinite(number):
                    return number
            elif bare and not sign and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", text):
                return text  # (policy = small: a name, as Postgres' WITH lists take one)
        raise _Unexpected(f"{expected}, not {text}")

    def _expect(self, punct: str, message: str) -> None:
        if self._peek() != (punct, "punct"):
            raise _Unexpected(message)
        self.at += 1


def merge_check_args(stmt: str) -> dict[str, Any]:
    """CREATE [OR REPLACE] MERGE CHECK name [ON TABLES (a, b)] [WITH (timeout_ms = n)] AS
    <select>: the set_merge_check tool's arguments (the query as written, after AS)."""
    toks = sqltext.tokens(stmt, "_-.:@$")
    at = 0

    def peek() -> tuple[str, str, int, int] | None:
        return toks[at] if at < len(toks) else None

    def word(*words: str) -> bool:
        t = peek()
        return t is not None and t[1] == "word" and t[0].upper() in words

    def take(*words: str) -> None:
        nonlocal at
        if not word(*words):
            t = peek()
            raise _Unexpected(f"expected {words[0]}, not {t[0] if t else 'the end'}")
        at += 1

    def punct(ch: str) -> None:
        nonlocal at
        t = peek()
        if t is None or t[:2] != (ch, "punct"):
            raise _Unexpected(f"expected {ch}, not {t[0] if t else 'the end'}")
        at += 1

    def name(what: str) -> str:
        nonlocal at
        t = peek()
        if t is None or t[1] not in ("word", "name") or (t[1] == "word" and word("AS")):
            raise _Unexpected(f"expected {what}, not {t[0] if t else 'the end'}")
        at += 1
        return t[0]

    take("CREATE")
    if word("OR"):
        take("OR")
        take("REPLACE")
    take("MERGE")
    take("CHECK")
    args: dict[str, Any] = {"name": name("<name>")}
    if word("ON"):
        take("ON")
        take("TABLES")
        punct("(")
        tables = [name("<table>")]
        while peek() is not None and peek()[:2] == (",", "punct"):  # type: ignore[index]
            at += 1
            tables.append(name("<table>"))
        punct(")")
        args["tables"] = tables
    if word("WITH"):
        take("WITH")
        punct("(")
        take("TIMEOUT_MS")
        punct("=")
        t = peek()
        if t is None or t[1] != "word" or not t[0].isdigit():
            raise _Unexpected(f"expected timeout_ms's number, not {t[0] if t else 'the end'}")
        at += 1
        args["timeout_ms"] = int(t[0])
        punct(")")
    if not word("AS"):
        t = peek()
        raise _Unexpected(f"expected AS <select>, not {t[0] if t else 'the end'}")
    query = stmt[toks[at][3] :].strip().rstrip(";").strip()
    if not query:
        raise _Unexpected("<select> is missing after AS")
    args["query"] = query
    return args
