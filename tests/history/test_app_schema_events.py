"""A schema change another client made to main (the sqlite3 shell, ``sqlite-utils transform``)
is in main's history as an event of its own, by ``app``, naming the tables (issue 25); chronos'
own schema changes are told once, as theirs."""

from __future__ import annotations

import sqlite3

import chronos_lite


def _schema_events(db) -> list[dict]:
    return [e for e in db.call("history", branch="main").data["events"] if e["event"] == "schema"]


def test_another_clients_schema_change_is_an_event_of_main(shop, folder):
    shop.sql("create table tags(name text)")  # (chronos' own: its call's event)
    assert [e["by"] for e in _schema_events(shop)] == ["owner", "owner"]  # (and users')
    app = sqlite3.connect(folder / "chronos.db")
    app.executescript(
        "alter table users add column plan text;"  # (a change of users' CREATE statement)
        "create table notes(id integer primary key, body text);"
        "begin; create table users_new(id integer primary key autoincrement, name text, "
        "email text unique, plan text); insert into users_new select * from users; "
        "drop table users; alter table users_new rename to users; commit;"
    )
    app.close()
    with chronos_lite.open(folder) as again:
        again.sql("select 1")
        found = _schema_events(again)
        assert [e["by"] for e in found] == ["app", "owner", "owner"]
        assert found[0]["detail"] == {"table": "notes, users", "directly": True}
        text = again.call("history", branch="main").text
        assert "notes, users: schema changed directly, not through chronos" in text
        again.sql("select 1")  # (followed once: no second event)
        assert len(_schema_events(again)) == 3
