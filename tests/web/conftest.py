"""The review page's fixtures: a folder with held merges (an agent under a merge policy), and
`chronos <folder> web` running on it as a subprocess, its URL read from what it prints."""

from __future__ import annotations

import http.client
import re
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from helpers import CHRONOS

from chronos_lite import ChronosError

BOT = ["read", "fork", "write_own", "write_main", "merge_own"]
WAIT = 30  # seconds: the server's start, its stop


@pytest.fixture
def crm(db):
    """Users and an agent, bot, whose merges of more than one row wait for a person."""
    db.sql("create table users(id integer primary key, name text, email text)")
    db.sql("insert into users values (1, 'ann', 'a@x'), (2, 'bob', 'b@x'), (3, 'cy', null)")
    db.call("agent", action="create", name="bot", rights=BOT)
    db.call("set_merge_policy", name="small", rules={"max_rows": 1}, agents=["bot"])
    return db


def bot_writes(db, world: str, *statements: str) -> None:
    for sql in statements:
        db.call("sql", db.as_agent("bot"), branch=world, sql=sql)


def held(db, world: str, *statements: str, meta: dict | None = None) -> None:
    """A world the bot forks and writes to, whose merge is then held for a person."""
    db.call("fork", db.as_agent("bot"), name=world, **({"meta": meta} if meta else {}))
    bot_writes(db, world, *statements)
    with pytest.raises(ChronosError) as info:
        db.call("merge", db.as_agent("bot"), branch=world)
    assert info.value.code == "42501" and "queued" in str(info.value), info.value


@dataclass
class Web:
    """A running `chronos <folder> web`."""

    proc: subprocess.Popen
    url: str  # what it printed: http://127.0.0.1:PORT/?token=SECRET
    folder: Path

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 0

    @property
    def secret(self) -> str:
        return self.url.split("token=", 1)[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cookie(self) -> str:
        return f"chronos_web_{self.port}={self.secret}"

    def request(
        self, method: str, path: str, body: str | None = None, **headers: str
    ) -> tuple[int, dict[str, str], str]:
        """One raw HTTP request: its status, headers and body."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_host="Host" in headers)
            sent = {k.replace("_", "-"): v for k, v in headers.items()}
            if body is not None:
                sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
                sent["Content-Length"] = str(len(body.encode()))
            for name, value in sent.items():
                conn.putheader(name, value)
            conn.endheaders(body.encode() if body is not None else None)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read().decode()
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, str]:
        status, _, body = self.request("GET", path, Cookie=self.cookie)
        return status, body

    def post(self, path: str, body: str) -> tuple[int, str]:
        """A form sent as the page's own would be: the secret's cookie, the page's origin."""
        status, _, text = self.request("POST", path, body, Cookie=self.cookie, Origin=self.origin)
        return status, text


def start(folder: Path, *extra: str) -> Web:
    proc = subprocess.Popen(  # (the folder named as a person would: the page shows its name)
        [CHRONOS, folder.name, "web", "--no-browser", *extra],
        cwd=folder.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        line = proc.stdout.readline() if ready else ""
        found = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        if found:
            return Web(proc, found.group(0), folder)
        if proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"chronos web didn't start: {proc.stderr.read() if proc.stderr else ''}")


def stop(web: Web, signum: int = signal.SIGTERM) -> int:
    """Stop the server as a person would; its exit code."""
    if web.proc.poll() is None:
        web.proc.send_signal(signum)
    try:
        return web.proc.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        web.proc.kill()
        raise


@pytest.fixture
def serve(folder):
    """Start `chronos <folder> web` (the database made first); stopped with SIGTERM after the
    test, which must end it with exit code 0."""
    started: list[Web] = []

    def run(*extra: str) -> Web:
        started.append(start(folder, *extra))
        return started[-1]

    yield run
    for web in started:
        assert stop(web) == 0, web.proc.stderr.read() if web.proc.stderr else ""
