"""A world against main under random app schemas: generated columns (virtual and stored), a
column with a collation, a WITHOUT ROWID table keyed by two columns, CHECK constraints, an app
trigger, an external-content FTS5 index kept by triggers the sqlite-utils way; random writes and
reads (joins under ORDER BY, GROUP BY and DISTINCT, aggregates, MATCH) answer on a world exactly
as on main, in order where the query orders, and a merge then leaves main as the writes alone
would have. (conftest runs it with the world's tables copied whole, and read apart.)"""

from __future__ import annotations

import tempfile
from pathlib import Path

from differential import WORLD, Twin, dump
from hypothesis import given
from hypothesis import strategies as st
from strategies import example_settings, examples_from

from chronos_lite import ChronosError

RUNS = example_settings(examples_from("CHRONOS_PROPERTY_EXAMPLES", 25))
WORDS = ["tea", "green", "coffee", "Jasmine", "black", "oolong"]
FTS = """
create virtual table a_fts using fts5(name, content='a');
create trigger a_fts_ai after insert on a begin
    insert into a_fts(rowid, name) values (new.rowid, new.name);
end;
create trigger a_fts_ad after delete on a begin
    insert into a_fts(a_fts, rowid, name) values ('delete', old.rowid, old.name);
end;
create trigger a_fts_au after update on a begin
    insert into a_fts(a_fts, rowid, name) values ('delete', old.rowid, old.name);
    insert into a_fts(rowid, name) values (new.rowid, new.name);
end;
"""


@st.composite
def apps(draw) -> tuple[str, str, bool]:
    """The schema, its rows, and whether it has the FTS5 index."""
    generated = draw(st.sampled_from(["", " virtual", " stored"]))
    total = f", total real generated always as (price * 2){generated}" if generated else ""
    rowid = draw(st.sampled_from(["", " without rowid"]))
    check = draw(st.sampled_from(["", " check (qty > 0)"]))
    parts = [
        f"create table a(id integer primary key, cat int, price real, "
        f"name text collate nocase{total});",
        f"create table b(k1 text not null, k2 int not null, a_id int, qty int{check}, "
        f"primary key (k1, k2)){rowid};",
    ]
    if draw(st.booleans()):
        parts.append("create index a_cat on a(cat); create index b_a on b(a_id);")
    if draw(st.booleans()):
        parts.append(
            "create trigger b_ai after insert on b begin "
            "update a set price = price + 1 where id = new.a_id; end;"
        )
    fts = draw(st.booleans())
    names = [f"{WORDS[i % 6]} {WORDS[(i * 5 + 1) % 6]}" for i in range(6)]
    rows = "insert into a(cat, price, name) values " + ", ".join(
        f"({i % 3}, {i + 0.5}, '{name}')" for i, name in enumerate(names)
    )
    rows += ";insert into b values " + ", ".join(
        f"('{'xy'[i % 2]}', {i}, {i % 6 + 1}, {i + 1})" for i in range(8)
    )
    if fts:
        parts.append(FTS)
        rows += ";insert into a_fts(a_fts) values ('rebuild')"
    return "\n".join(parts), rows, fts


number = st.sampled_from(["0", "1", "2", "3", "5", "-1", "null", "2.5"])
a_id = st.sampled_from(["1", "2", "3", "6", "7", "9"])
word = st.sampled_from(WORDS)


@st.composite
def writes(draw) -> str:
    kind = draw(
        st.sampled_from(["insert a", "update a", "delete a", "insert b", "update b", "del b"])
    )
    if kind == "insert a":
        return (
            f"insert into a(cat, price, name) values "
            f"({draw(number)}, {draw(number)}, '{draw(word)} {draw(word)}')"
        )
    if kind == "update a":
        column = draw(st.sampled_from(["price", "cat", "name"]))
        value = f"'{draw(word)}'" if column == "name" else draw(number)
        return f"update a set {column} = {value} where id = {draw(a_id)}"
    if kind == "delete a":
        return f"delete from a where id = {draw(a_id)}"
    if kind == "insert b":
        return (
            f"insert or replace into b values "
            f"('{draw(st.sampled_from('xyz'))}', {draw(st.integers(0, 9))}, {draw(a_id)}, "
            f"{draw(number)})"
        )
    if kind == "update b":
        return f"update b set qty = {draw(number)} where a_id = {draw(a_id)}"
    return f"delete from b where k2 = {draw(st.integers(0, 9))}"


READS = [
    "select a.id, a.name, sum(b.qty) from a join b on b.a_id = a.id group by a.id order by a.id",
    "select distinct a.cat from a join b on b.a_id = a.id order by 1",
    "select b.k1, b.k2, a.price from b join a on a.id = b.a_id where b.k2 < 5 order by b.k1, b.k2",
    "select count(*), sum(price), max(name) from a",
    "select name, id from a order by name, id",
    "select cat, count(*), group_concat(id) from (select * from a order by id) group by cat "
    "order by cat",
    "select k1, count(*) from b group by k1 order by k1",
    "select id, name from a where name = 'TEA GREEN' order by id",
]
TOTALS = "select id, total from a order by id"
MATCHES = "select rowid, name from a_fts where a_fts match '{}' order by rowid"


def _ordered(db, sql: str, branch: str) -> tuple:
    """A read's rows in the order it gives them, or its error."""
    try:
        return ("ok", list(db.sql(sql, branch=branch).results[-1].rows))
    except ChronosError as exc:
        return ("error", exc.code)


@RUNS
@given(apps(), st.lists(st.one_of(writes(), st.sampled_from(READS)), min_size=1, max_size=10))
def test_a_world_answers_as_main_under_random_schemas_and_merges_as_them(app, statements):
    schema, rows, fts = app
    with tempfile.TemporaryDirectory() as folder:
        twin = Twin(Path(folder), schema, rows)
        try:
            reads = [*READS, *([TOTALS] if "total" in schema else [])]
            reads += [MATCHES.format(w) for w in WORDS[:3]] if fts else []
            for sql in statements:
                if sql in READS:
                    on_main = _ordered(twin.main, sql, "main")
                    assert _ordered(twin.other, sql, WORLD) == on_main, sql
                else:
                    twin.same(sql)
            for sql in reads:
                on_main = _ordered(twin.main, sql, "main")
                assert _ordered(twin.other, sql, WORLD) == on_main, sql
            twin.other.merge(WORLD)
            assert dump(twin.other, "main") == dump(twin.main, "main")
            for sql in reads:
                assert _ordered(twin.other, sql, "main") == _ordered(twin.main, sql, "main"), sql
        finally:
            twin.close()
