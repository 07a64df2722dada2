"""The review page in headless Chromium (Debian's, driven by Playwright): a person approves a
held merge at its version, rejects another, and sees a stale approval refused. Screenshots go
to tests/artifacts/web/ (git-ignored). Without chromium or Playwright the test is skipped, but
where CI is set it fails: CI must run it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import bot_writes, held
from helpers import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts" / "web"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing: .ci/run installs it (apt-get install chromium)")
    pytest.skip(f"{what} is missing (apt-get install chromium; pip install playwright)")


@pytest.fixture
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright for Python")
    if CHROMIUM is None:
        _missing("chromium")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []  # (root: Chromium's own rule)
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=args, timeout=60_000)
        try:
            yield launched
        finally:
            launched.close()


def shot(page, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_a_person_approves_rejects_and_is_refused_a_stale_approval(crm, serve, browser):
    held(
        crm,
        "fix-emails",
        "update users set email = 'ann@example.org' where id = 1",
        "insert into users values (4, 'dan', 'dan@example.org')",
        meta={"task": "fix the emails", "ticket": 12},
    )
    held(
        crm,
        "drop-bob",
        "update users set name = 'robert' where id = 2",
        "delete from users where id = 3",
        meta={"task": "tidy the users"},
    )
    crm.sql("update users set name = 'bobby' where id = 2")  # (main too: a conflict)
    held(crm, "add-eve", "insert into users values (5, 'eve', 'e@x'), (6, 'fay', 'f@x')")
    web = serve()
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    page.goto(web.url)
    assert page.url == web.origin + "/"  # (the secret left the address bar for a cookie)
    assert page.locator("h2").first.inner_text() == "Held merges"
    assert page.locator("table").first.locator("tbody tr").count() == 3
    shot(page, "overview")

    # approve fix-emails at the version its page shows
    page.get_by_role("link", name="fix-emails").first.click()
    assert "2 changes on fix-emails" in page.locator("#diff-summary").inner_text()
    shot(page, "world")
    page.get_by_role("button", name="Approve version 2").click()
    message = page.locator("#message").inner_text()
    assert message == "merged 2 changes from fix-emails into main"
    assert [r["id"] for r in crm.query("select id from users order by id")] == [1, 2, 3, 4]
    shot(page, "approved")

    # reject drop-bob: the page asks first; dismissed, nothing happens
    page.goto(web.origin + "/world?name=drop-bob")
    assert page.locator("b.conflict").count() == 1  # (base / ours / theirs of users/2)
    shot(page, "conflict")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.get_by_role("button", name="Reject (discard)").click()
    assert page.locator("#message").count() == 0
    assert "drop-bob" in [b["name"] for b in crm.call("branches").data["branches"]]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Reject (discard)").click()
    assert page.locator("#message").inner_text().startswith("discarded branch drop-bob")
    assert "drop-bob" not in [b["name"] for b in crm.call("branches").data["branches"]]

    # a stale approval: the agent writes after the person read the page
    page.goto(web.origin + "/world?name=add-eve")
    bot_writes(crm, "add-eve", "update users set name = 'eve2' where id = 5")
    page.get_by_role("button", name="Approve version 1").click()
    message = page.locator("#message").inner_text()
    assert message.startswith("add-eve is at version 2, not 1: it changed since")
    assert "add-eve" in [r["world"] for r in crm.call("reviews").data["reviews"]]
    assert page.get_by_role("button", name="Approve version 2").count() == 1  # (as it is now)
    shot(page, "stale")

    page.get_by_role("link", name="Main’s history").click()
    assert "merged fix-emails" in page.locator("table").inner_text()
    shot(page, "history")
    # no script or style the page's CSP refused (a refusal's 409 is logged: not one of these)
    assert [e for e in errors if not e.startswith("Failed to load resource")] == []
