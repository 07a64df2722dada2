"""The sql operation: statements, parameters, transactions, results and errors."""

from __future__ import annotations

import pytest

from chronos_lite import ChronosError


def count(db, branch="main"):
    return db.query("select count(*) as c from users", branch=branch)[0]["c"]


@pytest.mark.parametrize("branch", ["main", "w"])
def test_failure_rolls_back_the_whole_call_and_names_the_statement(shop, branch):
    shop.fork("w")
    with pytest.raises(ChronosError) as err:
        shop.sql(
            "insert into users(name, email) values ('B', 'b@x');"
            "update users set name = 'zzz';"
            "insert into users(name, email) values ('C', 'ada@x.org')",
            branch=branch,
        )
    assert err.value.message.startswith(
        "statement 3 of 3 failed (nothing was changed): UNIQUE constraint failed: users.email"
    )
    assert err.value.code == "23505"
    assert count(shop, branch) == 1
    assert shop.get("users", 1, branch=branch)["name"] == "Ada"


def test_params_bind_dollar_numbers(shop):
    out = shop.sql(
        "insert into users(name, email) values ($1, $2); "
        "select name, email from users where name = $1",
        "Bo",
        "bo@x",
    )
    assert out.results[1].rows == [("Bo", "bo@x")]
    rows = shop.query("select $1 as a, $2 as b", {"k": [1]}, True)
    assert rows == [{"a": '{"k": [1]}', "b": 1}]
    with pytest.raises(
        ChronosError,
        match=r"uses the parameter \$2 \(or \?2, or the 2nd \?\) but 'params' has no value",
    ):
        shop.sql("select $1, $2", 1)


def test_explicit_transactions_within_one_call(shop):
    shop.fork("w")
    out = shop.sql("begin; insert into users(name, email) values ('T', 't@x'); commit", branch="w")
    assert [r.tag for r in out.results] == ["BEGIN", "INSERT 0 1", "COMMIT"]
    out = shop.sql("begin; insert into users(name, email) values ('U', 'u@x'); rollback")
    assert count(shop) == 1
    out = shop.sql("begin; insert into users(name, email) values ('V', 'v@x')")
    assert out.rolled_back_open
    assert count(shop) == 1
    reply = shop.call("sql", sql="begin; delete from users")
    assert reply.text.endswith("put COMMIT in the same call")
    assert count(shop) == 1


def test_results_render_as_psql_tables_and_tags(shop):
    reply = shop.call(
        "sql",
        sql="select id, name, null as empty, 1.5 as f from users; "
        "update users set name = name where id = 1; "
        "delete from users where id = 99",
    )
    assert reply.text == (
        " id | name | empty | f\n"
        "----+------+-------+-----\n"
        "  1 | Ada  |       | 1.5\n"
        "(1 row)\n"
        "UPDATE 1\n"
        "DELETE 0"
    )
    assert reply.data["results"][0]["rows"] == [[1, "Ada", None, 1.5]]
    assert shop.call("sql", sql="select 1 as x where 0").text == " x\n---\n(0 rows)"


def test_errors_are_clear(shop):
    with pytest.raises(ChronosError, match=r"no such table: nope \(tables on main: users\)"):
        shop.sql("select * from nope")
    with pytest.raises(ChronosError, match="holds no statement"):
        shop.sql("  -- nothing\n ; ")
    with pytest.raises(ChronosError, match="syntax error"):
        shop.sql("selec 1")
    shop.sql("create table t2(id integer primary key, v)")
    shop.sql("create trigger t2_t after insert on t2 begin select 1; end")  # (emulated: trigger)
    shop.fork("w")
    # a native copy (world.native): SQLite's own error, as on main; an emulated one: chronos'
    with pytest.raises(ChronosError, match='near "something": syntax error'):
        shop.sql(
            "insert into users(id, name) values (1, 'x') on conflict(id) do something", branch="w"
        )
    with pytest.raises(ChronosError, match="expected ON CONFLICT"):
        shop.sql("insert into t2(id, v) values (1, 'x') on conflict(id) do something", branch="w")


def test_chronos_own_tables_are_readable(shop):
    rows = shop.query("select name from _chronos_tables")
    assert rows == [{"name": "users"}]


def test_writes_to_main_are_versioned_in_history(shop):
    shop.sql("update users set name = 'Ada2' where id = 1")
    images = shop.database.main.conn.execute(
        "select _chronos_op, name from _chronos_h_1 order by _chronos_seq"
    ).fetchall()
    assert images == [(0, None), (1, "Ada")]


@pytest.mark.parametrize("branch", ["main", "w"])
def test_chronos_own_tables_cannot_be_changed_with_sql(shop, branch):
    shop.fork("w")
    for stmt in (
        "delete from _chronos_worlds",
        "update _chronos_clock set seq = 0",
        "drop table _chronos_h_1",
        "alter table _chronos_o_1 add column x",
    ):
        with pytest.raises(ChronosError, match="chronos' own tables|runs on main") as err:
            shop.sql(stmt, branch=branch)
        assert err.value.code == "42501"
    assert [w.name for w in shop.database.worlds()] == ["w"]
    shop.sql("update users set name = 'still works' where id = 1", branch=branch)


def test_returning_on_a_world_moves_the_version_and_reads_dont(shop):
    shop.fork("w")
    out = shop.sql("update users set name = 'X' where id = 1 returning id, name", branch="w")
    assert out.results[0].rows == [(1, "X")]
    shop.sql("select * from users", branch="w")
    out = shop.sql("delete from users where id = 1 returning name", branch="w")
    assert out.results[0].rows == [("X",)]
    assert shop.database.world("w").version == 2


def test_a_world_cannot_write_mains_tables_by_qualified_name(shop):
    shop.fork("w")
    for stmt in (
        "update main.users set name = 'X'",
        "insert into main.users(name) values ('X')",
        "delete from main.users",
        "begin; update main.users set name = 'X'; commit",
    ):
        with pytest.raises(ChronosError, match="main.users is main's table") as err:
            shop.sql(stmt, branch="w")
        assert err.value.code == "42501"
    assert shop.query("select name from users") == [{"name": "Ada"}]
    assert shop.query("select name from main.users", branch="w") == [{"name": "Ada"}]


@pytest.mark.parametrize("branch", ["main", "w"])
def test_a_call_whose_own_transaction_rolls_back_records_nothing(shop, branch):
    shop.fork("w")
    before = shop.call("history", branch=branch).data["events"]
    version = shop.database.world("w").version
    sql = "begin; insert into users(name) values ('x'); select count(*) from users; rollback"
    assert shop.sql(sql, branch=branch).results[-1].tag == "ROLLBACK"
    assert shop.call("history", branch=branch).data["events"] == before
    assert shop.database.world("w").version == version
    shop.sql("begin; insert into users(name) values ('y'); commit", branch=branch)
    event = shop.call("history", branch=branch).data["events"][0]
    assert (event["event"], event["rows"]) == ("write", 1)  # BEGIN and COMMIT write no rows
    assert event["detail"]["sql"].startswith("insert into users")


def test_an_unnamed_column_is_named_by_its_expression_alone(shop):
    result = shop.sql("select 1, 2 + 3").results[0]
    assert result.columns == ["1", "2 + 3"]


def test_no_such_column_lists_the_columns_on_main_and_in_a_world(shop):
    """As "no such table" lists the tables: the same words from main's path and a world's
    (whose ALTER TABLE is chronos' own)."""
    shop.fork("w")
    for branch in ("main", "w"):
        with pytest.raises(ChronosError) as err:
            shop.sql("select nme from users", branch=branch)
        assert err.value.message == "no such column: nme (columns of users: id, name, email)"
        with pytest.raises(ChronosError) as err:
            shop.sql("alter table users rename column nme to x", branch=branch)
        assert err.value.message == 'no such column: "nme" (columns of users: id, name, email)'


def test_an_unquoted_moment_says_as_of_takes_a_string(shop):
    shop.fork("w")
    for branch in ("main", "w"):
        with pytest.raises(ChronosError) as err:
            shop.sql("select * from users AS OF now", branch=branch)
        assert err.value.message == (
            'near "now": syntax error '
            "(AS OF takes its moment as a string: AS OF 'now', AS OF '-1 hour')"
        )
    with pytest.raises(ChronosError) as err:  # another syntax error: nothing added
        shop.sql("select * fro users")
    assert "AS OF" not in err.value.message
