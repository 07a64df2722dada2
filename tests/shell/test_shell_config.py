"""The shell's config file: defaults, what applies to interactive shells, bad settings
reported, the history file."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from helpers import run_cli
from prompt_toolkit.history import FileHistory
from terminal import (
    ADA,
    Terminal,
    typed,
)

from chronos_lite.shell import config
from chronos_lite.shell.session import Shell

# --- 9. the config file ----------------------------------------------------------------------


@pytest.fixture
def xdg(tmp_path, monkeypatch) -> Path:
    """XDG folders of this test's own: the config file's path."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("PAGER", raising=False)
    path = tmp_path / "config" / "chronos" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def test_no_config_file_gives_the_defaults(xdg, tmp_path):
    assert config.config_path() == xdg
    assert config.history_path() == tmp_path / "state" / "chronos" / "history"
    settings = config.load()
    assert (settings.format, settings.expanded, settings.timing) == ("aligned", "auto", False)
    assert settings.startup == [] and settings.problems == []


def test_the_config_applies_to_interactive_shells(xdg, shop, folder, tmp_path):
    xdg.write_text(
        'pager = false\nformat = "json"\nexpanded = "on"\ntiming = true\n'
        'startup = ["\\\\timing off", "select count(*) as n from users;"]\n'
    )
    settings = config.load()
    assert settings.problems == []
    assert settings.pager is None
    assert settings.startup == ["\\timing off", "select count(*) as n from users;"]
    term = Terminal(shop.database, folder, config.history_path(), settings=settings)
    assert (term.shell.format, term.shell.expanded, term.shell.timing) == ("json", "on", True)
    keys = typed("\\timing on", "select name from users;", "\\q")
    assert term.run(keys, startup=tuple(settings.startup)) == 0
    out = term.out.getvalue().split("\n", 1)[1]
    assert out == '[{"n": 1}]\n[{"name": "Ada"}]\n'  # stdout: JSON alone
    assert re.fullmatch(  # the shell's own notes beside it
        r"Timing is off\.\nTiming is on\.\nTime: \d+\.\d{3} ms\n", term.err.getvalue()
    )
    # a script's output doesn't depend on the config
    script = Shell(shop.database, out=StringIO(), settings=settings)
    assert (script.format, script.expanded, script.timing) == ("aligned", "off", False)
    proc = run_cli(folder, "-c", "select name from users")
    assert proc.stdout == ADA and proc.stderr == ""


def test_expanded_from_the_config(xdg, shop, folder, tmp_path):
    xdg.write_text('expanded = "on"\n')
    term = Terminal(shop.database, folder, tmp_path / "history", settings=config.load())
    assert term.run(typed("select name from users;", "\\q")) == 0
    assert term.out.getvalue().endswith("-[ RECORD 1 ]+----\nname | Ada\n")


def test_a_bad_setting_is_reported_and_the_shell_still_starts(xdg, shop, folder, tmp_path):
    xdg.write_text('format = "yaml"\ntiming = "yes"\ncolour = "red"\nexpanded = "auto"\n')
    settings = config.load()
    assert settings.problems == [
        f"{xdg}: 'format' must be aligned | csv | tsv | markdown | ndjson | json, not 'yaml'",
        f"{xdg}: 'timing' must be true or false, not 'yes'",
        f"{xdg}: unknown setting 'colour' (settings: pager, format, expanded, timing, startup)",
    ]
    assert (settings.format, settings.timing, settings.expanded) == ("aligned", False, "auto")
    term = Terminal(shop.database, folder, tmp_path / "history", settings=settings)
    assert term.run(typed("select name from users;", "\\q")) == 0
    assert ADA in term.out.getvalue()
    proc = run_cli(folder, "-c", "select name from users")
    assert proc.stdout == ADA
    assert proc.stderr == ""  # a script doesn't read the config file: nothing to report


def test_a_config_file_that_is_not_toml(xdg, shop):
    xdg.write_text("format = \n")
    settings = config.load()
    assert len(settings.problems) == 1
    assert settings.problems[0].startswith(f"{xdg}: can't read it (")
    assert settings.problems[0].endswith("); using the defaults")
    assert settings.format == "aligned"
    proc = run_cli(shop.folder, "-X", "-c", "select name from users")  # -X: no config
    assert proc.stdout == ADA and proc.stderr == ""


def test_the_history_file_is_written(xdg, shop, folder):
    path = config.history_path()
    for keys in (typed("select 41 as answer;", "\\q"), typed("select", "42 as answer;", "\\q")):
        term = Terminal(shop.database, folder, path)
        assert term.run(keys) == 0
    assert path.is_file()
    assert list(FileHistory(str(path)).load_history_strings()) == [
        "\\q",
        "select\n42 as answer;",
        "\\q",
        "select 41 as answer;",
    ]
