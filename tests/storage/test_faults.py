"""Faults of the disk and the file get their own message and code, never "internal error".

The database is opened through a VFS of SQLite's own kind (an apsw VFS over the real one) that,
when armed, fails as a disk can: writes with an I/O error, a full disk or a read-only file,
reads with an I/O error or garbage (a corrupt page). Every tool an agent has is called through
the MCP server in process under each fault: each answer is a clear refusal with that fault's
code (or a success, where the call needed nothing the fault broke), and once the disk behaves
again the same server answers and the file is intact.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

import chronos_lite
from chronos_lite.mcp.core import MAX_RESULT_CHARS, MAX_ROWS, Server
from chronos_lite.operations.registry import Caller

CODES = {  # the fault: the code its refusals carry
    "write-io": "58030",
    "full": "53100",
    "read-only": "25006",
    "read-io": "58030",
    "corrupt": "XX001",
}


class Faulty:
    """The fault now armed (None: the disk behaves)."""

    mode: str | None = None


class FaultyFile(apsw.VFSFile):
    def xWrite(self, data: bytes, offset: int) -> None:
        if Faulty.mode == "write-io":
            raise apsw.IOError("disk I/O error (injected)")
        if Faulty.mode == "full":
            raise apsw.FullError("database or disk is full (injected)")
        if Faulty.mode == "read-only":
            raise apsw.ReadOnlyError("attempt to write a readonly database (injected)")
        super().xWrite(data, offset)

    def xRead(self, amount: int, offset: int) -> bytes:
        if Faulty.mode == "read-io":
            raise apsw.IOError("disk I/O error (injected)")
        if Faulty.mode == "corrupt" and offset >= 4096:  # (the header page stays whole)
            return os.urandom(amount)
        return super().xRead(amount, offset)


class FaultyVFS(apsw.VFS):
    def __init__(self, base: str) -> None:
        self.base = base
        super().__init__("faulty", base=base, makedefault=True)

    def xOpen(self, name, flags):
        return FaultyFile(self.base, name, flags)


@pytest.fixture
def faulty_vfs() -> Iterator[None]:
    base = apsw.vfs_names()[0]
    vfs = FaultyVFS(base)
    try:
        yield
    finally:
        Faulty.mode = None
        vfs.unregister()


@pytest.fixture
def folder(tmp_path: Path, faulty_vfs) -> Path:
    folder = tmp_path / "shop"
    with chronos_lite.init(folder) as db:
        db.sql("create table users(id integer primary key, name text, email text unique)")
        db.sql(
            "with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000) "
            "insert into users(name, email) select hex(randomblob(20)), 'u' || i from n"
        )
        db.fork("theirs")
        db.sql("update users set name = 'T' where id = 1", branch="theirs")
    return folder


def calls(own: str) -> list[tuple[str, dict]]:
    """A call of every tool a safe-mode agent has (own: a branch the session forked)."""
    return [
        ("describe", {}),
        ("sql", {"sql": "select count(*), max(name) from users"}),
        ("sql", {"sql": "update users set name = 'x' where id < 50", "branch": own}),
        ("get", {"table": "users", "id": "2999"}),
        ("put", {"table": "users", "id": "7", "record": {"name": "p"}, "branch": own}),
        ("delete", {"table": "users", "id": "8", "branch": own}),
        ("fork", {"name": "another"}),
        ("set_meta", {"branch": own, "meta": {"k": 1}}),
        ("branches", {}),
        ("diff", {"branch": "theirs"}),
        ("merge_preview", {"branch": "theirs"}),
        ("history", {"branch": "main"}),
        ("rebase", {"branch": own}),
        ("checkpoint", {"branch": own, "name": "cp"}),
        ("rollback", {"branch": own, "checkpoint": "cp"}),
        ("discard", {"branch": "another"}),
    ]


def answer(server: Server, tool: str, args: dict) -> dict:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    message["params"] = {"name": tool, "arguments": args}
    return server.answer(message)["result"]


@pytest.mark.parametrize("fault", sorted(CODES))
def test_every_tool_under_each_fault_answers_with_the_faults_own_code(folder, fault):
    with chronos_lite.open(folder) as db:
        caller = Caller("mcp", "safe", max_rows=MAX_ROWS, max_chars=MAX_RESULT_CHARS)
        server = Server(db.database, caller, str(folder))
        server.answer({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        assert not answer(server, "fork", {"name": "mine"})["isError"]
        assert not answer(server, "checkpoint", {"branch": "mine", "name": "cp"})["isError"]
    seen = set()
    with chronos_lite.open(folder) as db:  # a fresh process's view: nothing cached
        server = Server(db.database, caller, str(folder))
        server.answer({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        Faulty.mode = fault
        for tool, args in calls("mine"):
            result = answer(server, tool, args)
            if not result["isError"]:
                continue  # (it needed nothing the fault broke: a read of cached pages, say)
            text, code = result["content"][0]["text"], result["structuredContent"]["code"]
            assert code != "XX000" and "internal error" not in text, (tool, text)
            if code == CODES[fault]:
                seen.add(tool)
                assert "nothing was changed" in text or "nothing was done" in text, text
            else:  # a fault of another kind it caused (garbage read as a header, say), or a
                # refusal of the call itself (an earlier call of the list failed)
                faults = {*CODES.values(), "XX002"}
                assert code in faults | {"42501", "22023", "P0002", "55006"}, (tool, code, text)
        assert seen, f"{fault}: no call met the fault"
        Faulty.mode = None
        result = answer(server, "sql", {"sql": "pragma integrity_check"})
        assert result["structuredContent"]["results"][0]["rows"] == [["ok"]], result
        assert not answer(server, "sql", {"sql": "select count(*) from users"})["isError"]
    with chronos_lite.open(folder) as db:
        assert db.query("select count(*) as n from users") == [{"n": 3000}]
        assert db.query("select name from users where id = 1", branch="theirs") == [{"name": "T"}]
