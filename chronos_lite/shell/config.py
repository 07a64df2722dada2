"""The shell's settings, from ``$XDG_CONFIG_HOME/chronos/config.toml`` (``~/.config/...``):

    pager = "less -SRFX"      # or false: never page
    format = "aligned"        # aligned | csv | tsv | markdown | ndjson | json
    expanded = "auto"         # off | on | auto (default: records when wider than the screen)
    timing = false            # print each statement's time
    startup = ["\\\\timing on", "select count(*) from users;"]   # run when the shell starts

The input history is kept per user in ``$XDG_STATE_HOME/chronos/history``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .output import DEFAULT_PAGER, EXPANDED, FORMATS


@dataclass
class Settings:
    pager: str | None = DEFAULT_PAGER
    format: str = "aligned"
    expanded: str = "auto"  # wide results as records: they stay readable
    timing: bool = False
    startup: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what was wrong in the file, to show


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable)
    return Path(value) if value else Path.home() / fallback


def config_path() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "chronos" / "config.toml"


def history_path() -> Path:
    return _xdg("XDG_STATE_HOME", ".local/state") / "chronos" / "history"


def load(path: Path | None = None) -> Settings:
    """The settings in the file (the defaults where it has none). A mistake in the file is
    reported and that setting left at its default: the shell still starts."""
    path = path or config_path()
    settings = Settings(pager=os.environ.get("PAGER", DEFAULT_PAGER) or None)
    if not path.is_file():
        return settings
    import tomllib  # (only when there is a file to read)

    try:
        values = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        settings.problems.append(f"{path}: can't read it ({exc}); using the defaults")
        return settings
    checks = {
        "pager": lambda v: v is False or (isinstance(v, str) and v.strip() != ""),
        "format": lambda v: v in FORMATS,
        "expanded": lambda v: v in EXPANDED,
        "timing": lambda v: isinstance(v, bool),
        "startup": lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
    }
    rules = {
        "pager": "a command, or false",
        "format": " | ".join(FORMATS),
        "expanded": " | ".join(EXPANDED),
        "timing": "true or false",
        "startup": "a list of statements in quotes",
    }
    for key, value in values.items():
        if key not in checks:
            settings.problems.append(
                f"{path}: unknown setting '{key}' (settings: {', '.join(checks)})"
            )
        elif not checks[key](value):
            settings.problems.append(f"{path}: '{key}' must be {rules[key]}, not {value!r}")
        else:
            setattr(settings, key, None if value is False else value)
    return settings
