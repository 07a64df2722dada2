"""A file's rows for ``insert``: CSV, TSV, a JSON array or NDJSON, parsed by sqlite-utils
(``rows_from_file``; the format told by the file's name, else by its contents), read as a stream
of numbered rows; the column types a new table gets (sqlite-utils' ``TypeTracker``)."""

from __future__ import annotations

import codecs
import csv
import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlite_utils.utils import (
    Format,
    RowError,
    RowsFromFileError,
    TypeTracker,
    ValueTracker,
    rows_from_file,
    suggest_column_types,
)

from ..errors import BAD_ARGUMENT, NOT_FOUND, ChronosError
from ..storage import faults
from ..storage.limits import Bounds

FORMATS = {"csv": Format.CSV, "tsv": Format.TSV, "json": Format.JSON, "ndjson": Format.NL}
NAMES = {f: name for name, f in FORMATS.items()}
# A file's name says its format; .json (an array, or one object a line) and other names are
# told by their contents.
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".ndjson": "ndjson", ".jsonl": "ndjson"}
# sqlite-utils' detected types (TypeTracker's names; suggest_column_types' Python types) as
# the column types of a new table
TRACKED = {"integer": "integer", "float": "real", "text": "text"}
PYTHON = {int: "integer", float: "real", str: "text", bytes: "blob", bool: "integer"}
LONGEST_FIELD = 1_000_000_000  # SQLite's longest value: a CSV field may be as long


# A file the caller made and names otherwise (the Python API's rows, spooled): its path, and
# what messages and history call it
_NAMED: ContextVar[tuple[str, str] | None] = ContextVar("chronos_source_named", default=None)


@contextmanager
def named(path: str, shown: str) -> Iterator[None]:
    """Within this, the file at ``path`` is called ``shown`` ("the list of rows")."""
    token = _NAMED.set((path, shown))
    try:
        yield
    finally:
        _NAMED.reset(token)


class Source:
    """A file's rows, numbered from 1, read as a stream each time they are asked for (a new
    table reads them twice: once for its columns and types, once to insert them)."""

    def __init__(
        self, path: str, fmt: str | None, encoding: str | None, bounds: Bounds | None = None
    ) -> None:
        self.path = Path(path)
        self.bounds = bounds  # the call's time limit and cancel, held between SQLite's steps
        self.shown = str(path)
        if (named := _NAMED.get()) is not None and named[0] == path:
            self.shown = named[1]
        self._spool: Any = None  # what stdin sent (path "-"), kept to be read twice
        if path == "-":
            self._spool = _spooled(sys.stdin.buffer)
            self.path, self.shown = Path(self._spool.name), "stdin"
        if encoding is not None:
            try:
                codecs.lookup(encoding)
            except LookupError:
                raise ChronosError(
                    f"unknown encoding '{encoding}': give one Python knows, e.g. utf-8, latin-1, "
                    f"cp1252, utf-16",
                    BAD_ARGUMENT,
                ) from None
        self.encoding = encoding
        with self._open() as fp:
            head = fp.read(4096)
        self.empty = not head.strip()
        self.format = fmt or self._detect(head)  # None: sqlite-utils tells CSV from TSV
        self.found = self.format  # the format read (after a first read, when detected)
        self._array: list | None = None  # a JSON array's rows (json.load reads it whole)

    def _open(self) -> io.BufferedReader:
        try:
            return open(self.path, "rb")
        except FileNotFoundError:
            raise ChronosError(f"no file {self.shown}", NOT_FOUND) from None
        except IsADirectoryError:
            raise ChronosError(f"{self.shown} is a folder, not a file", BAD_ARGUMENT) from None
        except OSError as exc:
            raise ChronosError(f"can't read {self.shown}: {exc.strerror}", BAD_ARGUMENT) from None

    def _detect(self, head: bytes) -> str | None:
        named = EXTENSIONS.get(self.path.suffix.lower())
        if named is not None:
            return named
        text = head.lstrip()
        if text.startswith(b"\xef\xbb\xbf"):
            text = text[3:].lstrip()
        if text.startswith(b"["):
            return "json"
        if text.startswith(b"{"):  # one object, or one a line (sqlite-utils takes it as JSON)
            with self._open() as fp:
                first = fp.readline()
                rest = fp.read(4096).strip()
            try:
                whole_line = isinstance(json.loads(first), dict)
            except ValueError:
                whole_line = False
            return "ndjson" if whole_line and rest else "json"
        try:  # sqlite-utils sniffs the delimiter (in the file's first 2048 bytes)
            rows_from_file(io.BytesIO(head), encoding=self.encoding)
        except csv.Error:  # none to find: one column
            return "csv"
        except UnicodeDecodeError:
            pass  # (said with the row it is in)
        return None

    def rows(self) -> Iterator[tuple[int, dict]]:
        """(number, row) for each row of the file."""
        if self.empty:
            return
        if self._array is not None:
            yield from enumerate(self._array, start=1)
            return
        limit = csv.field_size_limit()
        n = 0
        with self._open() as fp:
            try:
                csv.field_size_limit(LONGEST_FIELD)
                rows = self._parsed(fp)
                for n, row in enumerate(rows, start=1):
                    if not isinstance(row, dict):
                        raise ChronosError(
                            f"row {n} of {self.shown} is {_kind(row)}, not an object: each row "
                            f'of a JSON file is an object of column names and values ({{"id": '
                            f"1, ...}})",
                            BAD_ARGUMENT,
                        )
                    if not n % 8192 and self.bounds is not None and self.bounds.progress():
                        raise faults.interrupted(self.bounds)  # (Ctrl-C, or past its time)
                    yield n, row
            except RowError as exc:
                extra = str(exc).rsplit("contained these extra values: ", 1)[-1]
                raise ChronosError(
                    f"row {n + 1} of {self.shown} has more values than its header names "
                    f"columns (the extra ones: {extra})",
                    BAD_ARGUMENT,
                ) from None
            except csv.Error as exc:
                raise ChronosError(f"row {n + 1} of {self.shown}: {exc}", BAD_ARGUMENT) from None
            except json.JSONDecodeError as exc:
                where = f"row {n + 1}" if self.found == "ndjson" else f"line {exc.lineno}"
                raise ChronosError(
                    f"{self.shown} isn't valid {(self.found or 'json').upper()}: {where}: "
                    f"{exc.msg} (column {exc.colno}); give its format with --format if it is "
                    f"another",
                    BAD_ARGUMENT,
                ) from None
            except UnicodeDecodeError as exc:
                where = self.shown if self.found == "json" else f"row {n + 1} of {self.shown}"
                raise ChronosError(
                    f"{where} isn't {exc.encoding} text (byte "
                    f"0x{exc.object[exc.start]:02x}): give the file's encoding with --encoding, "
                    f"e.g. latin-1",
                    BAD_ARGUMENT,
                ) from None
            finally:
                csv.field_size_limit(limit)

    def _parsed(self, fp: io.BufferedReader) -> Any:
        fmt = FORMATS[self.format] if self.format else None
        stream: Any = fp
        if self.encoding and fmt in (Format.JSON, Format.NL):  # (CSV decodes as told)
            stream = io.TextIOWrapper(fp, encoding=self.encoding)
        try:
            rows, found = rows_from_file(stream, fmt, encoding=self.encoding)
        except RowsFromFileError as exc:  # (a JSON file that is neither a list nor an object)
            raise ChronosError(
                f"{self.shown}: {exc}: give a JSON array of objects, or NDJSON (one object a line)",
                BAD_ARGUMENT,
            ) from None
        self.found = NAMES[found]
        if found == Format.JSON:
            assert isinstance(rows, list)  # (sqlite-utils reads a JSON file whole)
            self._array = rows
        return rows


def _spooled(stream: Any) -> Any:
    """``stream`` copied into a temporary file (deleted when closed or collected): a new table
    reads its rows twice, and a pipe can be read once."""
    import shutil
    import tempfile

    spool = tempfile.NamedTemporaryFile(prefix="chronos-stdin-")  # (kept open: read twice)
    shutil.copyfileobj(stream, spool)
    spool.flush()
    return spool


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool | int | float):
        return "a number" if not isinstance(value, bool) else "a boolean"
    return "null" if value is None else "not an object"


def detect_types(source: Source) -> dict[str, str]:
    """The file's columns (in the order it first names them) and a type for each."""
    rows = (row for _n, row in source.rows())
    if source.format in ("json", "ndjson"):
        return {c: PYTHON.get(kind, "text") for c, kind in suggest_column_types(rows).items()}
    # TypeTracker's own loop (wrap) makes a ValueTracker for every value it sees, which costs
    # more than the insert: its trackers are made here once a column, and fed the same values
    # (a column of empty fields alone has none: it is text).
    tracker = TypeTracker()
    trackers = tracker.trackers
    named: dict[str, None] = {}  # every column, in the order the file first names them
    for row in rows:
        if not named.keys() >= row.keys():  # (a CSV file's rows: the header's, once)
            named.update(dict.fromkeys(row))
        for column, value in row.items():
            if value:
                found = trackers.get(column)
                if found is None:
                    found = trackers[column] = ValueTracker()
                found.evaluate(value)
    kinds = tracker.types
    return {c: TRACKED[kinds[c]] if c in kinds else "text" for c in named}
