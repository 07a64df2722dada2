"""Small, dependable helpers for SQL text: quoting, splitting a script, classifying statements.

Nothing here parses SQL for meaning; SQLite does that. These helpers only find statement
boundaries (with ``apsw.complete`` deciding, as the sqlite3 shell does) and read the leading
keywords of a statement so the caller can pick a transaction mode.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import apsw

_WORD = re.compile(r"[^\W\d]+")  # letters (of any script) and _: a word of SQL text

# One pass of SQLite's token classes over a text (a C-speed regex: the statement path scans
# each statement several times, and a script of a thousand statements each one): what
# ``_skip_quoted`` skips (comments, strings, quoted names, unterminated ones to the end), words
# (letters, digits, _ and $), one character of anything else.
_LEX = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>--[^\n]*\n?|/\*.*?(?:\*/|\Z))
    |(?P<string>'[^']*(?:''[^']*)*'?)
    |(?P<name>"[^"]*(?:""[^"]*)*"?|`[^`]*(?:``[^`]*)*`?|\[[^\]]*\]?)
    |(?P<word>[\w$]+)
    |(?P<punct>.)""",
    re.S | re.X,
)


def _lex(sql: str) -> tuple[tuple[str, int, int], ...]:
    """The text's tokens: (kind, start, end), kind one of _LEX's groups."""
    return _lexed(sql) if len(sql) <= 65536 else _lexed.__wrapped__(sql)


@functools.lru_cache(maxsize=512)  # each statement of a call is asked about several times
def _lexed(sql: str) -> tuple[tuple[str, int, int], ...]:
    return tuple((m.lastgroup or "punct", m.start(), m.end()) for m in _LEX.finditer(sql))


def quote_ident(name: str) -> str:
    """Quote an identifier so any name, hostile ones included, is taken literally."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    """Quote a string as an SQL literal."""
    return "'" + value.replace("'", "''") + "'"


def at_most(column: str, longest: int) -> str:
    """A quoted column read whole if it is short, else its first ``longest + 1`` characters
    (bytes of a blob): one past the limit tells a cut value from one of just that length, and
    a huge value never leaves SQLite whole."""
    return (
        f"CASE WHEN length({column}) > {longest} THEN substr({column}, 1, {longest + 1}) "
        f"ELSE {column} END"
    )


def literal(value: object) -> str:
    """Any SQLite value as an SQL literal that reads back as the same value, of the same type:
    NULL, integers, reals (±9e999 for the infinities; NaN is NULL, as SQLite stores it), X'..'
    blobs, and text quoted, or, holding a NUL (which a statement's text can't), its UTF-8 bytes
    cast to text."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "NULL"
        if value in (float("inf"), float("-inf")):
            return "9e999" if value > 0 else "-9e999"
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    text = str(value)
    if "\x00" in text:
        return f"CAST(X'{text.encode('utf-8', 'surrogatepass').hex()}' AS TEXT)"
    return quote_literal(text)


def _skip_quoted(sql: str, i: int) -> int:
    """Return the index just past the quoted token or comment starting at ``sql[i]``."""
    ch = sql[i]
    if ch in "'\"`":
        j = i + 1
        while j < len(sql):
            if sql[j] == ch:
                if j + 1 < len(sql) and sql[j + 1] == ch:
                    j += 2
                    continue
                return j + 1
            j += 1
        return len(sql)
    if ch == "[":
        j = sql.find("]", i + 1)
        return len(sql) if j < 0 else j + 1
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return len(sql) if j < 0 else j + 1
    if sql.startswith("/*", i):
        j = sql.find("*/", i + 2)
        return len(sql) if j < 0 else j + 2
    return i + 1


def split_statements(sql: str) -> list[str]:
    """Split a script into complete statements (without their trailing ``;``).

    Semicolons inside strings, identifiers, comments and trigger bodies do not split.
    Statements that hold nothing but whitespace or comments are dropped.
    """
    return list(_split(sql)) if len(sql) <= 4096 else list(_split.__wrapped__(sql))


@functools.lru_cache(maxsize=256)  # the rights and the run both split a call's SQL
def _split(sql: str) -> tuple[str, ...]:
    out: list[str] = []
    start = 0
    for kind, at, end in _lex(sql):
        if kind == "punct" and sql[at] == ";":
            candidate = sql[start:end]
            if apsw.complete(candidate):
                _keep(out, candidate[:-1])
                start = end
    _keep(out, sql[start:])
    return tuple(out)


def _keep(out: list[str], stmt: str) -> None:
    if strip_comments(stmt).strip():
        out.append(stmt.strip())


@functools.lru_cache(maxsize=512)  # asked several times of each statement of a call
def strip_comments(sql: str) -> str:
    """The statement with comments removed (strings kept), for keyword checks."""
    parts: list[str] = []
    kept = 0
    for kind, at, end in _lex(sql):
        if kind == "comment":
            parts += [sql[kept:at], " "]
            kept = end
    parts.append(sql[kept:])
    return "".join(parts)


def keywords(sql: str, count: int = 4) -> list[str]:
    """The first ``count`` bare words of a statement, upper-cased (strings and comments skipped)."""
    return list(_keywords(sql, count))


@functools.lru_cache(maxsize=1024)  # asked several times of each statement of a call
def _keywords(sql: str, count: int) -> tuple[str, ...]:
    words: list[str] = []
    for word in _bare_words(sql):
        if len(words) >= count:
            break
        words.append(word)
    return tuple(words)


def _bare_words(sql: str) -> Iterator[str]:
    """The statement's bare words (runs of letters and _), upper-cased, in order."""
    for kind, at, end in _lex(sql):
        if kind == "word":
            for m in _WORD.finditer(sql, at, end):
                yield m.group(0).upper()


@functools.lru_cache(maxsize=512)
def all_words(sql: str) -> frozenset[str]:
    """Every bare word of a statement outside strings and quoted names, upper-cased."""
    return frozenset(_bare_words(sql))


def name_tokens(text: str) -> list[tuple[str, int, int]]:
    """Bare words and quoted names (unquoted), with their spans: (text, start, end)."""
    out: list[tuple[str, int, int]] = []
    for kind, at, end in _lex(text):
        if kind == "name":
            out.append((_unquote_name(text, at, end), at, end))
        elif kind == "word":
            at += len(text[at:end]) - len(text[at:end].lstrip("$"))  # (a word starts after $)
            if at < end:
                out.append((text[at:end], at, end))
    return out


def tokens(sql: str, word_chars: str = "_$") -> list[tuple[str, str, int, int]]:
    """A statement's tokens outside comments: (text, kind, start, end), kind one of word, name
    (a quoted name, unquoted), string (a literal, its quotes and doubled quotes removed) and
    punct (one character). ``word_chars``: characters a word may hold besides letters and
    digits."""
    if word_chars == "_$":
        return list(_tokens(sql))
    out: list[tuple[str, str, int, int]] = []
    i = 0
    while i < len(sql):
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("--", i) or sql.startswith("/*", i):
            i = _skip_quoted(sql, i)
        elif ch == "'":
            j = _skip_quoted(sql, i)
            out.append((sql[i + 1 : j - 1].replace("''", "'"), "string", i, j))
            i = j
        elif ch in '"`[':
            j = _skip_quoted(sql, i)
            out.append((sql[i + 1 : j - 1].replace('""', '"'), "name", i, j))
            i = j
        elif ch.isalnum() or ch in word_chars:
            j = i
            while j < len(sql) and (sql[j].isalnum() or sql[j] in word_chars):
                j += 1
            out.append((sql[i:j], "word", i, j))
            i = j
        else:
            out.append((ch, "punct", i, i + 1))
            i += 1
    return out


@functools.lru_cache(maxsize=512)
def _tokens(sql: str) -> tuple[tuple[str, str, int, int], ...]:
    out: list[tuple[str, str, int, int]] = []
    for kind, at, end in _lex(sql):
        if kind == "string":
            out.append((sql[at + 1 : end - 1].replace("''", "'"), kind, at, end))
        elif kind == "name":
            out.append((_unquote_name(sql, at, end), kind, at, end))
        elif kind in ("word", "punct"):
            out.append((sql[at:end], kind, at, end))
    return tuple(out)


def _unquote_name(sql: str, at: int, end: int) -> str:
    """A quoted name's text: its quote doubled inside stands for one ([...] doubles none)."""
    quote = sql[at]
    inner = sql[at + 1 : end - 1]
    return inner if quote == "[" else inner.replace(quote * 2, quote)


def _marks(sql: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, parenthesis depth) of each punctuation mark outside strings, quoted
    names and comments; a parenthesis is reported at the depth inside it."""
    depth = 0
    for kind, at, _end in _lex(sql):
        if kind == "punct":
            ch = sql[at]
            depth += ch == "("
            yield at, ch, depth
            depth -= ch == ")"


def top_level_words(sql: str) -> list[tuple[str, int, int]]:
    """Bare words outside parentheses, strings and comments: (UPPER word, start, end)."""
    return list(_top_level_words(sql))


@functools.lru_cache(maxsize=512)
def _top_level_words(sql: str) -> tuple[tuple[str, int, int], ...]:
    out: list[tuple[str, int, int]] = []
    depth = 0
    for kind, at, end in _lex(sql):
        if kind == "punct":
            depth += (sql[at] == "(") - (sql[at] == ")")
        elif kind == "word" and depth == 0:
            for m in _WORD.finditer(sql, at, end):
                start = m.start()  # (a word starts at a letter or _: not at ², say)
                while start < m.end() and not (sql[start].isalpha() or sql[start] == "_"):
                    start += 1
                if start < m.end():
                    out.append((sql[start : m.end()].upper(), start, m.end()))
    return tuple(out)


def comma_parts(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` between commas outside parentheses (a column list, a table body)."""
    cuts = [i for i, ch, depth in _marks(text) if ch == "," and depth == 0]
    starts = [0] + [c + 1 for c in cuts]
    return list(zip(starts, [*cuts, len(text)]))


def matching_paren(text: str, open_at: int) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``open_at``, or None."""
    for i, ch, depth in _marks(text):
        if i > open_at and ch == ")" and depth == 1:
            return i
    return None


def split_returning(sql: str) -> tuple[str, str] | None:
    """An INSERT's text without its RETURNING clause, and the clause's expressions."""
    words = top_level_words(sql)
    at = [start for word, start, _ in words if word == "RETURNING"]
    if not at:
        return None
    return sql[: at[-1]].rstrip(), sql[at[-1] + len("RETURNING") :].strip()


TRANSACTION_WORDS = {"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"}
_READ_STARTS = {"SELECT", "VALUES", "EXPLAIN"}
_WRITE_WORDS = {"INSERT", "UPDATE", "DELETE", "REPLACE"}


def is_transaction_control(sql: str) -> bool:
    words = keywords(sql, 1)
    return bool(words) and words[0] in TRANSACTION_WORDS


def may_write(sql: str) -> bool:
    """True unless the statement is plainly a read (a SELECT, VALUES, or a WITH ... SELECT)."""
    words = keywords(sql, 1)
    if not words:
        return False
    first = words[0]
    if first in _READ_STARTS:
        return False
    if first == "WITH":
        return bool(all_words(sql) & _WRITE_WORDS)
    if first == "PRAGMA":
        return "=" in strip_comments(sql) or "(" in strip_comments(sql)
    return True


_VERBS = {"INSERT", "UPDATE", "REPLACE", "DELETE", "SELECT", "VALUES"}
_MODES = {"ROLLBACK", "ABORT", "FAIL", "IGNORE", "REPLACE"}


def conflict_mode(sql: str) -> str | None:
    """The statement's own conflict clause ('rollback', 'abort', 'fail', 'ignore' or
    'replace': ``INSERT OR ...``, ``UPDATE OR ...``, ``REPLACE``), None if it has none."""
    words = [w for w, _s, _e in top_level_words(sql)]
    verb = next((i for i, w in enumerate(words) if w in _VERBS), None)
    if verb is None:
        return None
    if words[verb] == "REPLACE":
        return "replace"
    if words[verb] in ("INSERT", "UPDATE") and words[verb + 1 : verb + 2] == ["OR"]:
        mode = words[verb + 2] if verb + 2 < len(words) else ""
        return mode.lower() if mode in _MODES else None
    return None


def write_target(sql: str) -> str | None:
    """The table (or view) an INSERT, UPDATE or DELETE writes, by name; None for others."""
    found = tokens(sql)
    depth = 0
    for j, (text, kind, _s, _e) in enumerate(found):
        if kind == "punct":
            depth += (text == "(") - (text == ")")
            continue
        if depth or kind != "word" or text.upper() not in _VERBS:
            continue
        verb = text.upper()
        if verb in ("SELECT", "VALUES"):
            return None
        skip = {"OR", "ROLLBACK", "ABORT", "FAIL", "IGNORE", "REPLACE", "INTO", "FROM"}
        k = j + 1
        while k < len(found) and found[k][1] == "word" and found[k][0].upper() in skip:
            k += 1
        if k >= len(found):
            return None
        if k + 2 < len(found) and found[k + 1][0] == ".":
            return found[k + 2][0]
        return found[k][0]
    return None


def insert_columns(sql: str) -> tuple[str, list[str] | None] | None:
    """An INSERT's table and the columns it names: None for all of them (its values by
    position), [] for DEFAULT VALUES. None if the statement is no INSERT."""
    found = tokens(sql)
    depth, verb = 0, None
    for j, (text, kind, _s, _e) in enumerate(found):
        if kind == "punct":
            depth += (text == "(") - (text == ")")
        elif depth == 0 and kind == "word" and text.upper() in _VERBS:
            verb = j if text.upper() in ("INSERT", "REPLACE") else None
            break
    if verb is None:
        return None
    j = next((k for k in range(verb, len(found)) if found[k][0].upper() == "INTO"), len(found))
    j += 1
    if j >= len(found):
        return None
    name = found[j][0]
    if j + 2 < len(found) and found[j + 1][0] == ".":
        name, j = found[j + 2][0], j + 2
    j += 1
    if j < len(found) and found[j][1] == "word" and found[j][0].upper() == "AS":
        j += 2
    if j < len(found) and found[j][:2] == ("(", "punct"):
        columns = []
        for text, kind, _s, _e in found[j + 1 :]:
            if (text, kind) == (")", "punct"):
                break
            if kind in ("word", "name"):
                columns.append(text)
        return name, columns
    if j < len(found) and found[j][0].upper() == "DEFAULT":
        return name, []
    return name, None


def statement_tag(sql: str) -> str:
    """A psql-like command tag for a statement that returned no rows ('CREATE TABLE', 'BEGIN')."""
    words = keywords(sql, 4)
    if not words:
        return "OK"
    first = words[0]
    if first in ("CREATE", "DROP") and len(words) > 1:
        rest = [w for w in words[1:] if w not in ("TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL")]
        return f"{first} {rest[0]}" if rest else first
    if first == "ALTER" and len(words) > 1:
        return f"ALTER {words[1]}"
    if first == "END":
        return "COMMIT"
    return first
