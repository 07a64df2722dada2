"""The review page over raw HTTP: the secret on every request, loopback's Host, a change only
from the page's own origin and only by POST; approve at the version shown (refused, with nothing
changed, once the world moved on), reject; a big diff paged; hostile values shown as text."""

from __future__ import annotations

import signal
import socket
import threading
import time
from urllib.parse import urlencode

from conftest import bot_writes, held, stop
from helpers import run_cli

HOSTILE = "<script>alert(1)</script>"


def state(db) -> tuple:
    """What a request could change: the worlds, the queue, main's rows."""
    worlds = [(b["name"], b.get("version")) for b in db.call("branches").data["branches"]]
    queue = [r["world"] for r in db.call("reviews").data["reviews"]]
    return worlds, queue, db.query("select * from users order by id")


def approve_form(world: str, version: int) -> str:
    return urlencode({"world": world, "version": version})


def test_every_request_needs_the_secret(crm, serve):
    web = serve()
    for path in ("/", "/world?name=w", "/history"):
        status, _, body = web.request("GET", path)
        assert status == 403 and "needs its secret" in body
    wrong = "x" * len(web.secret)
    assert web.request("GET", f"/?token={wrong}")[0] == 403
    assert web.request("GET", "/", Cookie=f"chronos_web_{web.port}={wrong}")[0] == 403
    assert web.request("GET", "/", Cookie=f"chronos_web_1={web.secret}")[0] == 403  # another's
    assert web.request("GET", f"/?token={web.secret}&token={web.secret}")[0] == 403
    before = state(crm)
    status, _, body = web.request("POST", "/reject", "world=w", Origin=web.origin)
    assert status == 403 and "needs its secret" in body
    assert state(crm) == before


def test_the_secret_in_the_url_becomes_a_strict_cookie(crm, serve):
    web = serve()
    status, headers, _ = web.request("GET", f"/history?page=0&token={web.secret}")
    assert status == 303 and headers["Location"] == "/history?page=0"  # (the secret leaves)
    cookie = headers["Set-Cookie"]
    assert cookie.startswith(web.cookie + ";") and "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    status, headers, body = web.request("GET", "/history?page=0", Cookie=web.cookie)
    assert status == 200 and "Main’s history" in body
    assert (
        headers["Cache-Control"] == "no-store"
        and "frame-ancestors 'none'" in (headers["Content-Security-Policy"])
    )


def test_a_host_that_isnt_loopback_is_refused(crm, serve):
    web = serve()
    for host in ("evil.example", f"evil.example:{web.port}", f"127.0.0.1:{web.port + 1}", ""):
        status, _, body = web.request("GET", "/", Host=host, Cookie=web.cookie)
        assert status == 403 and "answers only at" in body, host
    assert web.request("GET", "/", Host=f"localhost:{web.port}", Cookie=web.cookie)[0] == 200
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    before = state(crm)
    status, _, _ = web.request(
        "POST", "/approve", approve_form("w", 2), Host="evil.example", Cookie=web.cookie
    )
    assert status == 403 and state(crm) == before


def test_a_change_must_come_from_the_page_itself(crm, serve):
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    before = state(crm)
    form = approve_form("w", 2)
    refused = [
        {},  # no Origin, no Sec-Fetch-Site: nothing says it is the page's
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": f"http://127.0.0.1:{web.port + 1}"},
        {"Origin": f"https://127.0.0.1:{web.port}"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site", "Origin": web.origin},
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"},
    ]
    for headers in refused:
        status, sent, body = web.request("POST", "/approve", form, Cookie=web.cookie, **headers)
        assert status == 403 and "this page itself" in body, headers
        assert sent["Connection"] == "close"  # (its body unread: the connection can't go on)
        assert state(crm) == before, headers
    # (a browser's own form says both; Sec-Fetch-Site alone is the page's too)
    status, _, body = web.request(
        "POST", "/approve", form, Cookie=web.cookie, **{"Sec-Fetch-Site": "same-origin"}
    )
    assert status == 200 and "merged 2 changes from w into main" in body


def test_get_changes_nothing(crm, serve):
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    before = state(crm)
    for path in ("/", "/world?name=w", "/world?name=w&doff=1&poff=1", "/history?page=1"):
        assert web.get(path)[0] == 200, path
    for path in ("/approve?" + approve_form("w", 2), "/reject?world=w"):
        assert web.get(path)[0] == 404, path
    for method in ("PUT", "DELETE", "PATCH"):
        assert web.request(method, "/reject?world=w", Cookie=web.cookie)[0] == 501
    assert state(crm) == before


def test_approve_at_the_version_shown_merges(crm, serve):
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    status, page = web.get("/world?name=w")
    assert status == 200 and "Approve version 2" in page
    assert '<input type="hidden" name="version" value="2">' in page
    status, page = web.post("/approve", approve_form("w", 2))
    assert status == 200 and "merged 2 changes from w into main" in page
    assert crm.call("reviews").data["reviews"] == []
    assert [b["name"] for b in crm.call("branches").data["branches"]] == ["main"]
    assert [r["id"] for r in crm.query("select id from users order by id")] == [1, 2, 4]


def test_approve_after_the_world_moved_on_is_refused(crm, serve):
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    status, page = web.get("/world?name=w")
    assert '<input type="hidden" name="version" value="2">' in page
    bot_writes(crm, "w", "update users set name = 'eve' where id = 1")  # (after the page)
    before = state(crm)
    status, page = web.post("/approve", approve_form("w", 2))
    assert status == 409 and "w is at version 3, not 2: it changed since" in page
    assert state(crm) == before
    # the page shows the world as it is now, with the version to approve now
    assert "it changed since" in page and "Approve version 3" in page
    assert '<span class="v">&quot;eve&quot;</span>' in page


def test_reject_discards_the_world(crm, serve):
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    status, page = web.post("/reject", "world=w")
    assert status == 200 and "discarded branch w" in page
    assert crm.call("reviews").data["reviews"] == []
    assert [b["name"] for b in crm.call("branches").data["branches"]] == ["main"]
    assert len(crm.query("select * from users")) == 3
    status, page = web.post("/reject", "world=w")  # (twice: nothing left to discard)
    assert status == 409 and "no branch" in page


def test_a_form_without_its_fields_is_refused_and_changes_nothing(crm, serve):
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    before = state(crm)
    for path, body, said in [
        ("/approve", "world=w", "needs the version"),
        ("/approve", "world=w&version=two", "needs the version"),
        ("/approve", "version=2", "needs the world's name"),
        ("/approve", "world=w&world=x&version=2", "needs the world's name"),
        ("/reject", "", "needs the world's name"),
    ]:
        status, text = web.post(path, body)
        assert status == 400 and said in text, (path, body)
    status, text = web.post("/approve", approve_form("w", 1))
    assert status == 409 and "w is at version 2, not 1" in text
    status, _, text = web.request(
        "POST", "/reject", "world=w" + "&x=" + "y" * 20000, Cookie=web.cookie, Origin=web.origin
    )
    assert status == 413
    assert state(crm) == before
    status, text = web.get("/world?name=w&doff=-1")
    assert status == 400 and "doff is a whole number" in text


def test_a_big_diff_is_paged(crm, serve):
    values = ", ".join(f"({i}, 'n{i}', 'e{i}')" for i in range(100, 145))
    held(crm, "big", f"insert into users values {values}")
    web = serve()
    _, first = web.get("/world?name=big")
    assert "45 changes on big" in first and "1–20 of 45" in first
    assert "users/100<" in first and "users/119<" in first and "users/120<" not in first
    assert 'href="/world?name=big&amp;poff=0&amp;doff=20"' in first
    _, last = web.get("/world?name=big&doff=40")
    assert "41–45 of 45" in last and "users/144<" in last and "users/139<" not in last
    assert "next ›" not in last.split('id="preview"')[0]
    _, preview = web.get("/world?name=big&poff=20")
    assert "21–40 of 45" in preview.split('id="preview"')[1]
    _, past = web.get("/world?name=big&doff=100")
    assert "none from 101 of 45" in past and "‹ previous" in past


def test_history_is_paged(crm, serve):
    for i in range(40):
        crm.sql(f"update users set name = 'n{i}' where id = 1")
    web = serve()
    _, first = web.get("/history")
    assert "update users set name = &#x27;n39&#x27;" in first and "older ›" in first
    assert "n9&#x27;" not in first
    _, second = web.get("/history?page=1")
    assert "update users set name = &#x27;n9&#x27;" in second and "‹ newer" in second
    assert "n39&#x27;" not in second


def test_hostile_values_are_shown_as_text(crm, serve):
    held(
        crm,
        "w",
        f"update users set email = '{HOSTILE}' where id = 1",
        f"insert into users values (4, '{HOSTILE}', 'x')",
        meta={"task": HOSTILE},
    )
    crm.sql("update users set email = '<img src=x onerror=alert(2)>' where id = 1")
    web = serve()
    for path in ("/", "/world?name=w", "/history"):
        _, page = web.get(path)
        assert "<script>alert" not in page and "<img" not in page, path
    _, page = web.get("/world?name=w")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page  # (main's side of the conflict)
    status, page = web.get("/world?name=%3Cb%3Ex")
    assert status == 200 and "No open world &lt;b&gt;x" in page


def test_ctrl_c_stops_it_with_exit_code_0(crm, serve):
    web = serve()
    assert stop(web, signal.SIGINT) == 0
    assert "stopped" in web.proc.stdout.read()


def test_sigterm_while_pages_are_read_stops_it_with_exit_code_0(crm, serve):
    """Every request gets its whole answer, or none (the connection closes): never half."""
    held(crm, "w", "insert into users values (4, 'dan', 'd@x')", "delete from users where id = 3")
    web = serve()
    answered: list[int] = []
    broken: list[BaseException] = []

    def read() -> None:  # (bounded: 200 requests at most, or until the server is gone)
        for i in range(200):
            try:
                if i % 2:
                    answered.append(web.get("/world?name=w")[0])
                else:
                    answered.append(web.request("PUT", "/", Cookie=web.cookie)[0])
            except OSError:  # (refused, or closed before an answer began)
                return
            except Exception as exc:  # (half an answer: IncompleteRead)
                broken.append(exc)
                return

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    time.sleep(0.3)
    assert stop(web) == 0
    for reader in readers:
        reader.join(timeout=60)
    assert not any(reader.is_alive() for reader in readers)
    assert broken == [] and answered and set(answered) <= {200, 501}


def test_the_command_line(folder, crm):
    crm.close()
    shown = run_cli(folder, "web", "--help").stdout
    assert shown.startswith("usage: chronos <folder> web [--port PORT] [--no-browser]")
    assert run_cli(folder, "help", "web").stdout == shown
    assert "chronos <folder> web" in run_cli("help").stdout
    bad = run_cli(folder, "web", "--port", "70000", check=False)
    assert bad.returncode == 1 and "--port takes a port up to 65535" in bad.stderr
    bad = run_cli(folder, "web", "--bogus", check=False)
    assert bad.returncode == 1 and "unrecognized arguments: --bogus" in bad.stderr


def test_a_read_the_database_refuses_is_said_not_a_crash(crm, serve, folder):
    web = serve()
    assert web.get("/")[0] == 200
    crm.close()
    (folder / "chronos.db").rename(folder / "moved.db")  # (the file gone under the server)
    status, body = web.get("/")
    assert status == 503 and body.startswith("chronos: ") and "(reload)" in body, body
    (folder / "moved.db").rename(folder / "chronos.db")


def test_a_port_in_use_or_a_folder_that_isnt_a_database_is_said(folder, crm, tmp_path):
    crm.close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        bad = run_cli(folder, "web", "--no-browser", "--port", port, check=False)
    assert bad.returncode == 1
    assert f"can't listen on 127.0.0.1:{port}" in bad.stderr and "another port" in bad.stderr
    bad = run_cli(tmp_path / "none", "web", "--no-browser", check=False)
    assert bad.returncode == 1 and "is not a chronos database" in bad.stderr
