"""restore, rollback and the undos put rows back as data (issue 25): the app's triggers don't
fire again, the branch then reads as it was (its diff to then is empty, a second restore writes
nothing), and main's external-content FTS5 index follows the rows put back. And a row's image
before an update is kept before an app's AFTER UPDATE trigger changes the row again."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

import chronos_lite

STAMP = (
    "create trigger stamp after update of body on notes begin "
    "update notes set updated_at = 'stamped ' || new.body, edits = edits + 1 "
    "where id = new.id; end"
)


def moment() -> str:
    """Now, as a local time with microseconds, between two writes."""
    time.sleep(0.01)
    text = datetime.fromtimestamp(time.time()).isoformat(sep=" ")
    time.sleep(0.01)
    return text


@pytest.fixture
def notes(db):
    db.sql(
        "create table notes(id integer primary key, body text, updated_at text, edits int "
        "default 0)"
    )
    db.sql(STAMP)
    db.sql("insert into notes(body) values ('a'), ('b')")
    return db


def rows(db, branch: str = "main") -> list[dict]:
    return db.query("select * from notes order by id", branch=branch)


def test_main_as_of_a_moment_reads_the_row_before_the_apps_trigger_changed_it(notes):
    then, before = moment(), rows(notes)
    notes.sql("update notes set body = 'x' where id = 1")
    assert rows(notes)[0] == {"id": 1, "body": "x", "updated_at": "stamped x", "edits": 1}
    assert rows(notes, f"main@{then}") == before


@pytest.mark.parametrize("branch", ["main", "w"])
def test_a_restore_puts_rows_back_without_firing_the_apps_triggers(notes, branch):
    if branch == "w":
        notes.fork("w")
    then, before = moment(), rows(notes, branch)
    notes.sql("update notes set body = 'x'; delete from notes where id = 2", branch=branch)
    reply = notes.call("restore", branch=branch, at=then)
    assert reply.data["rows"] == 2
    assert rows(notes, branch) == before  # (not stamped again)
    assert notes.call("diff", branch=branch, to=f"{branch}@{then}").data["count"] == 0
    assert notes.call("restore", branch=branch, at=then).data["rows"] == 0  # it converged
    notes.sql("update notes set body = 'y' where id = 1", branch=branch)  # (the trigger is back)
    assert rows(notes, branch)[0]["updated_at"] == "stamped y"


def test_rollback_and_undo_merge_too(notes):
    notes.call("checkpoint", branch="main", name="start")
    before = rows(notes)
    notes.sql("update notes set body = 'x' where id = 1")
    notes.call("rollback", branch="main", checkpoint="start")
    assert rows(notes) == before
    notes.fork("w")
    notes.sql("update notes set body = 'w' where id = 2", branch="w")
    notes.merge("w")
    merged = rows(notes)
    assert merged[1]["body"] == "w"
    notes.call("undo_merge", branch="w")
    assert rows(notes) == before
    assert merged != before


def test_main_s_external_content_fts5_index_follows_a_restore(db):
    """The sqlite-utils way: external content, its index kept by the app's triggers."""
    db.sql(
        "create table docs(id integer primary key, title text);"
        "create virtual table docs_fts using fts5(title, content='docs', content_rowid='id');"
        "create trigger docs_ai after insert on docs begin "
        "insert into docs_fts(rowid, title) values (new.id, new.title); end;"
        "create trigger docs_ad after delete on docs begin "
        "insert into docs_fts(docs_fts, rowid, title) values ('delete', old.id, old.title); end;"
        "create trigger docs_au after update on docs begin "
        "insert into docs_fts(docs_fts, rowid, title) values ('delete', old.id, old.title); "
        "insert into docs_fts(rowid, title) values (new.id, new.title); end;"
        "insert into docs(title) values ('green tea'), ('black coffee')"
    )
    then = moment()
    db.sql("update docs set title = 'red wine' where id = 1; delete from docs where id = 2")
    db.call("restore", branch="main", at=then)
    found = "select rowid from docs_fts where docs_fts match $1 order by rowid"
    assert db.query(found, "green") == [{"rowid": 1}]
    assert db.query(found, "coffee") == [{"rowid": 2}]
    assert db.query(found, "wine") == []
    db.sql("insert into docs_fts(docs_fts) values ('integrity-check')")  # (raises if out of step)


def test_a_file_with_the_old_history_triggers_gets_the_new_ones(notes, folder):
    """A file made before the image was kept BEFORE the update: opened again, its triggers are
    made again at the first call, and the past reads right from then on."""
    conn = notes.database.main.conn
    conn.execute("drop trigger _chronos_t1_ub")  # (as an older chronos made the file)
    notes.close()
    with chronos_lite.open(folder) as again:
        then, before = moment(), rows(again)
        again.sql("update notes set body = 'x' where id = 1")
        assert rows(again, f"main@{then}") == before
        names = again.query("select name from sqlite_schema where name = '_chronos_t1_ub'")
        assert names == [{"name": "_chronos_t1_ub"}]
