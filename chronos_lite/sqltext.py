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
    start = i = 0
    n = len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`[" or sql.startswith("--", i) or sql.startswith("/*", i):
            i = _skip_quoted(sql, i)
            continue
        if ch == ";":
            candidate = sql[start : i + 1]
            if apsw.complete(candidate):
                _keep(out, candidate[:-1])
                start = i + 1
        i += 1
    _keep(out, sql[start:])
    return tuple(out)


def _keep(out: list[str], stmt: str) -> None:
    if strip_comments(stmt).strip():
        out.append(stmt.strip())


@functools.lru_cache(maxsize=512)  # asked several times of each statement of a call
def strip_comments(sql: str) -> str:
    """The statement with comments removed (strings kept), for keyword checks."""
    parts: list[str] = []
    i = 0
    while i < len(sql):
        if sql.startswith("--", i) or sql.startswith("/*", i):
            i = _skip_quoted(sql, i)
            parts.append(" ")
            continue
        if sql[i] in "'\"`[":
            j = _skip_quoted(sql, i)
            parts.append(sql[i:j])
            i = j
            continue
        parts.append(sql[i])
        i += 1
    return "".join(parts)


def keywords(sql: str, count: int = 4) -> list[str]:
    """The first ``count`` bare words of a statement, upper-cased (strings and comments skipped)."""
    return list(_keywords(sql, count))


@functools.lru_cache(maxsize=1024)  # asked several times of each statement of a call
def _keywords(sql: str, count: int) -> tuple[str, ...]:
    words: list[str] = []
    text = strip_comments(sql)
    i = 0
    while i < len(text) and len(words) < count:
        if text[i] in "'\"`[":
            i = _skip_quoted(text, i)
            continue
        m = _WORD.match(text, i)
        if m:
            words.append(m.group(0).upper())
            i = m.end()
        else:
            i += 1
    return tuple(words)


@functools.lru_cache(maxsize=512)
def all_words(sql: str) -> frozenset[str]:
    """Every bare word of a statement outside strings and quoted names, upper-cased."""
    text = strip_comments(sql)
    found: set[str] = set()
    i = 0
    while i < len(text):
        if text[i] in "'\"`[":
            i = _skip_quoted(text, i)
            continue
        m = _WORD.match(text, i)
        if m:
            found.add(m.group(0).upper())
            i = m.end()
        else:
            i += 1
    return frozenset(found)


def name_tokens(text: str) -> list[tuple[str, int, int]]:
    """Bare words and quoted names (unquoted), with their spans: (text, start, end)."""
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"`[" or text.startswith("--", i) or text.startswith("/*", i):
            j = _skip_quoted(text, i)
            if ch in '"`[':
                out.append((text[i + 1 : j - 1].replace('""', '"'), i, j))
            i = j
        elif ch.isalnum() or ch == "_":
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            out.append((text[i:j], i, j))
            i = j
        else:
            i += 1
    return out


def tokens(sql: str, word_chars: str = "_$") -> list[tuple[str, str, int, int]]:
    """A statement's tokens outside comments: (text, kind, start, end), kind one of word, name
    (a quoted name, unquoted), string (a literal, its quotes and doubled quotes removed) and
    punct (one character). ``word_chars``: characters a word may hold besides letters and
    digits."""
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


def _unquoted(sql: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, parenthesis depth) of each character outside strings, quoted names
    and comments; a parenthesis is reported at the depth inside it."""
    depth = i = 0
    while i < len(sql):
        ch = sql[i]
        if ch in "'\"`[" or sql.startswith("--", i) or sql.startswith("/*", i):
            i = _skip_quoted(sql, i)
            continue
        depth += ch == "("
        yield i, ch, depth
        depth -= ch == ")"
        i += 1


def top_level_words(sql: str) -> list[tuple[str, int, int]]:
    """Bare words outside parentheses, strings and comments: (UPPER word, start, end)."""
    out: list[tuple[str, int, int]] = []
    end = 0
    for i, ch, depth in _unquoted(sql):
        if depth == 0 and i >= end and (ch.isalpha() or ch == "_"):
            m = _WORD.match(sql, i)
            assert m is not None  # (it starts at a letter or _, which _WORD matches)
            out.append((m.group(0).upper(), i, m.end()))
            end = m.end()
    return out


def comma_parts(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` between commas outside parentheses (a column list, a table body)."""
    cuts = [i for i, ch, depth in _unquoted(text) if ch == "," and depth == 0]
    starts = [0] + [c + 1 for c in cuts]
    return list(zip(starts, [*cuts, len(text)]))


def matching_paren(text: str, open_at: int) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``open_at``, or None."""
    for i, ch, depth in _unquoted(text):
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
