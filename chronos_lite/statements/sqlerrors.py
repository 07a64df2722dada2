"""The errors a user's SQL gets: what the guard refused, as the caller's rights put it, and
a failed statement explained (which of a call's statements, what SQLite said, how to fix it)."""

from __future__ import annotations

import apsw

from .. import errors
from ..errors import ChronosError
from ..sqltext import tokens
from ..storage import faults, guard
from ..storage.db import Database, Session
from ..storage.world import schema as worldschema


def refused(access: guard.Access, denial: guard.Denial) -> ChronosError:
    """The error for what the guard refused: chronos' own objects and main's tables say so;
    writes and settings as the caller's rights put it."""
    if denial.kind == "own" and denial.name.lower().startswith("_litestream_"):
        return ChronosError(errors.LITESTREAM_TABLES, errors.REFUSED)
    if denial.kind == "own":
        return ChronosError(errors.OWN_TABLES, errors.REFUSED)
    if denial.kind == "main":
        return ChronosError(guard.main_table_message(denial.name), errors.REFUSED)
    if denial.kind == "secret":
        return ChronosError(
            f"{denial.name} isn't readable: an agent's token is kept only as a salted hash, "
            f"which no statement reads; SHOW AGENTS lists the agents",
            errors.REFUSED,
        )
    if denial.kind == "owner":
        return ChronosError(
            f"{denial.name} is the database's own user's only, never an agent's (an admin's "
            f"neither): it reaches past what this check sees (another file, SQLite's record of "
            f"the schema), where a statement could read the agents' token hashes; a person runs "
            f"it with chronos <folder> sql",
            errors.REFUSED,
        )
    if access.refusal is not None:
        return access.refusal(denial)
    what = "change settings" if denial.kind == "settings" else "write"
    return ChronosError(f"this call may not {what} ({denial.name})", errors.REFUSED)


def explain(
    db: Database,
    session: Session,
    exc: Exception,
    index: int,
    total: int,
    stmt: str,
    undone: str,
) -> ChronosError:
    if isinstance(exc, ChronosError):
        message, code = exc.message, exc.code
    elif isinstance(exc, KeyError):
        key = str(exc.args[0])
        used = f"${key} (or ?{key}, or the {_ordinal(int(key))} ?)" if key.isdigit() else f":{key}"
        message = (
            f"the SQL uses the parameter {used} but 'params' has no value for it (an array's "
            f"values go by position: $1 and ?1 the first, :name and ? the number SQLite gives "
            f'them; an object\'s by name: {{"name": ...}} for :name, @name, $name)'
        )
        code = errors.BAD_ARGUMENT
    elif isinstance(exc, OverflowError):
        message, code = errors.TOO_BIG, errors.BAD_ARGUMENT
    elif isinstance(exc, apsw.BindingsError):
        message = (
            "the SQL uses parameters: give their values in 'params', by position ($1 and ?1 "
            "the first, :name and ? the number SQLite gives them)"
        )
        code = errors.BAD_ARGUMENT
    else:
        described = faults.describe(exc, db) or errors.from_sqlite(exc)
        message, code = described.message, described.code
        if worldschema.DROPPED in message:
            name = message.split(worldschema.DROPPED, 1)[1]
            message = f"no such table: {name} ({session.branch} dropped or renamed it)"
        elif message.startswith("cannot VACUUM from within a transaction"):
            message = (
                "VACUUM runs outside any transaction: send it alone, in a call of its own "
                "(not with other statements, nor between BEGIN and COMMIT)"
            )
        elif message.startswith("no such table"):
            known = db.tables_for(session.world, session.conn)
            message += f" (tables on {session.branch}: {', '.join(sorted(known)) or 'none'})"
    if message.startswith("no such column") and "(columns of" not in message:
        message += _columns_named(db, session, stmt)  # (main's and a world's paths alike)
    if "syntax error" in message and _unquoted_moment(stmt):
        message += " (AS OF takes its moment as a string: AS OF 'now', AS OF '-1 hour')"
    if total > 1:
        short = " ".join(stmt.split())
        short = short if len(short) <= 80 else short[:77] + "..."
        failed = {"statement": index, "of": total, "error": message}
        message = f"statement {index} of {total} failed ({undone}): {message} [{short}]"
        return ChronosError(message, code, failed)
    return ChronosError(message, code)


def _columns_named(db: Database, session: Session, stmt: str) -> str:
    """The columns of the tables ``stmt`` names, as "no such table" lists the tables: a
    typo's right spelling is in sight (at most three tables; none named: nothing)."""
    words = {text.lower() for text, kind, _at, _end in tokens(stmt) if kind in ("word", "name")}
    known = db.tables_for(session.world, session.conn)
    named = [(name, t) for name, (_n, t) in sorted(known.items()) if name.lower() in words]
    if not named or len(named) > 3:
        return ""
    listed = "; ".join(f"{name}: {', '.join(t.column_names)}" for name, t in named)
    return f" (columns of {listed})"


def _unquoted_moment(stmt: str) -> bool:
    """Whether ``stmt`` has an AS OF whose moment isn't a string (``AS OF now``)."""
    words = [
        (text.upper() if kind == "word" else "", kind) for text, kind, _at, _end in tokens(stmt)
    ]
    return any(
        a == "AS" and of == "OF" and moment != "string"
        for (a, _), (of, _), (_, moment) in zip(words, words[1:], words[2:], strict=False)
    )


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
