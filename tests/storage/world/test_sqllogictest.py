"""SQLite's own query-correctness corpus (sqllogictest, ``../shared/slt``) in every mode of
``tests/sqllogictest.py``: plain SQLite, main, a world forked after the file's first statements,
and the overlay (schema on main, rows and queries on a world).

CI runs the ``evidence/`` slice (the language features, a few seconds); ``python
tests/sqllogictest.py`` runs the whole corpus and prints the counts per mode. Every record that
passes in plain SQLite must pass in every mode: the test fails both on a new failure and on a
listed one that now passes."""

from __future__ import annotations

import pytest
from sqllogictest import MODES, SLT, compare

SLICE = sorted((SLT / "evidence").glob("*.test")) if SLT.is_dir() else []

# (file, mode) -> the lines of the records that don't pass yet, and why: none. (The list stays,
# so that a record that stops passing must be named here, with why.)
NOT_YET: dict[tuple[str, str], set[int]] = {}


@pytest.mark.skipif(not SLT.is_dir(), reason=f"the sqllogictest slice isn't here ({SLT})")
@pytest.mark.parametrize("path", SLICE, ids=[p.name for p in SLICE])
def test_every_mode_answers_as_sqlite(path):
    found = compare(path, MODES)
    assert found["plain"].passed > 0, "the control ran no record"
    for mode in MODES[1:]:
        failing = {int(f.split(":")[0].removeprefix("line ")) for f in found[mode].failed}
        assert failing == NOT_YET.get((path.name, mode), set()), (mode, found[mode].failed)


def test_the_runner_reads_the_format(tmp_path):
    test = tmp_path / "t.test"
    test.write_text(
        "hash-threshold 2\n\n"
        "statement ok\nCREATE TABLE t(a INTEGER, b TEXT)\n\n"
        "statement ok\nINSERT INTO t VALUES(1, ''), (2, 'x y'), (NULL, 'é')\n\n"
        "statement error\nINSERT INTO nowhere VALUES(1)\n\n"
        "onlyif mysql\nhalt\n\n"
        "query IT rowsort\nSELECT a, b FROM t\n----\n"
        "6 values hashing to " + _md5(["1", "(empty)", "2", "x y", "NULL", "@"]) + "\n\n"
        "query R nosort\nSELECT 1\n----\n1.000\n\n"
        "skipif sqlite\nquery I nosort\nSELECT 'not for sqlite'\n----\n7\n"
    )
    found = compare(test, MODES)
    assert {m: (o.passed, o.failed) for m, o in found.items()} == {m: (5, []) for m in MODES}


def _md5(values: list[str]) -> str:
    import hashlib

    rows = [values[i : i + 2] for i in range(0, len(values), 2)]
    flat = [v for row in sorted(rows) for v in row]
    return hashlib.md5("".join(v + "\n" for v in flat).encode()).hexdigest()
