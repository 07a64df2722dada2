"""The world catalog: the one module that reads and writes ``_chronos_worlds``.

A row per world ever forked: its random id (``wid``), name, parent, what it sees of main (per
table, the last history seq at the fork), the world clock at the fork, owner, notes (``meta``),
version, state (``open``, ``merged``, ``discarded``) and times. Names are unique among open
worlds only: a name is free again once its world has ended.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import apsw

from ..errors import BAD_ARGUMENT, NOT_FOUND, ChronosError
from .branchref import BranchRef
from .fetch import all_rows

MAX_META_BYTES = 64 * 1024


@dataclass(frozen=True)
class World:
    """An open world (a branch other than main)."""

    id: int
    wid: str
    name: str
    parent_id: int | None
    parent: str
    base: dict[int, int]  # what it sees of main: per table, the last history seq at the fork
    fork_seq: int  # the world clock at the fork
    owner: str
    meta: dict
    version: int
    created: float


_COLUMNS = (
    "w.id, w.wid, w.name, w.parent, p.name, w.base, w.fork_seq, w.owner, w.meta, "
    "w.version, w.created"
)
_FROM = "_chronos_worlds AS w LEFT JOIN _chronos_worlds AS p ON p.id = w.parent"


def _world(row: tuple) -> World:
    wid_int, wid, name, parent_id, parent, base, fork, owner, meta, version, created = row
    return World(
        wid_int,
        wid,
        name,
        parent_id,
        parent or "main",
        {int(k): v for k, v in json.loads(base).items()},
        fork,
        owner,
        json.loads(meta),
        version,
        created,
    )


# --- reading ---------------------------------------------------------------------------------


def find(conn: apsw.Connection, name: str | BranchRef) -> World:
    """The open world of that name (a clear error, naming the branches, if there is none; a
    branch as it was, ``name@when``, is refused: it can only be read)."""
    name = BranchRef.parse(name).writable()
    if name == "main":
        raise ChronosError(
            "main is the database itself, not a world: give the name of a branch you forked"
        )
    row = conn.execute(
        f"select {_COLUMNS} from {_FROM} where w.name = ? and w.state = 'open'", (name,)
    ).fetchall()
    if not row:
        listing = ", ".join(["main", *open_names(conn)])
        raise ChronosError(f"no branch '{name}'; branches: {listing}", NOT_FOUND)
    return _world(row[0])


def again(conn: apsw.Connection, world: World) -> World:
    """The world as the file has it now, read by its id (a merge reads it so once it holds
    the write lock: what another connection committed before then counts); refused if it was
    merged or discarded since."""
    row = conn.execute(
        f"select {_COLUMNS} from {_FROM} where w.id = ? and w.state = 'open'", (world.id,)
    ).fetchall()
    if not row:
        listing = ", ".join(["main", *open_names(conn)])
        raise ChronosError(
            f"no branch '{world.name}' (it was merged or discarded just now); branches: {listing}",
            NOT_FOUND,
        )
    return _world(row[0])


def open_names(conn: apsw.Connection) -> list[str]:
    return [
        r[0]
        for r in conn.execute("select name from _chronos_worlds where state = 'open' order by name")
    ]


def open_worlds(conn: apsw.Connection) -> list[World]:
    rows = conn.execute(
        f"select {_COLUMNS} from {_FROM} where w.state = 'open' order by w.id"
    ).fetchall()
    return [_world(r) for r in rows]


def children(conn: apsw.Connection, world: World) -> list[World]:
    """Every open world forked from ``world``, and from those, deepest last."""
    rows = conn.execute(
        f"with recursive d(id) as (select id from _chronos_worlds where parent = ? "
        f"and state = 'open' union all select w.id from _chronos_worlds w join d "
        f"on w.parent = d.id where w.state = 'open') "
        f"select {_COLUMNS} from {_FROM} where w.id in (select id from d) "
        f"order by w.id",
        (world.id,),
    ).fetchall()
    return [_world(r) for r in rows]


def is_open(conn: apsw.Connection, name: str) -> bool:
    return bool(
        conn.execute(
            "select 1 from _chronos_worlds where name = ? and state = 'open'", (name,)
        ).fetchall()
    )


def name_of(conn: apsw.Connection, world_id: int) -> tuple[str, str] | None:
    """A world's name and state, ended ones too (None: no such world)."""
    row = all_rows(
        conn.execute("select name, state from _chronos_worlds where id = ?", (world_id,))
    )
    return (row[0][0], row[0][1]) if row else None


def latest_named(conn: apsw.Connection, name: str) -> int | None:
    """The id of the world of that name: the open one, else the one that ended last."""
    row = all_rows(
        conn.execute(
            "select id from _chronos_worlds where name = ? order by state = 'open' desc, id desc "
            "limit 1",
            (name,),
        )
    )
    return row[0][0] if row else None


def parent_and_fork(conn: apsw.Connection, world_id: int) -> tuple[int | None, int]:
    """A world's parent (None: main) and its clock at the fork."""
    return all_rows(
        conn.execute("select parent, fork_seq from main._chronos_worlds where id = ?", (world_id,))
    )[0]


def readable_since(conn: apsw.Connection, world: World) -> float:
    """When a world began as it is now: its fork, or its last rebase."""
    return all_rows(
        conn.execute(
            "select coalesce(rebased, created) from _chronos_worlds where id = ?", (world.id,)
        )
    )[0][0]


def merge_started(conn: apsw.Connection, world: World) -> float | None:
    """When a merge of the world began and didn't end (None: none did)."""
    return all_rows(conn.execute("select merging from _chronos_worlds where id = ?", (world.id,)))[
        0
    ][0]


# --- writing (in the caller's write transaction) ----------------------------------------------


def add(
    conn: apsw.Connection,
    name: str,
    parent: World | None,
    base: dict[int, int],
    fork_seq: int,
    owner: str,
    meta_text: str,
) -> int:
    """A new open world; its id."""
    import secrets  # (here: a fork needs it, a start would pay for it)

    conn.execute(
        "insert into _chronos_worlds(wid, name, parent, base, fork_seq, owner, meta, created) "
        "values (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            "w" + secrets.token_hex(8),
            name,
            parent.id if parent else None,
            json.dumps(base),
            fork_seq,
            owner,
            meta_text,
            time.time(),
        ),
    )
    return conn.last_insert_rowid()


def end(conn: apsw.Connection, world_id: int, state: str) -> None:
    """The world is over (``merged`` or ``discarded``); its row stays, for its history."""
    conn.execute(
        "update _chronos_worlds set state = ?, ended = ? where id = ?",
        (state, time.time(), world_id),
    )


def set_meta(conn: apsw.Connection, world: World, meta: dict) -> None:
    conn.execute("update _chronos_worlds set meta = ? where id = ?", (encode_meta(meta), world.id))


def bump_version(conn: apsw.Connection, world: World) -> int | None:
    """The world changed: its version moves on (a merge at a version checks it); the new one."""
    rows = all_rows(
        conn.execute(
            "update _chronos_worlds set version = version + 1 where id = ? returning version",
            (world.id,),
        )
    )
    return rows[0][0] if rows else None


def version_of(conn: apsw.Connection, world_id: int) -> int | None:
    """A world's version now (None: it isn't there)."""
    rows = all_rows(conn.execute("select version from _chronos_worlds where id = ?", (world_id,)))
    return rows[0][0] if rows else None


def rebased(conn: apsw.Connection, world: World, base: dict[int, int], fork_seq: int) -> None:
    """The world now forks from its parent as it is: a new base and fork point."""
    conn.execute(
        "update _chronos_worlds set base = ?, fork_seq = ?, version = version + 1, "
        "rebased = ? where id = ?",
        (json.dumps(base), fork_seq, time.time(), world.id),
    )


def mark_merging(conn: apsw.Connection, world: World, merging: bool) -> None:
    """A merge of the world began (a crash leaves the mark) or ended."""
    conn.execute(
        "update _chronos_worlds set merging = ? where id = ?",
        (time.time() if merging else None, world.id),
    )


def encode_meta(meta: Any) -> str:
    if not isinstance(meta, dict):
        raise ChronosError('\'meta\' must be a JSON object, e.g. {"task": "fix names"}')
    text = json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) > MAX_META_BYTES:
        raise ChronosError(
            f"'meta' is {len(text.encode()):,} bytes of JSON; at most 65,536 (64 KB) are kept: "
            f"store large notes elsewhere and put a reference in meta",
            BAD_ARGUMENT,
        )
    return text
