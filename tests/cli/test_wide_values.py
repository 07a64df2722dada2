"""Wide values at a terminal (issue 25): a BLOB or a long text is cut in a table and in a diff's
line, with how long the whole is and a note on how to read it; --json keeps every value whole."""

from __future__ import annotations

import json

import pytest
from helpers import run_cli

from chronos_lite import render


@pytest.fixture
def wide(db, folder):
    db.sql("create table f(id integer primary key, name text, data blob, note text)")
    db.sql("insert into f(name, data, note) values ('a', x'00', 'short'), ('b', x'01', 'short')")
    db.fork("w")
    db.sql(
        "update f set data = zeroblob(100000), note = printf('%.3000c', 'x') where id = 1",
        branch="w",
    )
    return folder


def test_a_table_cuts_wide_values_and_says_how_to_read_them(wide):
    out = run_cli(wide, "sql", "-b", "w", "select * from f order by id").stdout
    assert len(out) < 2000
    assert "… (100,000 bytes)" in out and "… (3,000 characters)" in out
    assert out.rstrip().endswith(render.CUT_NOTE.format(n=render.SHOWN_CHARS))
    whole = json.loads(
        run_cli(wide, "sql", "-b", "w", "select * from f order by id", "--json").stdout
    )
    row = whole["results"][0]["rows"][0]
    assert len(row[2]["$blob"]) == 200000 and len(row[3]) == 3000


def test_diff_and_merge_preview_cut_them_too(wide):
    diff = run_cli(wide, "diff", "w").stdout
    assert len(diff) < 1500 and "… (100,000 bytes)" in diff
    preview = run_cli(wide, "merge-preview", "w").stdout
    assert len(preview) < 5000 and render.CUT_NOTE.format(n=render.SHOWN_CHARS) in preview
    data = json.loads(run_cli(wide, "merge-preview", "w", "--json").stdout)
    assert len(data["rows"][0]["ours"]["note"]) == 3000


def test_short_values_are_shown_as_they_are(db):
    text = render.table(["v"], [["x" * render.SHOWN_CHARS], [b"\x00" * 10]])
    assert "…" not in text and text.endswith("(2 rows)")
