"""SQL text helpers: statement splitting and the keyword checks the runner relies on."""

from __future__ import annotations

from chronos_lite import sqltext


def test_split_respects_strings_comments_and_trigger_bodies():
    script = """
        insert into t values ('a;b'); -- a comment; with a semicolon
        create trigger tr after insert on t begin update t set x = 1; delete from u; end;
        /* block; comment */ select "odd;name" from t;
        ;
    """
    parts = sqltext.split_statements(script)
    assert len(parts) == 3
    assert parts[0] == "insert into t values ('a;b')"
    assert parts[1].endswith("delete from u; end")
    assert parts[2].endswith('select "odd;name" from t')
    assert sqltext.split_statements("select 1") == ["select 1"]
    assert sqltext.split_statements(" -- only a comment\n;") == []


def test_keywords_and_classification():
    assert sqltext.keywords("/* x */ with a as (select 1) insert into t select * from a", 2) == [
        "WITH",
        "A",
    ]
    assert not sqltext.may_write("select * from t")
    assert not sqltext.may_write("with a as (select 1) select * from a")
    assert sqltext.may_write("with a as (select 1) delete from t")
    assert sqltext.may_write("pragma user_version = 3")
    assert not sqltext.may_write("pragma schema_version")
    assert sqltext.is_transaction_control("  BEGIN immediate")
    assert sqltext.conflict_mode("insert or ignore into t values (1)") == "ignore"
    assert sqltext.conflict_mode("REPLACE into t values (1)") == "replace"
    assert sqltext.conflict_mode("update or replace t set a = 1") == "replace"
    assert sqltext.conflict_mode("insert into t values ('or replace')") is None
    assert sqltext.conflict_mode("insert or fail into t values (1)") == "fail"
    assert sqltext.conflict_mode("with x as (select 1) insert or rollback into t select 1") == (
        "rollback"
    )
    assert sqltext.conflict_mode("insert into t select replace(a, 'x', 'y') from s") is None
    assert sqltext.statement_tag("create unique index i on t(a)") == "CREATE INDEX"
    assert sqltext.statement_tag("end") == "COMMIT"


def test_returning_and_top_level_parts():
    head, exprs = sqltext.split_returning(
        "insert into t(a) select x from (select 1 as returning_x) returning a, 'returning'"
    )
    assert head == "insert into t(a) select x from (select 1 as returning_x)"
    assert exprs == "a, 'returning'"
    assert sqltext.split_returning("insert into t values ('returning')") is None
    body = "a int, b text default ',', primary key (a, b)"
    assert [body[s:e].strip() for s, e in sqltext.comma_parts(body)] == [
        "a int",
        "b text default ','",
        "primary key (a, b)",
    ]
    assert sqltext.matching_paren("(a, (b), ')') x", 0) == 12


def test_tokens_end_where_sqlite_ends_them():
    """One scan of a text's tokens serves every helper: unterminated strings, names and
    comments run to the end; doubled quotes stay inside; a word takes digits, _ and $."""
    assert sqltext.tokens("select 'it''s', [a b], `c``d`, \"e\"\"f\" from $t2 -- x") == [
        ("select", "word", 0, 6),
        ("it's", "string", 7, 14),
        (",", "punct", 14, 15),
        ("a b", "name", 16, 21),
        (",", "punct", 21, 22),
        ("c`d", "name", 23, 29),
        (",", "punct", 29, 30),
        ('e"f', "name", 31, 37),
        ("from", "word", 38, 42),
        ("$t2", "word", 43, 46),
    ]
    assert sqltext.tokens("select 'open") == [("select", "word", 0, 6), ("ope", "string", 7, 12)]
    assert sqltext.strip_comments("a /* b */ c -- d\ne /* open") == "a   c  e  "
    assert sqltext.name_tokens("x $1 [y]") == [("x", 0, 1), ("1", 3, 4), ("y", 5, 8)]
    words = [w for w, _s, _e in sqltext.top_level_words("²or x(returning) y2z")]
    assert words == ["OR", "X", "Y", "Z"]  # (a word starts at a letter or _)
    assert sqltext.keywords("/*;*/ SEL/**/ECT 1", 2) == ["SEL", "ECT"]


def test_quoting_takes_any_name_literally():
    assert sqltext.quote_ident('we"ird') == '"we""ird"'
    assert sqltext.quote_literal("it's") == "'it''s'"


def test_words_of_any_script():
    from chronos_lite.sqltext import top_level_words

    words = [w for w, _s, _e in top_level_words("insert into café(nom) values (1) returning id")]
    assert words == ["INSERT", "INTO", "CAFÉ", "VALUES", "RETURNING", "ID"]


def test_returning_on_a_world_into_a_table_named_in_another_script(tmp_path):
    import chronos_lite

    with chronos_lite.init(tmp_path / "p") as db:
        db.sql("create table café(id integer primary key, nom text)")
        db.fork("w")
        out = db.sql("insert into café(nom) values ('x') returning id", branch="w")
        assert out.results[0].rows == [(1,)]


def test_a_literal_reads_back_as_the_same_value_and_type():
    import apsw

    from chronos_lite.sqltext import literal

    conn = apsw.Connection(":memory:")
    values = [None, 0, -(2**63), 2**63 - 1, 0.1, 1e300, -0.0, 1e-320, b"\x00\xff", "", "it's",
              "a\x00b", "é\x00", float("inf"), float("-inf")]  # fmt: skip
    for value in values:
        got, kind = conn.execute(f"select {literal(value)}, typeof({literal(value)})").fetchall()[0]
        want, want_kind = conn.execute("select ?, typeof(?)", (value, value)).fetchall()[0]
        assert (got, kind) == (want, want_kind), value
    assert literal(float("nan")) == "NULL"  # (SQLite stores NaN as NULL)


def test_diff_as_sql_replays_a_nul_in_text(tmp_path):
    import chronos_lite

    with chronos_lite.init(tmp_path / "p") as db:
        db.sql("create table t(id integer primary key, v)")
        db.fork("w")
        db.sql("insert into t values (1, $1), (2, $2)", "a\x00b", float("inf"), branch="w")
        script = db.call("diff", branch="w", as_sql=True).text
        db.sql(script)
        assert db.query("select v, typeof(v) from t order by id") == db.query(
            "select v, typeof(v) from t order by id", branch="w"
        )
