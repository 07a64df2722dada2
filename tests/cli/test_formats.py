"""The command line's output formats (--format, --json, --csv), stdin as `-`, and tables
aligned by display width, through the real `chronos` command."""

from __future__ import annotations

import csv
import io
import json

import pytest
from helpers import run_cli

from chronos_lite import render, rowformats


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    shop = tmp_path_factory.mktemp("formats") / "shop"
    run_cli("init", shop)
    run_cli(shop, "sql", "create table items(id integer primary key, name text, price real)")
    run_cli(shop, "sql", "insert into items values (1, 'pen, blue', 1.5), (2, 'a|b', null)")
    run_cli(shop, "fork", "w")
    run_cli(shop, "sql", "-b", "w", "update items set price = 2 where id = 1")
    return shop


def test_csv_and_tsv_read_back_as_the_rows(shop):
    out = run_cli(shop, "sql", "select * from items order by id", "--format", "csv").stdout
    assert list(csv.reader(io.StringIO(out))) == [
        ["id", "name", "price"],
        ["1", "pen, blue", "1.5"],
        ["2", "a|b", ""],
    ]
    assert run_cli(shop, "sql", "select * from items order by id", "--csv").stdout == out
    out = run_cli(shop, "sql", "select id, name from items order by id", "--format", "tsv").stdout
    assert out == "id\tname\n1\tpen, blue\n2\ta|b\n"


def test_ndjson_and_markdown(shop):
    out = run_cli(shop, "sql", "select * from items order by id", "--format", "ndjson").stdout
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": 1, "name": "pen, blue", "price": 1.5},
        {"id": 2, "name": "a|b", "price": None},
    ]
    out = run_cli(shop, "sql", "select * from items order by id", "--format", "markdown").stdout
    assert out.splitlines() == [
        "| id | name | price |",
        "| --- | --- | --- |",
        "| 1 | pen, blue | 1.5 |",
        "| 2 | a\\|b |  |",
    ]


def test_every_operation_that_prints_rows_formats_them(shop):
    branches = run_cli(shop, "branches", "--format", "csv").stdout.splitlines()
    assert branches[0].startswith("name,") and branches[1].startswith("main,")
    assert branches[2].startswith("w,")
    row = run_cli(shop, "get", "items", "1", "-b", "w", "--format", "ndjson").stdout
    assert json.loads(row) == {"id": 1, "name": "pen, blue", "price": 2.0}
    changes = list(csv.DictReader(io.StringIO(run_cli(shop, "diff", "w", "--csv").stdout)))
    assert [(c["key"], c["kind"], json.loads(c["fields"])) for c in changes] == [
        ("items/1", "update", ["price"])
    ]
    # a reply without a list of rows is one record
    described = run_cli(shop, "fork", "w2", "--format", "csv").stdout.splitlines()
    assert described[0].split(",")[0] == "name" and described[1].startswith("w2,")


def test_format_json_is_json_and_a_bad_format_names_the_choices(shop):
    data = json.loads(run_cli(shop, "sql", "select 1 as a", "--format", "json").stdout)
    assert data["results"][0]["rows"] == [[1]]
    bad = run_cli(shop, "sql", "select 1", "--format", "xml", check=False)
    assert bad.returncode != 0
    assert "choose from 'table', 'csv', 'tsv', 'json', 'ndjson', 'markdown'" in bad.stderr
    both = run_cli(shop, "sql", "select 1", "--json", "--csv", check=False)
    assert both.returncode != 0 and "not allowed with" in both.stderr


def test_insert_reads_stdin_as_dash(shop):
    out = run_cli(shop, "insert", "people", "-", "--pk", "id", stdin="id,name\n1,ann\n2,bob\n")
    assert "created table people" in out.stdout and "inserted 2 rows" in out.stdout
    rows = '{"id": 3, "name": "cy"}\n{"id": 4, "name": "di"}\n'
    assert "inserted 2 rows" in run_cli(shop, "insert", "people", "-", stdin=rows).stdout
    broken = run_cli(shop, "insert", "people", "-", stdin='{"id": 5', check=False)
    assert broken.returncode == 1 and "stdin isn't valid JSON" in broken.stderr
    out = run_cli(shop, "sql", "select count(*) from people", "--csv").stdout
    assert out == "count(*)\n4\n"


def test_a_script_reads_stdin_as_dash_and_takes_format(shop):
    out = run_cli(shop, "-f", "-", "--format", "csv", stdin="select 7 as x;")
    assert out.stdout == "x\n7\n"
    # every format of the operations (table: the shell's aligned one)
    out = run_cli(shop, "-c", "select 7 as x", "--format", "markdown")
    assert out.stdout == "| x |\n| --- |\n| 7 |\n"
    out = run_cli(shop, "-c", "select 7 as x, 8 as y", "--format", "ndjson")
    assert out.stdout == '{"x": 7, "y": 8}\n'


def test_wide_characters_align_by_display_width():
    text = render.table(["city", "n"], [["東京", 1], ["Paris", 22], ["e\u0301", 3]])
    lines = text.splitlines()
    # every line's | at the same terminal column: 東京 takes four, é (e + accent) one
    assert {render.width(line.split("|")[0]) for line in lines[:1] + lines[2:5]} == {7}
    assert lines[2] == " 東京  |  1"


def test_rowformats_find_rows_in_every_shape():
    assert rowformats.tables_in({"results": [{"columns": ["a"], "rows": [[1]]}]}) == [
        (["a"], [[1]])
    ]
    assert rowformats.tables_in({"row": {"a": 1, "b": None}}) == [(["a", "b"], [[1, None]])]
    assert rowformats.tables_in({"events": [{"a": 1}, {"b": 2}]}) == [
        (["a", "b"], [[1, None], [None, 2]])
    ]
    assert rowformats.tables_in({"name": "w", "notes": [1]}) == [(["name"], [["w"]])]


def test_the_shells_records_align_by_display_width_and_its_csv_is_the_cli_s():
    from chronos_lite.shell import output

    text = output.expanded(["城市", "n"], [["東京", 1]])
    assert text.splitlines()[1:] == ["城市 | 東京", "n    | 1"]
    assert output.rows_text("csv", ["a", "b"], [[{"k": 1}, None]]) == 'a,b\n"{""k"": 1}",'
