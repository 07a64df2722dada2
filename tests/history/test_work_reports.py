"""Long work says how far it is (progress.report): a diff's counts a table at a time, a
restore's rows read as they were and written back. (What the front ends show of the reports:
tests/cli/test_cli_progress.py, tests/mcp/test_mcp_progress.py.)"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from chronos_lite import progress


def _heard(call) -> list[tuple[str, int, int | None]]:
    heard: list[tuple[str, int, int | None]] = []
    with progress.listening(lambda what, done, total: heard.append((what, done, total))):
        call()
    return heard


def test_a_diff_counts_a_table_at_a_time(shop):
    shop.sql("create table notes(id integer primary key, body text)")
    shop.fork("w")
    shop.sql("update users set name = 'Ada L.'", branch="w")
    heard = _heard(lambda: shop.call("diff", branch="w", count=True))
    assert heard == [
        ("counting w's changes: tables counted", 0, 2),
        ("counting w's changes: tables counted", 1, 2),
        ("counting w's changes: tables counted", 2, 2),
    ]


def test_a_restore_reports_its_rows_read_and_written(shop):
    before = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    shop.insert("users", [{"name": f"n{i}"} for i in range(progress.EVERY + 10)])
    heard = _heard(lambda: shop.call("restore", branch="main", at=before))
    steps = [(what, done, total) for what, done, total in heard if done == total]
    assert steps == [
        ("restoring main: reading rows as they were", 1010, 1010),
        ("restoring main: writing rows", 1010, 1010),
    ]
    assert shop.query("select count(*) as n from users") == [{"n": 1}]
