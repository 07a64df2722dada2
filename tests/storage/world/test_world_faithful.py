"""A world is a copy: the same statement on main and on a fresh world of the same data gives
the same rows, the same errors and the same side effects (triggers, foreign-key actions), and a
merge then makes main what the statements alone would have made it (issue 13)."""

from __future__ import annotations

import pytest
from differential import same_then_merged

FOREIGN_KEYS = """
create table parent(id integer primary key, code text unique, n int default 7);
create table child(id integer primary key, pid int references parent(id) on delete cascade
    on update cascade, note text);
create table nulled(id integer primary key, pid int references parent(id) on delete set null);
create table defaulted(id integer primary key, pcode text default 'a'
    references parent(code) on delete set default on update set default);
create table held(id integer primary key, pid int references parent(id) on delete restrict);
create table later(id integer primary key, pid int references parent(id)
    deferrable initially deferred);
create table tree(id integer primary key, up int references tree(id) on delete cascade);
"""
FOREIGN_KEY_ROWS = """
insert into parent(id, code) values (1, 'a'), (2, 'b'), (3, 'c');
insert into child(pid, note) values (1, 'x'), (1, 'y'), (2, 'z');
insert into nulled(pid) values (1), (2);
insert into defaulted(pcode) values ('b'), ('c');
insert into held(pid) values (3);
insert into tree(id, up) values (1, null), (2, 1), (3, 2), (4, 1);
"""
FOREIGN_KEY_WRITES = [
    "insert into child(pid) values (99)",
    "insert into child(pid) values (null)",
    "insert into child(pid) values (2)",
    "update child set pid = 42 where pid = 1",
    "delete from parent where id = 1",
    "update parent set id = 20 where id = 2",
    "delete from parent where id = 3",
    "update parent set code = 'bb' where code = 'b'",
    "delete from parent where code = 'c'",
    "delete from tree where id = 1",
    "insert into later(pid) values (50)",
    "begin; insert into later(pid) values (50); insert into parent(id) values (50); commit",
    "begin; insert into later(pid) values (60); commit",
    "insert or replace into parent(id, code) values (1, 'a2')",
    "pragma defer_foreign_keys = on; delete from parent where id = 3",
]

TRIGGERS = """
create table t(id integer primary key, qty integer check (qty >= 0), name text default 'n',
    changed int default 0);
create table log(msg text, at int);
create trigger t_ai after insert on t begin
    insert into log values ('ai ' || new.id || ' ' || new.qty || ' ' || typeof(new.qty), new.rowid);
end;
create trigger t_bi before insert on t when new.qty = 13 begin select raise(ignore); end;
create trigger t_bi2 before insert on t begin insert into log values ('bi ' || new.id, 0); end;
create trigger t_au after update of qty on t begin
    insert into log values ('au ' || old.qty || '>' || new.qty, new.id);
    update t set changed = changed + 1 where id = new.id;
end;
create trigger t_bd before delete on t when old.qty > 100 begin
    select raise(abort, 'too big to delete');
end;
create trigger t_ad after delete on t begin insert into log values ('ad ' || old.id, 0); end;
create trigger t_fail before update of name on t when new.name = 'bad' begin
    select raise(fail, 'bad name');
end;
create view v as select id, qty from t;
create trigger v_ii instead of insert on v begin insert into t(qty) values (new.qty * 2); end;
"""
TRIGGER_ROWS = "insert into t(qty) values (1), (200)"
TRIGGER_WRITES = [
    "insert into t(qty) values (5)",
    "insert into t(qty) values ('6')",
    "insert into t(qty) values (13)",
    "insert into t(qty) values (-1)",
    "insert or ignore into t(qty) values (-1), (8)",
    "update t set qty = qty + 1",
    "update t set name = 'm' where id = 1",
    "update t set name = 'bad'",
    "delete from t where id = 1",
    "delete from t where id = 2",
    "insert into v(qty) values (21)",
    "insert into t(id, qty) values (1, 3)",
    "insert or replace into t(id, qty) values (1, 4)",
    "select * from log",
]

CONFLICTS = """
create table u(id integer primary key, a int unique, b text not null default 'dflt',
    c int unique on conflict ignore, d int not null on conflict replace default 9);
create unique index u_lower on u(lower(b)) where a > 0;
"""
CONFLICT_ROWS = "insert into u(id, a, b, c, d) values (1, 1, 'x', 1, 1), (2, 2, 'y', 2, 2)"
CONFLICT_WRITES = [
    "insert into u(a, b, c) values (1, 'z', 9)",
    "insert or ignore into u(a, b, c) values (1, 'z', 9)",
    "insert or replace into u(a, b, c) values (1, 'z', 9)",
    "insert into u(a, b, c) values (3, 'w', 2)",
    "insert into u(a, b, c, d) values (4, 'v', 4, null)",
    "insert into u(a, b, c) values (5, null, 5)",
    "insert or replace into u(a, b, c) values (6, null, 6)",
    "insert into u(a, b, c) values (7, 'X', 7)",
    "insert into u(a, b, c) values (-7, 'X', 8)",
    "update u set a = 2 where id = 1",
    "update or replace u set a = 2 where id = 1",
    "insert or fail into u(a, b, c) values (10, 'p', 10), (11, 'p', 11)",
    "insert into u(a, b, c) values (12, 'q', 12) on conflict (a) do update set b = 'upd'",
    "insert into u(a, b, c) values (1, 'q', 13) on conflict (a) do update set b = excluded.b",
    "insert into u(a, b, c) values (1, 'r', 14) on conflict do nothing",
]

# a world's INSERT and UPDATE triggers split by the key: given or from the counter, kept or moved
KEYS = """
create table k(id integer primary key, a int unique, b text);
create table r(x int, y int unique);
"""
KEY_ROWS = """
insert into k(id, a, b) values (1, 1, 'p'), (2, 2, 'q'), (3, 3, 'r'), (4, 4, 's');
insert into r(x, y) values (1, 1), (2, 2);
"""
KEY_WRITES = [
    "update k set id = 1.0, b = 'same key' where id = 1",
    "update k set id = '2', b = 'text key' where id = 2",
    "update k set id = id + 10 where id = 3",
    "update k set (id, b) = (20, 'row value') where id = 4",
    "update k set id = 2 where id = 1",
    "update or replace k set id = 2 where id = 1",
    "update k set id = null where id = 2",
    "update k set id = 'abc' where id = 2",
    "insert into k(id, b) values (null, 'explicit null')",
    "insert into k(id, b) values ('7', 'text key')",
    "insert into k(id, b) values (7.0, 'real key')",
    "insert or replace into k(id, b) values (7, 'replaced')",
    "insert into k(b) values ('auto'), ('auto too')",
    "insert into k(a, b) values (1, 'taken a')",
    "insert or replace into k(a, b) values (1, 'a replaced')",
    "update r set y = 5 where x = 1",
    "update r set rowid = rowid + 100 where x = 1",
    "insert into r(rowid, x, y) values (50, 50, 50)",
    "select rowid, * from r",
    "select * from k",
]


@pytest.mark.parametrize(
    "schema, rows, writes",
    [
        (FOREIGN_KEYS, FOREIGN_KEY_ROWS, FOREIGN_KEY_WRITES),
        (TRIGGERS, TRIGGER_ROWS, TRIGGER_WRITES),
        (CONFLICTS, CONFLICT_ROWS, CONFLICT_WRITES),
        (KEYS, KEY_ROWS, KEY_WRITES),
    ],
    ids=["foreign keys", "triggers", "conflicts", "keys"],
)
def test_each_write_does_on_the_world_what_it_does_on_main(tmp_path, schema, rows, writes):
    same_then_merged(tmp_path, schema, rows, writes)
