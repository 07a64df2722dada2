"""The review page's views: the held merges and open worlds, one world (its diff field by
field, its merge preview with conflicts, approve and reject), and main's history. Each reads
through registry calls (``Call``) and shows their data; a refusal is shown where it happened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import render
from ..errors import ChronosError
from ..operations.registry import Reply
from .html import esc, form, link, note, pager, table, value

Call = Callable[[str, dict[str, Any]], Reply]
PAGE = 20  # diff and preview rows a page
HISTORY_PAGE = 30  # history events a page
HISTORY_MOST = 1000  # what one history call gives at most (its schema's maximum)
Said = tuple[str, bool]  # a message to show, and whether it is a success


def overview(call: Call, said: Said | None = None) -> tuple[str, str]:
    """The held merges, then the open worlds."""
    reviews = call("reviews", {}).data["reviews"]
    held = {r["world"] for r in reviews}
    worlds = [b for b in call("branches", {}).data["branches"] if b["name"] != "main"]
    body = [note(*said) if said else "", "<h2>Held merges</h2>", _reviews(reviews)]
    body += [f"<h2>Open worlds ({len(worlds)})</h2>", _worlds(worlds, held)]
    return "Reviews and worlds", "".join(body)


def _reviews(reviews: list[dict]) -> str:
    rows = [
        [
            link("/world", r["world"], name=r["world"]),
            esc(r["owner"]),
            esc(r["policy"] or ""),
            "<br>".join(esc(reason) for reason in r["reasons"]),
            esc(r["asked"]),
            esc(r["version"]),
            "<b>yes</b>" if r["changed_since"] else "no",
            esc(r["changes"]),
            _verdict(r),
        ]
        for r in reviews
    ]
    headers = ["world", "owner", "policy", "reasons", "asked", "held at version"]
    headers += ["changed since", "changes", "reviewer's verdict"]
    return table(headers, rows, "No merge is waiting for a person.")


def _verdict(review: dict) -> str:
    if not review.get("verdict"):
        return ""
    said = f"{review['verdict']} by {review['reviewer']}: {review.get('reason') or ''}"
    return esc(said.rstrip(": "))


def _worlds(worlds: list[dict], held: set[str]) -> str:
    rows = [
        [
            link("/world", w["name"], name=w["name"]),
            esc(w.get("parent", "")),
            esc(w.get("owner", "")),
            value(w["meta"]) if w.get("meta") else "",
            esc(w.get("version", "")),
            esc(w.get("changes", "")),
            "held" if w["name"] in held else "",
        ]
        for w in worlds
    ]
    headers = ["world", "parent", "owner", "meta", "version", "changes", "review"]
    return table(headers, rows, "No world is open.")


def world(call: Call, name: str, doff: int, poff: int, said: Said | None = None) -> tuple[str, str]:
    """One world: what it is, its review, its diff and its merge preview at the version read
    first (approve carries that version: the merge is refused if the world moved on since)."""
    found = [b for b in call("branches", {}).data["branches"] if b["name"] == name]
    if not found or "version" not in found[0]:  # (main has none)
        gone = f"No open world {name}: it was merged or discarded (or never was)."
        return f"World {name}", (note(*said) if said else "") + note(gone, False)
    info = found[0]
    version = info["version"]
    review = next((r for r in call("reviews", {}).data["reviews"] if r["world"] == name), None)
    diff = _diff(call, name, doff, poff)
    preview, current = _preview(call, name, version, doff, poff)
    body = [note(*said) if said else "", _about(info), _review(review, name, version, current)]
    body += ["<h2>Changes</h2>", diff, "<h2>Merge preview</h2>", preview]
    return f"World {name}", "".join(body)


def _about(info: dict) -> str:
    parts = [
        f"<b>version {esc(info['version'])}</b>",
        f"owner {esc(info.get('owner', ''))}",
        f"forked from {esc(info.get('parent', ''))}",
        f"{esc(info.get('changes', 0))} changes",
    ]
    meta = f" · meta {value(info['meta'])}" if info.get("meta") else ""
    return f'<p id="about">{" · ".join(parts)}{meta}</p>'


def _review(review: dict | None, name: str, version: int, current: bool) -> str:
    """The world's review and, while the page shows one version throughout, its buttons."""
    if review is None:
        return '<p class="muted">Not waiting for a review.</p>'
    since = "it changed since" if review["changed_since"] else "it hasn't changed since"
    reasons = "; ".join(review["reasons"])
    said = (
        f"<p>Held by merge policy {esc(review['policy'] or '')}: {esc(reasons)}. "
        f"Held at version {esc(review['version'])} ({since}).</p>"
    )
    if not current:
        return said + note("The world changed while this page was read: reload it.", False)
    approve = form(
        "/approve",
        {"world": name, "version": version},
        f"Approve version {version}",
        "approve",
    )
    reject = form(
        "/reject",
        {"world": name},
        "Reject (discard)",
        "reject",
        confirm=f"Discard {name} and all its changes?",
    )
    return said + f'<div id="decide">{approve}{reject}</div>'


def _diff(call: Call, name: str, doff: int, poff: int) -> str:
    try:
        data = call("diff", {"branch": name, "limit": PAGE, "offset": doff}).data
    except ChronosError as exc:
        return note(exc.message, False)
    schema = data.get("schema", [])
    rows = [[esc(c["key"]), esc(c["kind"]), _fields(c)] for c in data["changes"]]
    total = data["count"] - len(schema)
    shown = len(data["changes"])
    parts = [f'<p id="diff-summary">{esc(data["summary"])}</p>']
    if schema and doff == 0:
        parts.append("".join(f"<p><code>{esc(s['sql'])}</code></p>" for s in schema))
    parts.append(table(["row", "change", "fields (old → new)"], rows, "No row changed."))
    parts.append(pager("/world", "doff", doff, shown, total, PAGE, name=name, poff=poff))
    return f'<div id="diff">{"".join(parts)}</div>'


def _fields(change: dict) -> str:
    """A change field by field: an update's changed fields old → new, an insert's new row, a
    delete's old row."""
    base, ours = change.get("base") or {}, change.get("ours") or {}
    if change["kind"] == "update":
        names = change.get("fields") or [k for k in ours if ours.get(k) != base.get(k)]
    else:
        names = list(ours or base)
    lines = []
    for field in names:
        old = f'<span class="old">{value(base[field])}</span> → ' if field in base else ""
        new = f'<span class="new">{value(ours[field])}</span>' if field in ours else "(deleted)"
        lines.append(f"<div><b>{esc(field)}</b>: {old}{new}</div>")
    return "".join(lines)


def _preview(call: Call, name: str, version: int, doff: int, poff: int) -> tuple[str, bool]:
    """The preview's page at ``version``; False when the world moved on from it."""
    args = {"branch": name, "limit": PAGE, "offset": poff, "version": version}
    try:
        data = call("merge_preview", args).data
    except ChronosError as exc:  # (the world moved on since its version was read, or worse)
        return note(exc.message, False), _version(call, name) == version
    head = (
        f"<p id=preview-summary>Into {esc(data['into'])}: {esc(data['total'])} rows, "
        f"{esc(data['conflicts'])} conflicts, {esc(data['deletes'])} deletes.</p>"
    )
    if data.get("blocked"):
        head += note(str(data["blocked"]), False)
    rows = [_preview_row(r) for r in data["rows"]]
    headers = ["row", "outcome", "why", "base", "ours", "theirs"]
    shown = len(rows)
    more = pager("/world", "poff", poff, shown, data["total"], PAGE, name=name, doff=doff)
    return f'<div id="preview">{head}{table(headers, rows, "Nothing to merge.")}{more}</div>', True


def _version(call: Call, name: str) -> int | None:
    found = [b for b in call("branches", {}).data["branches"] if b["name"] == name]
    return found[0].get("version") if found else None


def _preview_row(row: dict) -> list[str]:
    """A preview row: the fields that differ between the fork point, the world and the parent."""
    sides = [row.get("base"), row.get("ours"), row.get("theirs")]
    differ = render.differing(sides)
    outcome = esc(row["outcome"])
    if row["outcome"] == "conflict":
        outcome = f'<b class="conflict">{outcome}</b>'
    return [esc(row["key"]), outcome, esc(row["detail"]), *(_side(s, differ) for s in sides)]


def _side(side: dict | None, fields: list[str]) -> str:
    if side is None:
        return '<span class="muted">(none)</span>'
    return "".join(f"<div><b>{esc(f)}</b>: {value(side.get(f))}</div>" for f in fields)


def history(call: Call, page: int) -> tuple[str, str]:
    """Main's history, newest first, a page of events (as the history operation shows them)."""
    start = page * HISTORY_PAGE
    if start >= HISTORY_MOST:
        said = (
            f"The page shows main's newest {HISTORY_MOST} events; read older ones with SQL: "
            f"SELECT * FROM chronos_history('main') LIMIT {HISTORY_PAGE} OFFSET {start}"
        )
        return "Main’s history", note(said, False)
    asked = min(HISTORY_MOST, start + HISTORY_PAGE + 1)  # (one more: is there a next page?)
    reply = call("history", {"branch": "main", "limit": asked})
    columns, rows = reply.table or ([], [])
    shown = rows[start : start + HISTORY_PAGE]
    cells = [[esc("" if v is None else v) for v in row] for row in shown]
    parts = [table(columns, cells, "Nothing has happened on main yet.")]
    links = []
    if page > 0:
        links.append(link("/history", "‹ newer", page=page - 1))
    if len(rows) > start + HISTORY_PAGE or start + HISTORY_PAGE >= len(rows) == HISTORY_MOST:
        links.append(link("/history", "older ›", page=page + 1))
    parts.append(f'<p class="pager">Page {page + 1} {" ".join(links)}</p>')
    return "Main’s history", "".join(parts)
