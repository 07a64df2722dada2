"""The review page's HTML parts: the layout (inline CSS, no file or host beyond the page),
tables, values and links. Everything shown is escaped here: a row's value is text, never
markup."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

from .. import render

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:78rem;padding:1rem 1.5rem;
color:#1d232b;background:#fbfbfa}
h1{font-size:1.3rem;margin:.2rem 0 1rem}h2{font-size:1.05rem;margin:1.6rem 0 .5rem}
nav a{margin-right:1rem}a{color:#1858a8}
table{border-collapse:collapse;width:100%;background:#fff;margin:.3rem 0}
th,td{border:1px solid #dde1e6;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}td:first-child{white-space:nowrap}
code,.v{font:12.5px/1.4 ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.old{background:#fdecec}.new{background:#e8f6ea}.conflict{background:#fff4d6}
.note{padding:.6rem .8rem;border-radius:4px;margin:.6rem 0;border:1px solid}
.ok{background:#e8f6ea;border-color:#8fcf9a}.refused{background:#fdecec;border-color:#e6a1a1}
.muted{color:#65707d}.pager a{margin-right:1rem}
form{display:inline-block;margin:.3rem .6rem .3rem 0}
button{font:inherit;padding:.35rem .9rem;border-radius:4px;border:1px solid #888;cursor:pointer}
.approve{background:#1f7a3a;color:#fff;border-color:#1f7a3a}
.reject{background:#fff;color:#a32020;border-color:#a32020}
"""

# (the only script: a reject asks first; its nonce is the page's, as its CSP allows)
SCRIPT = """
for (const f of document.querySelectorAll('form[data-confirm]'))
  f.addEventListener('submit', e => { if (!confirm(f.dataset.confirm)) e.preventDefault(); });
"""


def esc(value: Any) -> str:
    return escape(str(value), quote=True)


def value(v: Any) -> str:
    """A value of a row as JSON text (a string quoted, null, a blob as {"$blob": hex}),
    escaped."""
    shown = json.dumps(v, ensure_ascii=False, default=render.json_default)
    return f'<span class="v">{esc(shown)}</span>'


def link(path: str, text: str, **query: Any) -> str:
    params = {k: v for k, v in query.items() if v is not None}
    href = path + ("?" + urlencode(params) if params else "")
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], empty: str) -> str:
    """A table of cells already made HTML (each cell escaped by who made it)."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="muted">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def note(message: str, ok: bool) -> str:
    kind = "ok" if ok else "refused"
    return f'<div class="note {kind}" role="status" id="message">{esc(message)}</div>'


def pager(path: str, key: str, offset: int, shown: int, total: int, size: int, **query: Any) -> str:
    """``shown`` of ``total`` from ``offset``, with links to the pages before and after."""
    if total <= size and offset == 0:
        return ""
    where = f"{offset + 1}–{offset + shown}" if shown else f"none from {offset + 1}"
    parts = [f"<span>{where} of {total}</span>"]
    if offset > 0:
        parts.append(link(path, "‹ previous", **query, **{key: max(0, offset - size)}))
    if offset + shown < total:
        parts.append(link(path, "next ›", **query, **{key: offset + size}))
    return f'<p class="pager">{" ".join(parts)}</p>'


def form(action: str, fields: dict[str, Any], label: str, css: str, confirm: str = "") -> str:
    """A POST form of hidden fields and one button (``confirm``: asked before it is sent)."""
    hidden = "".join(
        f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in fields.items()
    )
    asks = f' data-confirm="{esc(confirm)}"' if confirm else ""
    return (
        f'<form method="post" action="{esc(action)}"{asks}>{hidden}'
        f'<button type="submit" class="{css}">{esc(label)}</button></form>'
    )


def page(title: str, body: str, folder: str, nonce: str) -> str:
    """The whole page: its title, the navigation, the body."""
    nav = f"<nav>{link('/', 'Reviews and worlds')}{link('/history', 'Main’s history')}</nav>"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)} · chronos {esc(folder)}</title>"
        f'<style nonce="{nonce}">{CSS}</style></head><body>'
        f"{nav}<h1>{esc(title)} <span class=muted>· {esc(folder)}</span></h1>{body}"
        f'<script nonce="{nonce}">{SCRIPT}</script></body></html>'
    )
