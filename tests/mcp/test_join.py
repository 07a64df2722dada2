"""One folder, one serving process: a second `chronos mcp` joins the process that has the
folder open over the folder's socket, with its own modes, and goes on when that process stops."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
from helpers import CHRONOS
from mcp_lines import WAIT, Server

import chronos_lite
from chronos_lite.mcp.host import hosting

SLOW = (
    "with recursive n(i) as (select 1 union all select i + 1 from n where i < 200000000) "
    "select count(*) from n"
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "shop"
    with chronos_lite.init(path) as db:
        db.sql("create table users(id integer primary key, name text)")
        db.sql("insert into users(name) values ('Ada'), ('Bo')")
        db.call("agent", action="create", name="bot", rights=["read", "fork", "write_own"])
    return path


def has_open(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (a joined process never opens the file)."""
    fds = Path(f"/proc/{pid}/fd")
    targets = []
    for fd in fds.iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            pass
    return str(path.resolve()) in targets


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {WAIT} s"
        time.sleep(0.02)


def sql_text(server: Server, query: str) -> str:
    result = server.call("sql", {"sql": query})
    assert result["isError"] is False, result
    return result["content"][0]["text"]


def test_a_second_chronos_mcp_joins_the_first_with_its_own_modes(folder: Path) -> None:
    host = Server(folder, "--allow-merge")
    joined = None
    try:
        host.initialize()
        sock = folder / "chronos.sock"
        assert stat.S_ISSOCK(sock.stat().st_mode)
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600  # the folder owner's only
        joined = Server(folder)  # safe mode: the host's --allow-merge isn't its
        assert "You can't merge" in joined.initialize()["instructions"]
        names = {t["name"] for t in joined.result("tools/list")["tools"]}
        assert "merge" not in names and "fork" in names
        assert not has_open(joined.proc.pid, folder / "chronos.db")
        assert joined.call("fork", {"name": "mine"})["isError"] is False
        assert (
            joined.call(
                "sql", {"sql": "update users set name = 'Cy' where id = 1", "branch": "mine"}
            )["isError"]
            is False
        )
        refused = joined.call("merge", {"branch": "mine"})
        assert refused["isError"] is True
        assert "Ada" in sql_text(host, "select name from users where id = 1")  # main as it was
        assert "mine" in host.call("branches", {})["content"][0]["text"]
        assert joined.close() == 0
        host.ping()  # the host serves on after a joined session ends
    finally:
        if joined is not None:
            joined.kill()
        host.kill()


def test_an_agent_joins_as_itself(folder: Path) -> None:
    host = Server(folder, "--allow-merge")
    bot = None
    try:
        host.initialize()
        bot = Server(folder, "--agent", "bot")
        assert "agent bot" in bot.initialize()["instructions"]
        assert not has_open(bot.proc.pid, folder / "chronos.db")
        result = bot.call("sql", {"sql": "delete from users"})
        assert result["isError"] is True  # no write_main: main isn't its to change
        assert "Ada" in sql_text(host, "select name from users")
    finally:
        for server in (bot, host):
            if server is not None:
                server.kill()


def test_what_a_host_refuses_ends_the_joining_process_with_its_message(folder: Path) -> None:
    host = Server(folder, "--allow-merge")
    try:
        host.initialize()
        for flags, said in (
            (("--agent", "nobody"), "no agent nobody"),
            (("--branch", "nowhere"), "nowhere"),
        ):
            done = subprocess.run(
                [CHRONOS, "mcp", str(folder), *flags],
                input=b"",
                capture_output=True,
                timeout=WAIT,
            )
            assert done.returncode == 1 and said in done.stderr.decode(), done
            assert done.stdout == b""
        host.ping()
    finally:
        host.kill()


def test_the_session_goes_on_when_its_host_stops(folder: Path) -> None:
    host = Server(folder, "--allow-merge")
    joined = None
    try:
        host.initialize()
        joined = Server(folder, "--allow-merge")
        joined.initialize()
        assert not has_open(joined.proc.pid, folder / "chronos.db")
        os.kill(host.proc.pid, signal.SIGKILL)
        host.proc.wait(WAIT)
        # the next call is served: no initialize again (the session's version moved with it)
        assert "Ada" in sql_text(joined, "select name from users where id = 1")
        assert has_open(joined.proc.pid, folder / "chronos.db")
        # and it hosts the folder now: a third chronos mcp joins it
        third = Server(folder)
        try:
            third.initialize()
            assert not has_open(third.proc.pid, folder / "chronos.db")
            assert third.close() == 0
        finally:
            third.kill()
        assert joined.close() == 0
    finally:
        if joined is not None:
            joined.kill()
        host.kill()


def test_a_call_the_host_had_in_flight_when_it_died_is_answered_with_an_error(
    folder: Path,
) -> None:
    host = Server(folder, "--allow-merge")
    joined = None
    try:
        host.initialize()
        joined = Server(folder, "--allow-merge")
        joined.initialize()
        joined.send(
            {
                "jsonrpc": "2.0",
                "id": 41,
                "method": "tools/call",
                "params": {"name": "sql", "arguments": {"sql": SLOW}},
            }
        )
        time.sleep(0.5)  # (the call is running in the host now)
        os.kill(host.proc.pid, signal.SIGKILL)
        reply = joined.read()
        assert reply["id"] == 41
        assert "stopped during this call" in reply["error"]["message"]
        assert "may have run" in reply["error"]["message"]
        joined.ping()
        assert joined.close() == 0
    finally:
        if joined is not None:
            joined.kill()
        host.kill()


def test_a_cancel_reaches_the_call_running_in_the_host(folder: Path) -> None:
    host = Server(folder, "--allow-merge")
    joined = None
    try:
        host.initialize()
        joined = Server(folder, "--allow-merge")
        joined.initialize()
        joined.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "sql", "arguments": {"sql": SLOW}},
            }
        )
        time.sleep(0.3)
        joined.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        )
        joined.ping()  # answered: the cancelled call got no reply, and stopped
        assert not joined.pending()
    finally:
        if joined is not None:
            joined.kill()
        host.kill()


def test_a_stale_socket_from_a_killed_host_is_replaced(folder: Path) -> None:
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(folder / "chronos.sock"))  # a socket file nothing listens on
    left.close()
    first = Server(folder)
    try:
        first.initialize()
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(WAIT)
        probe.connect(str(folder / "chronos.sock"))  # listened on again
        probe.close()
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(WAIT)
        assert (folder / "chronos.sock").exists()  # (a killed host leaves its file)
        second = Server(folder)
        try:
            second.initialize()
            assert has_open(second.proc.pid, folder / "chronos.db")  # hosts: nothing to join
            assert second.close() == 0
        finally:
            second.kill()
        assert not (folder / "chronos.sock").exists()  # a host that ends removes it
    finally:
        first.kill()


def test_a_folder_path_too_long_for_a_socket_still_joins(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "shop"
    with chronos_lite.init(deep) as db:
        db.sql("create table t(x)")
    assert len(str(deep / "chronos.sock")) > 108
    host = Server(deep, "--allow-merge")
    joined = None
    try:
        host.initialize()
        joined = Server(deep)
        joined.initialize()
        assert not has_open(joined.proc.pid, deep / "chronos.db")
        joined.ping()
    finally:
        if joined is not None:
            joined.kill()
        host.kill()


def raw_hello(path: Path, line: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(WAIT)
        conn.connect(str(path))
        conn.sendall(line)
        return json.loads(conn.makefile("rb").readline())


def test_a_joining_process_must_say_who_it_is_in_the_same_version(folder: Path) -> None:
    with hosting(str(folder), "the shell") as host:
        assert host is not None
        sock = folder / "chronos.sock"
        assert "say who it is" in raw_hello(sock, b"hello\n")["error"]
        wrong = raw_hello(sock, json.dumps({"chronos": "0.0.1"}).encode() + b"\n")
        assert wrong["code"] == "version" and "0.0.1" in wrong["error"]
        fine = raw_hello(sock, json.dumps({"chronos": chronos_lite.__version__}).encode() + b"\n")
        assert fine["joined"] == "the shell" and fine["pid"] == os.getpid()
    assert not (folder / "chronos.sock").exists()


def test_the_shell_hosts_its_folder(folder: Path) -> None:
    with hosting(str(folder), "the shell") as host:
        assert host is not None
        joined = Server(folder, "--allow-merge")
        try:
            joined.initialize()
            assert not has_open(joined.proc.pid, folder / "chronos.db")
            assert "Bo" in sql_text(joined, "select name from users where id = 2")
            assert joined.close() == 0
        finally:
            joined.kill()
        wait_for(lambda: host.opened() is not None, "the joined session's databases")


def test_chronos_serve_hosts_its_folder_and_a_session_outlives_it(folder: Path) -> None:
    from mcp_lines import HttpServer

    serving = HttpServer(folder)
    joined = None
    try:
        wait_for((folder / "chronos.sock").exists, "chronos serve's socket")
        joined = Server(folder, "--allow-merge")
        joined.initialize()
        assert not has_open(joined.proc.pid, folder / "chronos.db")
        assert joined.call("fork", {"name": "via-serve"})["isError"] is False
        assert serving.close() == 0  # SIGTERM: it stops, its joined session moves on
        assert "via-serve" in joined.call("branches", {})["content"][0]["text"]
        assert has_open(joined.proc.pid, folder / "chronos.db")
        assert joined.close() == 0
    finally:
        if joined is not None:
            joined.kill()
        serving.kill()


def test_the_interactive_shell_hosts_its_folder(folder: Path) -> None:
    main_end, shell_end = os.openpty()
    shell = subprocess.Popen(
        [CHRONOS, str(folder), "-X"],
        stdin=shell_end,
        stdout=shell_end,
        stderr=shell_end,
        close_fds=True,
        env={**os.environ, "TERM": "dumb"},
    )
    os.close(shell_end)
    joined = None
    try:
        wait_for((folder / "chronos.sock").exists, "the shell's socket")
        joined = Server(folder, "--allow-merge")
        joined.initialize()
        assert not has_open(joined.proc.pid, folder / "chronos.db")
        os.write(main_end, b"\\q\n")
        shell.wait(WAIT)
        assert "Ada" in sql_text(joined, "select name from users where id = 1")
        assert joined.close() == 0
    finally:
        if joined is not None:
            joined.kill()
        if shell.poll() is None:
            shell.kill()
            shell.wait(WAIT)
        os.close(main_end)


def test_a_line_over_the_limit_through_the_relay_is_answered_and_read_past(folder: Path) -> None:
    host = Server(folder, "--allow-merge")
    joined = None
    try:
        host.initialize()
        joined = Server(folder, "--allow-merge")
        joined.initialize()
        joined.write(b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "x": "' + b"a" * (9 << 20))
        joined.write(b'"}\n')
        error = joined.read()["error"]
        assert "a message may be at most 8 MB" in error["message"]
        joined.ping()  # (the rest of the long line was read past, not taken as a message)
        assert joined.close() == 0
    finally:
        if joined is not None:
            joined.kill()
        host.kill()
