#!/usr/bin/env python3
"""The main job on an example database: fork a world, change it, compare with main, discard.

    python examples/quickstart.py ./demo/shop

Drives the real `chronos` command, printing each command and its output.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CHRONOS = str(Path(sys.executable).with_name("chronos"))


def chronos(*args: str) -> None:
    shown = " ".join(a if " " not in a and "'" not in a else repr(a) for a in args)
    print(f"$ chronos {shown}")
    proc = subprocess.run([CHRONOS, *args], capture_output=True, text=True)
    print((proc.stdout + proc.stderr).rstrip(), end="\n\n")
    if proc.returncode != 0:
        sys.exit(proc.returncode)


def main() -> None:
    shop = Path(sys.argv[1] if len(sys.argv) > 1 else "demo/shop")
    shutil.rmtree(shop, ignore_errors=True)
    shop.parent.mkdir(parents=True, exist_ok=True)
    db = str(shop)
    chronos("init", db)
    chronos(
        db,
        "sql",
        "create table users(id integer primary key autoincrement, name text, email text unique)",
    )
    chronos(
        db,
        "sql",
        "insert into users(name, email) values ('Ada', 'ada@x.org'), ('Grace', 'grace@x.org')",
    )
    chronos(db, "fork", "task-1", "--meta", '{"task": "fix names"}')
    chronos(db, "sql", "-b", "task-1", "update users set name = 'Ada L.' where id = 1")
    chronos(
        db, "sql", "-b", "task-1", "insert into users(name, email) values ('Alan', 'alan@x.org')"
    )
    chronos(db, "sql", "select id, name from users order by id")
    chronos(db, "sql", "-b", "task-1", "select id, name from users order by id")
    chronos(db, "get", "users", "1", "-b", "task-1")
    chronos(db, "branches")
    chronos(db, "discard", "task-1")
    chronos(db, "branches")


if __name__ == "__main__":
    main()
