"""An adopted database's FTS5 tables and other virtual tables on a world: an FTS5 table's MATCH
finds the world's rows (external content kept by the app's triggers, and FTS5 tables with their
own content), merges keep main's index right, describe shows them, and what a world can't
change (a contentless FTS5 table, an rtree) is refused saying why."""

from __future__ import annotations

import pytest

import chronos_lite
from chronos_lite import ChronosError

APP = """
create table docs(id integer primary key, title text, body text);
create virtual table docs_fts using fts5(title, body, content='docs', content_rowid='id');
create trigger docs_ai after insert on docs begin
    insert into docs_fts(rowid, title, body) values (new.id, new.title, new.body);
end;
create trigger docs_ad after delete on docs begin
    insert into docs_fts(docs_fts, rowid, title, body)
        values ('delete', old.id, old.title, old.body);
end;
create trigger docs_au after update on docs begin
    insert into docs_fts(docs_fts, rowid, title, body)
        values ('delete', old.id, old.title, old.body);
    insert into docs_fts(rowid, title, body) values (new.id, new.title, new.body);
end;
create virtual table notes using fts5(title, body);
create virtual table empty_fts using fts5(x, content='');
create virtual table boxes using rtree(id, lo, hi);
insert into docs(title, body) values ('hello', 'world'), ('bye', 'moon');
insert into notes values ('alpha beta', 'one'), ('gamma', 'two');
insert into boxes values (1, 0, 5);
"""


@pytest.fixture
def app(tmp_path):
    with chronos_lite.init(tmp_path / "p") as db:
        db.sql(APP)
        db.fork("w")
        yield db


def ids(db, sql: str, branch: str = "w") -> list:
    return [r[0] for r in db.sql(sql, branch=branch).results[-1].rows]


def test_match_on_a_world_finds_the_world_s_rows(app):
    app.sql(
        "insert into docs(title, body) values ('hello again', 'x'); "
        "update docs set title = 'goodbye' where id = 1",
        branch="w",
    )
    match = "select rowid from docs_fts where docs_fts match ? order by rowid"
    assert ids(app, match.replace("?", "'hello'")) == [3]
    assert ids(app, match.replace("?", "'goodbye'")) == [1]
    assert ids(app, match.replace("?", "'hello'"), "main") == [1]  # main: untouched
    app.sql(
        "insert into notes values ('alpha delta', 'three'); delete from notes where rowid = 2",
        branch="w",
    )
    rows = (
        app.sql(
            "select rowid, highlight(notes, 0, '[', ']') from notes where notes match 'alpha' "
            "order by rank",
            branch="w",
        )
        .results[-1]
        .rows
    )
    assert sorted(rows) == [(1, "[alpha] beta"), (3, "[alpha] delta")]
    assert ids(app, "select rowid from notes where notes match 'gamma'") == []
    assert ids(app, "select rowid from notes where notes match 'gamma'", "main") == [2]


def test_another_connection_sees_the_world_s_rows_in_its_index(app, tmp_path):
    app.sql("insert into docs(title, body) values ('zebra', 'x')", branch="w")
    with chronos_lite.open(tmp_path / "p") as other:
        assert ids(other, "select rowid from docs_fts where docs_fts match 'zebra'") == [3]
        other.sql("insert into docs(title, body) values ('zebra two', 'y')", branch="w")
    assert ids(app, "select rowid from docs_fts where docs_fts match 'zebra'") == [3, 4]


def test_a_merge_keeps_main_s_index_right(app):
    app.sql(
        "insert into docs(title, body) values ('hello again', 'x'); delete from docs where id = 2; "
        "update docs set body = 'planet' where id = 1; insert into notes values ('omega', 'z')",
        branch="w",
    )
    app.merge("w")
    assert ids(app, "select rowid from docs_fts where docs_fts match 'hello'", "main") == [1, 3]
    assert ids(app, "select rowid from docs_fts where docs_fts match 'moon'", "main") == []
    assert ids(app, "select rowid from docs_fts where docs_fts match 'planet'", "main") == [1]
    assert ids(app, "select rowid from notes where notes match 'omega'", "main") == [3]
    for table in ("docs_fts", "notes"):  # (FTS5's own check of its index against its rows)
        app.sql(f"insert into {table}({table}) values ('integrity-check')")


def test_what_a_world_can_t_change_is_refused_saying_why(app):
    for sql, module in (
        ("insert into boxes values (2, 1, 2)", "rtree"),
        ("insert into empty_fts values ('x')", "contentless FTS5"),
    ):
        with pytest.raises(ChronosError, match=module) as exc:
            app.sql(sql, branch="w")
        assert exc.value.code == "42501"
        assert "change it on main" in exc.value.message
    assert ids(app, "select id from boxes where lo < 3") == [1]  # (read as main has it)


def test_describe_shows_views_and_virtual_tables(app):
    app.sql("create view titles as select title from docs")
    text = app.call("describe", branch="w").text
    assert "docs_fts (virtual table, fts5): 2 rows" in text
    assert "boxes (virtual table, rtree): 1 row" in text
    assert "titles (view): 2 rows" in text
    assert "notes: 2 rows" in text  # (an FTS5 table with its own content: versioned rows)
    one = app.call("describe", branch="w", table="titles").data
    assert one["views_and_virtual_tables"][0]["fields"][0]["name"] == "title"


def test_a_damaged_copy_of_a_world_s_index_is_said_so_and_rebuilt(app):
    """A world's TEMP copy of an FTS5 index found damaged is the copy's fault, not the file's
    (issue 23, finding 14: it was "the database file is corrupt, restore it from a backup"):
    the call says so, and the next call finds the copy rebuilt from the world's rows."""
    app.sql("update docs set title = 'hello there' where id = 2", branch="w")
    conn = app.database.session("w").conn  # (the world's connection: its copy of docs_fts, damaged)
    conn.execute("update temp.docs_fts_data set block = randomblob(length(block)) where id > 10")
    match = "select rowid from docs_fts where docs_fts match 'hello' order by rowid"
    with pytest.raises(ChronosError) as exc:
        app.sql(match, branch="w")
    said = exc.value.message
    assert "temporary copy of a full-text index is damaged: docs_fts (on w)" in said, said
    assert "the database file is fine" in said and "restore" not in said, said
    assert ids(app, match) == [1, 2]  # rebuilt from the world's rows
    assert ids(app, match, "main") == [1]
    app.sql("insert into docs_fts(docs_fts) values ('integrity-check')")  # main's: whole


def test_an_fts5_delete_of_values_never_indexed_is_not_called_a_corrupt_file(app):
    bad = (
        "insert into docs_fts(docs_fts, rowid, title, body) values ('delete', 2, 'q r s t', 'u v')"
    )
    for branch in ("main", "w"):
        with pytest.raises(ChronosError) as exc:
            app.sql(bad, branch=branch)
        said = exc.value.message
        assert said.startswith("a full-text index (FTS5) is damaged, or out of step"), said
        assert "must give the values the row was indexed with" in said and "backup" not in said
    assert ids(app, "select rowid from docs_fts where docs_fts match 'bye'", "main") == [2]
    assert ids(app, "select rowid from docs_fts where docs_fts match 'bye'") == [2]
