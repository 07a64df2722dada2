"""datasette-chronos: Datasette on a chronos folder's ``chronos.db`` shows the app's data.

Installed with the ``datasette`` extra; Datasette finds it by the ``datasette`` entry point
group. For every served file that is a chronos folder's ``chronos.db`` it

* names the database after its folder (every folder's file is ``chronos.db``, which Datasette
  would serve as chronos, chronos_2, ...);
* hides chronos' own tables (what ``catalog.user_tables`` and ``virtual.virtual_tables`` don't
  count as the app's: ``_chronos_*``, Litestream's ``_litestream_*``), refuses their table pages
  and, as chronos' guard does, any query reading the agents' token hashes;
* adds two read-only pages, each also as ``.json``, answered by chronos' own operations: the
  branches (``/-/chronos/<db>/branches``) and a world's diff
  (``/-/chronos/<db>/diff?branch=<name>``), linked from the database's and tables' action menus.

Nothing here writes the file: the operations run on a database whose every connection refuses
to commit a write to main (a commit hook), so a call that would need one (an older file's
upgrade, a schema changed outside chronos) fails instead. Its ``Database`` isn't shared between
threads, so each folder's calls run on one thread of their own, and it stays open for the
process's life: closing a second SQLite's file handle would drop the locks Datasette's SQLite
holds on the same file.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import sqlite3
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import apsw
from datasette import hookimpl  # type: ignore[import-untyped]
from datasette.utils import tilde_decode, tilde_encode  # type: ignore[import-untyped]
from datasette.utils.asgi import NotFound, Response  # type: ignore[import-untyped]

from .. import render
from ..errors import ChronosError
from ..opening import open_more
from ..operations.registry import REGISTRY, Caller
from ..storage.db import DB_FILE, Database
from ..storage.guard import SECRET
from ..storage.schema.catalog import user_tables
from ..storage.schema.virtual import virtual_tables

T = TypeVar("T")

# Who the pages act as: safe mode, so the rights refuse a write too; a bounded call.
CALLER = Caller(name="datasette", mode="safe", max_query_ms=30_000)
PAGE = 50  # changes per page of a diff


class Folder:
    """One chronos folder Datasette serves: what it hides, and its operations' thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._catalog: apsw.Connection | None = None
        self._hidden: tuple[int, frozenset[str]] = (-1, frozenset())
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"chronos {path.parent.name}")
        self._database: Database | None = None  # (opened on its thread, at the first call)

    def hidden(self) -> frozenset[str]:
        """Chronos' own tables in the file (lower case), read again when its schema changes."""
        with self._lock:
            if self._catalog is None:
                self._catalog = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
            conn = self._catalog
            version = int(conn.execute("pragma schema_version").fetchall()[0][0] or 0)
            if version != self._hidden[0]:
                self._hidden = (version, chronos_tables(conn))
            return self._hidden[1]

    def metadata(self) -> dict:
        """Datasette's metadata of the database: chronos' tables hidden (made afresh each
        time: Datasette merges the local metadata into what a hook returns)."""
        return {"tables": {name: {"hidden": True} for name in self.hidden()}}

    async def run(self, work: Callable[[Database], T]) -> T:
        """``work(database)`` on this folder's thread."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._call, work)

    def _call(self, work: Callable[[Database], T]) -> T:
        _refused.write = False
        try:
            if self._database is None:
                self._database = open_more(self.path.parent, refuse_writes)
            return work(self._database)
        except apsw.Error as error:
            if not _refused.write:
                raise
            raise ChronosError(
                f"chronos would have to write {self.path} to answer (an older file's upgrade, "
                "or a schema changed outside chronos), and these pages only read: run a chronos "
                f"command on {self.path.parent} once, then ask again"
            ) from error


def chronos_tables(conn: apsw.Connection) -> frozenset[str]:
    """Main's tables that aren't the app's, as chronos' catalog tells them (lower case):
    chronos' own and Litestream's, and SQLite's sqlite_sequence (there once adopting made the
    keys AUTOINCREMENT). Chronos keeps no view in the file (a world's are TEMP)."""
    app = {name.lower() for name in [*user_tables(conn), *virtual_tables(conn)]}
    rows = conn.execute(
        "select name from pragma_table_list where schema = 'main' and type in ('table', 'virtual')"
    ).fetchall()
    names = {str(name).lower() for (name,) in rows}
    return frozenset(names - app)


_refused = threading.local()  # (a write was turned back in the call on this thread)


def refuse_writes(conn: apsw.Connection) -> None:
    """A connection that never commits a write to the file: its commit turns into a rollback
    (TEMP objects, which a world's session is made of, are the connection's own)."""

    def commit() -> bool:
        refused = conn.txn_state("main") == apsw.SQLITE_TXN_WRITE
        _refused.write = getattr(_refused, "write", False) or refused
        return refused

    conn.set_commit_hook(commit)


# A chronos folder's file holds chronos' world catalog.
WORLD_CATALOG = "select 1 from sqlite_master where type = 'table' and name = '_chronos_worlds'"

# Each Datasette's chronos databases, by the name Datasette serves them under.
_SERVED: weakref.WeakKeyDictionary[Any, dict[str, Folder]] = weakref.WeakKeyDictionary()


def served(datasette: Any) -> dict[str, Folder]:
    return _SERVED.get(datasette, {})


# --- what Datasette shows of the file ------------------------------------------------------


@hookimpl
def startup(datasette: Any) -> Callable[[], Any]:
    async def name_after_folders() -> None:
        # Datasette named each file by its stem; a chronos file takes its folder's name
        # (add_database makes it unique). All are added again in order, to keep the order.
        folders: dict[str, Folder] = {}
        for name, db in list(datasette.databases.items()):
            if name == "_internal" or db.path is None:
                continue
            path = Path(db.path).resolve()
            chronos = path.name == DB_FILE and bool((await db.execute(WORLD_CATALOG)).rows)
            datasette.remove_database(name)
            added = datasette.add_database(db, name=path.parent.name if chronos else name)
            if chronos:
                folders[added.name] = Folder(path)
        _SERVED[datasette] = folders

    return name_after_folders


@hookimpl
def get_metadata(datasette: Any, key: str, database: str | None, table: str | None) -> dict:
    hidden = {name: folder.metadata() for name, folder in served(datasette).items()}
    return {"databases": hidden} if hidden else {}


@hookimpl
def permission_allowed(datasette: Any, actor: Any, action: str, resource: Any) -> bool | None:
    # Hidden is not enough: chronos' tables hold the agents and their audit
    if action == "view-table" and isinstance(resource, tuple | list):
        database, table = resource
        folder = served(datasette).get(database)
        name = str(table).lower()
        if folder is not None and name in folder.hidden() and not name.startswith("sqlite_"):
            return False
    return None


@hookimpl
def prepare_connection(conn: sqlite3.Connection, database: str, datasette: Any) -> None:
    # As chronos' guard: no query on a chronos file reads the agents' token hashes.
    try:
        ours = conn.execute(WORLD_CATALOG).fetchall()
    except sqlite3.Error:
        return
    if ours:
        conn.set_authorizer(_no_secrets)


def _no_secrets(action: int, one: str | None, two: str | None, db: str | None, _: Any) -> int:
    if action == sqlite3.SQLITE_READ and (two or "").lower() in SECRET.get((one or "").lower(), ()):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


# --- the action menus ------------------------------------------------------------------------


def _links(datasette: Any, database: str) -> list[dict[str, str]]:
    if database not in served(datasette):
        return []
    href = datasette.urls.path(f"/-/chronos/{tilde_encode(database)}/branches")
    return [{"href": href, "label": "Branches and their changes (chronos)"}]


@hookimpl
def database_actions(datasette: Any, actor: Any, database: str, request: Any) -> list:
    return _links(datasette, database)


@hookimpl
def table_actions(datasette: Any, actor: Any, database: str, table: str, request: Any) -> list:
    return _links(datasette, database)


# --- the pages -------------------------------------------------------------------------------


@hookimpl
def register_routes() -> list[tuple[str, Callable]]:
    return [
        (r"^/-/chronos/(?P<database>[^/]+)/branches(?P<format>\.json)?$", branches_page),
        (r"^/-/chronos/(?P<database>[^/]+)/diff(?P<format>\.json)?$", diff_page),
    ]


async def _folder(datasette: Any, request: Any) -> tuple[str, Folder]:
    name = tilde_decode(request.url_vars["database"])
    folder = served(datasette).get(name)
    if folder is None:
        raise NotFound(f"{name} is not a chronos database served here")
    await datasette.ensure_permissions(request.actor, [("view-database", name), "view-instance"])
    return name, folder


def _moment(seconds: float | None) -> str:
    if seconds is None:
        return ""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def list_branches(database: Database) -> list[dict[str, Any]]:
    """main and the open worlds, as chronos' branches operation has them."""
    reply = REGISTRY.call(database, "branches", {}, CALLER)
    created = {world.name: world.created for world in reply.value}
    return [
        {
            "name": row["name"],
            "parent": row.get("parent"),
            "created": _moment(created.get(row["name"])),
            "changes": row.get("changes"),
            "version": row.get("version"),
            "owner": row.get("owner"),
        }
        for row in reply.data["branches"]
    ]


def world_diff(branch: str, offset: int) -> Callable[[Database], dict[str, Any]]:
    """A page of the world's changes, as chronos' diff operation gives them."""

    def work(database: Database) -> dict[str, Any]:
        args = {"branch": branch, "limit": PAGE, "offset": offset}
        return REGISTRY.call(database, "diff", args, CALLER).data

    return work


def _shown(value: Any) -> str:
    """A row's value as JSON text: a string quoted, null, a blob as {"$blob": hex}."""
    return json.dumps(value, ensure_ascii=False, default=render.json_default)


def diff_rows(changes: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One line per changed column of an update; an insert's or a delete's whole row."""
    lines = []
    for change in changes:
        base, ours = change.get("base") or {}, change.get("ours") or {}
        columns = change.get("fields") or list(ours or base)
        for column in columns:
            lines.append(
                {
                    "table": change["table"],
                    "id": change["id"],
                    "kind": change["kind"],
                    "column": column,
                    "before": _shown(base[column]) if column in base else "",
                    "after": _shown(ours[column]) if column in ours else "",
                }
            )
    return lines


async def _error(datasette: Any, request: Any, error: ChronosError, json_wanted: bool) -> Response:
    if json_wanted:
        return Response.json({"ok": False, "error": error.message, "code": error.code}, status=400)
    page = datasette.jinja_env.from_string(ERROR)
    html = await datasette.render_template(page, {"message": error.message}, request=request)
    return Response.html(html, status=400)


async def branches_page(datasette: Any, request: Any) -> Response:
    name, folder = await _folder(datasette, request)
    wanted_json = bool(request.url_vars.get("format"))
    try:
        branches = await folder.run(list_branches)
    except ChronosError as error:
        return await _error(datasette, request, error, wanted_json)
    if wanted_json:
        return Response.json({"database": name, "branches": branches})
    base = f"/-/chronos/{tilde_encode(name)}/diff?"
    for branch in branches:
        if branch["parent"]:
            branch["href"] = datasette.urls.path(base + urlencode({"branch": branch["name"]}))
    context = {"name": name, "database_url": datasette.urls.database(name), "branches": branches}
    page = datasette.jinja_env.from_string(BRANCHES)
    return Response.html(await datasette.render_template(page, context, request=request))


async def diff_page(datasette: Any, request: Any) -> Response:
    name, folder = await _folder(datasette, request)
    wanted_json = bool(request.url_vars.get("format"))
    branch = request.args.get("branch") or ""
    offset = request.args.get("offset") or "0"
    try:
        if not offset.isdigit():
            raise ChronosError(f"offset is a number of changes to skip, not {offset!r}")
        data = await folder.run(world_diff(branch, int(offset)))
    except ChronosError as error:
        return await _error(datasette, request, error, wanted_json)
    viewable: dict[str, bool] = {}  # (a table's permission, asked once)
    for table in {change["table"] for change in data.get("changes", [])}:
        viewable[table] = await _may_view(datasette, request, name, table)
    changes = [change for change in data.get("changes", []) if viewable[change["table"]]]
    left_out = len(data.get("changes", [])) - len(changes)
    if wanted_json:
        return Response.json({"database": name, **data, "changes": changes, "left_out": left_out})
    following = int(offset) + PAGE
    more = following < (data.get("count") or 0)
    query = urlencode({"branch": branch, "offset": following})
    context = {
        "name": name,
        "branch": branch,
        "summary": data.get("summary", ""),
        "rows": diff_rows(changes),
        "left_out": left_out,
        "branches_url": datasette.urls.path(f"/-/chronos/{tilde_encode(name)}/branches"),
        "next_url": datasette.urls.path(f"/-/chronos/{tilde_encode(name)}/diff?{query}")
        if more
        else None,
        "database_url": datasette.urls.database(name),
    }
    page = datasette.jinja_env.from_string(DIFF)
    return Response.html(await datasette.render_template(page, context, request=request))


async def _may_view(datasette: Any, request: Any, database: str, table: str) -> bool:
    """A table's changes show when its page would (a table Datasette's permissions hide, its
    rows too)."""
    allowed = await datasette.permission_allowed(
        request.actor, "view-table", (database, table), default=True
    )
    return bool(allowed)


# Datasette's own layout; its Jinja environment escapes every value put in.
BRANCHES = """{% extends "base.html" %}
{% block title %}Branches of {{ name }}{% endblock %}
{% block content %}
<h1>Branches of <a href="{{ database_url }}">{{ name }}</a></h1>
<p>main and its open worlds, read only. A world's changes show on its diff.</p>
<table class="rows-and-columns">
<thead><tr><th>name</th><th>parent</th><th>created</th><th>changes</th><th>version</th>
<th>owner</th></tr></thead>
<tbody>
{% for b in branches %}<tr><td>{% if b.href %}<a href="{{ b.href }}">{{ b.name }}</a>
{% else %}{{ b.name }}{% endif %}</td><td>{{ b.parent or "" }}</td><td>{{ b.created }}</td>
<td>{{ b.changes if b.changes is not none else "" }}</td>
<td>{{ b.version if b.version is not none else "" }}</td><td>{{ b.owner or "" }}</td></tr>
{% endfor %}</tbody></table>
{% endblock %}"""

DIFF = """{% extends "base.html" %}
{% block title %}{{ branch }}: changes in {{ name }}{% endblock %}
{% block content %}
<h1>{{ branch }} in <a href="{{ database_url }}">{{ name }}</a></h1>
<p><a href="{{ branches_url }}">all branches</a></p>
<p>{{ summary }}</p>
{% if left_out %}<p>{{ left_out }} changes to tables you may not view are left out.</p>{% endif %}
<table class="rows-and-columns">
<thead><tr><th>table</th><th>id</th><th>change</th><th>column</th><th>before</th><th>after</th>
</tr></thead>
<tbody>
{% for r in rows %}<tr><td>{{ r.table }}</td><td>{{ r.id }}</td><td>{{ r.kind }}</td>
<td>{{ r.column }}</td><td><code>{{ r.before }}</code></td><td><code>{{ r.after }}</code></td></tr>
{% endfor %}</tbody></table>
{% if next_url %}<p><a href="{{ next_url }}">the next changes</a></p>{% endif %}
{% endblock %}"""

ERROR = """{% extends "base.html" %}
{% block title %}chronos{% endblock %}
{% block content %}<p class="message-error">{{ message }}</p>{% endblock %}"""
