"""Names keep their identity through the registry and the CLI: any table name SQLite takes
works in every argument that names a table or a row, and every id diff prints names the same
row where ids are read (get, delete, only_keys, rows), whatever the key's values.

The names a person gives and reads later (branches, checkpoints, agents, merge policies and
checks) keep one rule (chronos_lite/names.py): no control, format, bidi or invisible character,
no look-alike of another branch, no leading -, at most 128 characters; and whatever a person
reads in a terminal holds none of those raw, a name an old version let in included.

MCP's run of the same is test_mcp_values.py; the spelling's own rules, test_spelling.py."""

from __future__ import annotations

import json
import sqlite3
import sys
import unicodedata

import pytest
from helpers import run_cli
from mcp_lines import Server, tool_error

from chronos_lite import ChronosError, render

ODD_TABLES = [
    'create table "my table"(id integer primary key, v)',
    'create table "a/b"(k text primary key, v)',
    'create table "a"(k text primary key, v)',
    'create table "it\'s ""quoted"""(x, y text, v, primary key (x, y))',
    'create table "select"(v)',
    'create table " pad "(k primary key, v) without rowid',
    'create table "ü🙂"(id integer primary key, b blob, r real, t text)',
]

# (table, id as a caller writes it, record) written on a world: every kind of key
WRITES = [
    ("my table", "7", {"v": "seven"}),
    ("a/b", "b/7", {"v": 1}),
    ("a", "b/7", {"v": 2}),  # (a/b/7 reads as this row: a is a table)
    ("a", '[""]', {"v": "the empty key"}),
    ("a", '["[x"]', {"v": "a bracket"}),
    ('it\'s "quoted"', "17,3", {"v": "plain"}),
    ('it\'s "quoted"', '["a,b","c d"]', {"v": "comma and space"}),
    ('it\'s "quoted"', '["17","3"]', {"v": "text 17"}),
    ("select", "1", {"v": "a rowid table"}),
    (" pad ", "7", {"v": "integer 7"}),
    (" pad ", '["7"]', {"v": "text 7"}),
    ("ü🙂", "1", {"b": {"$blob": "00ff"}, "r": "Infinity", "t": "Infinity"}),
]


@pytest.fixture
def odd(db):
    for sql in ODD_TABLES:
        db.sql(sql)
    db.sql('insert into "select"(v) values (0); insert into "my table" values (7, \'old\')')
    db.fork("w")
    for table, ident, record in WRITES:
        db.call("put", table=table, id=ident, record=record, branch="w")
    return db


def test_every_id_diff_prints_names_the_same_row_everywhere_ids_are_read(odd):
    diff = odd.call("diff", branch="w", limit=100)
    changes = diff.data["changes"]
    assert len(changes) == len(WRITES)
    lines = diff.text.splitlines()[1:]
    for c in changes:
        line = next(line for line in lines if line[2:].startswith(c["key"] + " "))
        assert line.startswith("~ " if c["kind"] == "update" else "+ "), line
        got = odd.call("get", table=c["table"], id=c["id"], branch="w").data
        assert (got["table"], got["id"], got["row"]) == (c["table"], c["id"], c["ours"])
        one = odd.call("merge_preview", branch="w", only_keys=[c["key"]]).data["rows"]
        assert [(r["table"], r["id"], r["key"]) for r in one] == [(c["table"], c["id"], c["key"])]
        kept = odd.call("merge_preview", branch="w", rows={c["key"]: "theirs"}).data["rows"]
        assert [r["outcome"] for r in kept if r["key"] == c["key"]] == ["theirs"]
    # a key is also what a caller writes by hand: the common spellings
    assert {c["key"] for c in changes} >= {
        "my table/7",
        '"a/b"/b/7',
        "a/b/7",
        'a/[""]',
        'it\'s "quoted"/17,3',
        '" pad "/["7"]',
        "select/1",
    }
    odd.merge("w", only_keys=[c["key"] for c in changes])
    assert odd.diff("w", to="main").changes == []
    # deleting each by the id diff printed: the same rows go
    odd.fork("v")
    for c in changes:
        odd.call("delete", table=c["table"], id=c["id"], branch="v")
    gone = odd.call("diff", branch="v", limit=100).data["changes"]
    assert sorted((c["key"], c["kind"]) for c in gone) == sorted(
        (c["key"], "delete") for c in changes
    )


def test_the_python_api_takes_key_values_and_any_name(odd):
    assert odd.get("a", [""], branch="w") == {"k": "", "v": "the empty key"}
    assert odd.get("a", "", branch="w") == {"k": "", "v": "the empty key"}  # (as before)
    assert odd.get(" pad ", ["7"], branch="w") == {"k": "7", "v": "text 7"}
    assert odd.get(" pad ", 7, branch="w") == {"k": 7, "v": "integer 7"}
    assert odd.get('it\'s "quoted"', ("a,b", "c d"), branch="w")["v"] == "comma and space"
    assert odd.get('it\'s "quoted"', ["17", "3"], branch="w")["v"] == "text 17"
    with pytest.raises(ChronosError, match="'table' must be a non-empty string"):
        odd.get("", 1)


def test_a_merge_with_keys_of_mixed_types_is_ordered_as_sqlite_orders_them(odd):
    odd.put(" pad ", 1.5, {"v": "a real"}, branch="w")
    plan = odd.merge("w")
    pad = [o.change.key for o in plan.outcomes if o.change.table == " pad "]
    assert pad == [(1.5,), (7,), ("7",)]
    assert odd.query('select typeof(k) as kind from " pad " order by k') == [
        {"kind": "real"},
        {"kind": "integer"},
        {"kind": "text"},
    ]


def test_a_blob_key_is_named_by_its_json_spelling(odd):
    odd.put(" pad ", [b"\x00\xff"], {"v": "a blob key"}, branch="w")
    assert odd.get(" pad ", [b"\x00\xff"], branch="w") == {"k": b"\x00\xff", "v": "a blob key"}
    key = '" pad "/[{"$blob":"00ff"}]'
    change = next(
        c for c in odd.call("diff", branch="w", limit=100).data["changes"] if c["key"] == key
    )
    assert change["id"] == '[{"$blob":"00ff"}]'
    assert odd.call("get", table=" pad ", id=change["id"], branch="w").data["row"]["k"] == {
        "$blob": "00ff"
    }
    rows = odd.call("merge_preview", branch="w", only_keys=[key]).data["rows"]
    assert [r["key"] for r in rows] == [key]


def test_a_row_with_a_blob_key_merges(odd):
    odd.put(" pad ", [b"\x00\xff"], {"v": "a blob key"}, branch="w")
    odd.merge("w", only_keys=['" pad "/[{"$blob":"00ff"}]'])
    assert odd.get(" pad ", [b"\x00\xff"]) == {"k": b"\x00\xff", "v": "a blob key"}
    odd.call("undo_merge", branch="w")
    assert odd.get(" pad ", [b"\x00\xff"]) is None


def test_diff_as_sql_replays_blobs_big_integers_and_odd_names_to_the_same_bytes(odd):
    odd.sql(
        "insert into \"ü🙂\" values (2, x'0001ff', -9e999, 'a''b'), "
        "(3, randomblob(4), 1e-300, char(0, 10, 39))",
        branch="w",
    )
    odd.sql('update "my table" set v = 9223372036854775807 where id = 7', branch="w")
    script = odd.call("diff", branch="w", as_sql=True, limit=100).text
    odd.sql(script)  # (on main, the branch's base: a world has no rowid to replay "select"'s)
    assert odd.diff("w", to="main").changes == []
    look = 'select id, hex(b), typeof(b), r, hex(t) from "ü🙂" order by id'
    assert odd.query(look) == odd.query(look, branch="w")


def test_the_command_line_round_trips_names_and_ids(odd):
    folder = odd.folder
    odd.close()
    out = run_cli(folder, "get", "-b", "w", "ü🙂", "1", "--json").stdout
    row = json.loads(out)["row"]
    assert row == {"id": 1, "b": {"$blob": "00ff"}, "r": "Infinity", "t": "Infinity"}
    run_cli(folder, "put", "-b", "w", "ü🙂", "2", json.dumps(row | {"id": 2}))
    out = run_cli(folder, "sql", "-b", "w", 'select b, typeof(b), r, t from "ü🙂"', "--json")
    assert (
        json.loads(out.stdout)["results"][0]["rows"]
        == [[{"$blob": "00ff"}, "blob", "Infinity", "Infinity"]] * 2
    )
    big = run_cli(folder, "put", "my table", "9", '{"v": 9007199254740993}').stdout
    assert big.strip() == "created my table/9 on main"
    data = json.loads(run_cli(folder, "get", "my table", "9", "--json").stdout)
    assert data["row"]["v"] == 9007199254740993
    data = json.loads(
        run_cli(folder, "sql", 'select v from "my table" where id = 9', "--json").stdout
    )
    assert data["results"][0]["rows"] == [[9007199254740993]]
    diff = json.loads(run_cli(folder, "diff", "w", "--json", "--limit", "100").stdout)
    keys = {c["key"] for c in diff["changes"]}
    text = run_cli(folder, "diff", "w", "--limit", "100").stdout
    assert all(f" {key} " in text for key in keys)
    # a composite key with a comma is one --only-keys value; --rows takes the key as printed
    preview = run_cli(folder, "merge-preview", "w", "--only-keys", 'it\'s "quoted"/17,3', "--json")
    assert [r["id"] for r in json.loads(preview.stdout)["rows"]] == ["17,3"]
    rows = json.dumps({'" pad "/["7"]': "theirs", '"a/b"/b/7': {"v": {"$blob": "ab"}}})
    run_cli(folder, "merge", "w", "--rows", rows)
    out = run_cli(folder, "sql", 'select v from "a/b"; select k from " pad "', "--json").stdout
    got = [r["rows"] for r in json.loads(out)["results"]]
    assert got == [[[{"$blob": "ab"}]], [[7]]]  # (the text "7" stayed out: theirs)
    gone = run_cli(folder, "delete", " pad ", "[7]").stdout
    assert gone.strip() == 'deleted " pad "/7 on main'


def test_a_key_holding_a_nul_is_spelled_with_its_json_escape(db):
    db.sql("create table t(k text primary key, v)")
    db.sql("insert into t values (char(97, 0, 98), 1)")
    db.fork("w")
    db.sql("update t set v = 2", branch="w")
    change = db.call("diff", branch="w").data["changes"][0]
    assert (change["key"], change["id"]) == ('t/["a\\u0000b"]', '["a\\u0000b"]')
    assert db.call("get", table="t", id=change["id"]).data["row"] == {"k": "a\x00b", "v": 1}
    assert db.get("t", ["a\x00b"]) == {"k": "a\x00b", "v": 1}
    with pytest.raises(ChronosError, match=r'write the id as a JSON array .* \["a\\u0000b"\]'):
        db.get("t", "a\x00b")
    db.merge("w", only_keys=[change["key"]])
    assert db.get("t", ["a\x00b"]) == {"k": "a\x00b", "v": 2}


# --- the names a person reads -------------------------------------------------------------

BAD_BRANCH_NAMES = {
    "an escape sequence": ("e\x1b[31mred", "U+001B at character 2"),
    "backspaces": ("bs\b\b\bmain", "U+0008 at character 3"),
    "a zero-width space": ("ta\u200bsk", "U+200B ZERO WIDTH SPACE"),
    "a bidi override": ("task\u202egnp.exe", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "a bidi isolate": ("task\u2066x", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    "an invisible letter": ("task\u3164", "U+3164 HANGUL FILLER"),
    "a Cyrillic а among Latin letters": ("m\u0430in", "U+0430 CYRILLIC SMALL LETTER A"),
    "a leading -": ("-rf", "starts with '-'"),
    "a leading .": (".hidden", "starts with '.'"),
    "//": ("a//b", "holds '//'"),
    "a decomposed accent (not NFC)": ("cafe\u0301", "isn't in NFC form"),
    "5,000 characters": ("x" * 5000, "is 5,000 characters, more than 128"),
    "a newline at the end": ("task\n", "without spaces"),  # (the registry's own check)
}
UNSEEN = ("\x1b", "\b", "\u200b", "\u202e", "\u2066")


def _worlds_in_file(folder) -> list[str]:
    conn = sqlite3.connect(folder / "chronos.db")
    try:
        return [r[0] for r in conn.execute("select name from _chronos_worlds")]
    finally:
        conn.close()


def _raw(text: str) -> list[str]:
    return [c for c in UNSEEN if c in text]


def test_bad_branch_names_are_refused_by_the_cli_and_mcp_and_nothing_is_made(db, folder):
    for name, said in BAD_BRANCH_NAMES.values():
        out = run_cli(folder, "fork", f"--name={name}", check=False)
        assert out.returncode == 1 and said in out.stderr, (name, out.stderr)
        assert _raw(out.stderr) == [], out.stderr
    s = Server(folder)
    try:
        s.initialize()
        for name, said in BAD_BRANCH_NAMES.values():
            text = tool_error(s.call("fork", {"name": name}))
            assert said in text, (name, text)
    finally:
        s.kill()
    assert _worlds_in_file(folder) == [] and db.database.worlds() == []


def test_a_name_is_at_most_128_characters(db):
    with pytest.raises(ChronosError, match="is 129 characters, more than 128"):
        db.fork("x" * 129)
    assert db.database.worlds() == []
    assert db.fork("x" * 128).name == "x" * 128
    for name in ("task-1", "feature/x.2", "задача", "δοκιμή", "日本語のタスク", "café", "v1:rc"):
        assert db.fork(name).name == name


def test_a_lookalike_of_main_or_of_a_branch_is_refused(db, folder):
    db.fork("cop")
    for name, like in (
        ("Main", "main"),
        ("\uff4d\uff41\uff49\uff4e", "main"),  # fullwidth main
        ("\u0441\u043e\u0440", "cop"),  # Cyrillic с о р: drawn as cop
        ("COP", "cop"),
    ):
        with pytest.raises(ChronosError, match=f"reads like the branch '{like}'") as err:
            db.fork(name)
        assert err.value.code == "55006"
        out = run_cli(folder, "fork", name, check=False)
        assert f"reads like the branch '{like}'" in out.stderr, out.stderr
    assert [w.name for w in db.database.worlds()] == ["cop"]
    db.discard("cop")
    assert db.fork("COP").name == "COP"  # (a name is free again once its branch is gone)


@pytest.mark.parametrize("name", ["bot\x1b[2J", "bot\n", "-bot", "b\u202eot"])
def test_an_agent_policy_check_or_checkpoint_name_keeps_the_rule(db, name):
    calls = {
        "agent": dict(action="create", name=name, rights=["read"]),
        "set_merge_policy": dict(name=name, rules={"max_rows": 5}),
        "set_merge_check": dict(name=name, query="select 1 where 0"),
        "checkpoint": dict(name=name, branch="main"),
    }
    for op, args in calls.items():
        with pytest.raises(ChronosError) as err:
            db.call(op, **args)
        assert err.value.code == "22023", (op, err.value.message)
        assert "\x1b" not in err.value.message or "a control" in err.value.message
    assert db.call("agent", action="list").data["agents"] == []
    assert db.call("merge_policies").data["policies"] == []
    assert db.call("merge_checks").data["checks"] == []
    assert db.database.main.conn.execute(
        "select count(*) from _chronos_checkpoints"
    ).fetchall() == [(0,)]


def test_what_a_person_reads_escapes_a_name_an_old_version_let_in(db, folder):
    db.fork("task-1")
    evil, owner = "\x1b[31mred\b\b\u202egnp", "bot\x1b]0;owned\x07"
    meta = json.dumps({"note": "\x1b[2J\u202e", "\u200bkey": 1}, ensure_ascii=False)
    conn = sqlite3.connect(folder / "chronos.db")
    with conn:  # (as an old version wrote it: no rule then)
        conn.execute(
            "insert into _chronos_worlds(wid, name, parent, base, fork_seq, owner, meta, created) "
            "select 'w00000000000000ff', ?, parent, base, fork_seq, ?, ?, created "
            "from _chronos_worlds where name = 'task-1'",
            (evil, owner, meta),
        )
    conn.close()
    text = run_cli(folder, "branches").stdout
    assert _raw(text) == [] and "\x07" not in text, text
    assert "\\x1b[31mred\\x08\\x08\\u202egnp" in text and "bot\\x1b]0;owned\\x07" in text
    header, _line, _main, _task, row = text.splitlines()[:5]
    bars = [[i for i, c in enumerate(line) if c == "|"] for line in (header, row)]
    assert bars[0] == bars[1], text  # (the table stays aligned: the escapes are counted)
    data = run_cli(folder, "branches", "--json").stdout
    assert _raw(data) == [], data  # JSON's escapes: the data exact
    (mine,) = [b for b in json.loads(data)["branches"] if b.get("world_id") == "w00000000000000ff"]
    assert (mine["name"], mine["owner"], mine["meta"]) == (evil, owner, json.loads(meta))
    # a message naming it, and the shell's output
    said = run_cli(folder, "diff", evil, check=False)
    assert _raw(said.stderr + said.stdout) == [] and "red" in said.stderr + said.stdout
    shell = run_cli(folder, "-X", stdin="SHOW WORLDS;\n")
    assert _raw(shell.stdout + shell.stderr) == [] and "\\u202egnp" in shell.stdout
    shell = run_cli(folder, "-X", "--json", stdin="SHOW WORLDS;\n")
    assert _raw(shell.stdout) == [], shell.stdout
    (shown,) = [json.loads(line) for line in shell.stdout.splitlines()]
    assert evil in [b["name"] for b in shown["branches"]], shown


def test_a_value_with_control_characters_prints_escaped_and_reads_back_exact(db, folder):
    db.sql("create table notes(id integer primary key, body text)")
    body = "ok\x1b[2J\rover\u202e\ttab\nline"
    db.put("notes", 1, {"body": body})
    text = run_cli(folder, "sql", "select body from notes").stdout
    assert _raw(text) == [] and "\r" not in text, text
    assert "ok\\x1b[2J\\x0dover\\u202e\ttab" in text  # (tabs and newlines stay)
    data = json.loads(run_cli(folder, "get", "notes", "1", "--json").stdout)
    assert data["row"]["body"] == body
    csv = run_cli(folder, "-X", "--csv", "-c", "select body from notes").stdout
    assert "\x1b" in csv  # CSV is data: every character of the value


def test_the_escaped_characters_are_unicodes_control_and_format_characters():
    unseen = [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp") and chr(c) not in "\n\t"
    ]
    assert [c for c in unseen if render.terminal(c) == c] == []
    assert all(render.terminal(c).isascii() for c in unseen)
    kept = "plain ünïcödé 日本 👩‍ \n\t עברית"
    assert render.terminal(kept.replace("\u200d", "")) == kept.replace("\u200d", "")
