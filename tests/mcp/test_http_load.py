"""`chronos serve` under load: 8 agents at once for a while (bounded loops), no error reaching a
client and nothing answered lost; then a SIGTERM with requests in flight loses none that were
answered. ``CHRONOS_LOAD_S`` sets the first part's length (default 30 s)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from helpers import CHRONOS
from test_http import WAIT_S, call, serving

import chronos_lite

AGENTS = 8
LOAD_S = float(os.environ.get("CHRONOS_LOAD_S", "30"))


def _shop(tmp_path) -> tuple:
    folder = tmp_path / "shop"
    tokens = []
    with chronos_lite.init(folder) as db:
        db.sql("create table items(id integer primary key, agent text, k int)")
        db.sql("insert into items(agent, k) values ('seed', 0)")
        for i in range(AGENTS):
            made = db.call(
                "agent", action="create", name=f"a{i}", rights=["read", "fork", "write_own"]
            )
            tokens.append(made.data["token"])
    return folder, tokens


def _work(port: int, token: str, name: str, until: float, answered: list, errors: list) -> None:
    """One agent: its world, then writes on it and reads of main until ``until``."""
    try:
        if call(port, token, "fork", name=name)["isError"]:
            errors.append((name, "fork"))
            return
        k = 0
        while time.monotonic() < until:
            k += 1
            done = call(
                port,
                token,
                "sql",
                sql=f"insert into items(agent, k) values ('{name}', {k})",
                branch=name,
            )
            if done["isError"]:
                errors.append((name, done["content"][0]["text"]))
                return
            answered.append(k)
            if k % 5 == 0:
                read = call(port, token, "find", table="items", where={"agent": "seed"})
                if read["isError"] or read["structuredContent"]["matches"] != 1:
                    errors.append((name, read))
    except Exception as exc:  # (a refused connection, a timeout, a status other than 200)
        errors.append((name, repr(exc)))


def test_eight_agents_at_once_lose_nothing(tmp_path):
    folder, tokens = _shop(tmp_path)
    answered: list[list[int]] = [[] for _ in tokens]
    errors: list = []
    with serving(folder) as port:
        until = time.monotonic() + LOAD_S
        threads = [
            threading.Thread(target=_work, args=(port, t, f"w{i}", until, answered[i], errors))
            for i, t in enumerate(tokens)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(LOAD_S + WAIT_S * 2)
        assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    with chronos_lite.open(folder) as db:
        for i, done in enumerate(answered):
            rows = db.query(
                "select k from items where agent = $1 order by k", f"w{i}", branch=f"w{i}"
            )
            assert [r["k"] for r in rows] == done
        assert sum(len(d) for d in answered) >= AGENTS  # (every agent wrote)


def test_a_sigterm_with_requests_in_flight_loses_none_answered(tmp_path):
    folder, tokens = _shop(tmp_path)
    proc = subprocess.Popen(
        [CHRONOS, "serve", str(folder), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    port = int(proc.stderr.readline().split(":")[-1].split("/")[0])
    answered: list[list[int]] = [[] for _ in tokens]
    errors: list = []
    until = time.monotonic() + WAIT_S
    threads = [
        threading.Thread(target=_work, args=(port, t, f"s{i}", until, answered[i], errors))
        for i, t in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=WAIT_S) == 0
    for thread in threads:
        thread.join(WAIT_S)
    assert all(not t.is_alive() for t in threads)
    with chronos_lite.open(folder) as db:
        for i, done in enumerate(answered):
            if not done:
                continue
            rows = db.query(
                "select k from items where agent = $1 order by k", f"s{i}", branch=f"s{i}"
            )
            kept = [r["k"] for r in rows]
            assert kept[: len(done)] == done  # (every answered write is there)
            assert len(kept) <= len(done) + 1  # (at most the one in flight, committed unanswered)
