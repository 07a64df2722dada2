"""The operations of the registry: handlers and their text renderings.

Each handler takes the database, validated arguments and the caller, and returns a Reply whose
text is what every front end shows (the shell's output for the same command).
"""

from __future__ import annotations

import json
from typing import Any

from . import (
    budget,
    describe,
    events,
    loading,
    prune,
    render,
    restore,
    rights,
    rows,
    sqlrun,
    timetravel,
    undo,
)
from .db import Database
from .errors import NOT_FOUND, ChronosError
from .merge import apply as merge_apply
from .merge import diff as merge_diff
from .merge import preview as merge_preview
from .merge import rebase as merge_rebase
from .registry import REGISTRY, Args, Caller, Reply, operation


def _short(sql: str) -> str:
    """A statement as named in data: its start (the caller has the rest)."""
    return sql if len(sql) <= 200 else sql[:197] + "..."


def _branch(args: dict[str, Any]) -> str:
    return args.get("branch") or "main"


@operation(
    "describe",
    "Describe the tables",
    "Tables with row counts, their fields with types, keys and rules, an example or the allowed "
    "values of each, and a sample row, on any branch (default main). Call this first.",
    read_only=True,
    idempotent=True,
)
def describe_op(db: Database, args: dict, caller: Caller) -> Reply:
    text, data = describe.describe(db, _branch(args), args.get("table"))
    return Reply(text, data)


@operation(
    "sql",
    "Run SQL",
    "Runs SQL on a branch, as its own session: one or more statements, $1, $2, ... bound from "
    "params. Statements without BEGIN run as one transaction (a failure rolls back the whole "
    "call); BEGIN ... COMMIT must both be in the call. Returns each result as a psql-style "
    "table, or a statement's tag (UPDATE 1). Select only the rows and columns you need (use "
    "LIMIT; read long values in parts with substr()): over MCP a result holds at most 1000 "
    "rows and 24,000 characters, and says how to page on; a call may run 30 s (safe mode). "
    "Chronos' statements run "
    "their operation, one per call: SHOW WORLDS, DIFF [branch] [TO other] [AS SQL], MERGE "
    "WORLD name DRY RUN, SHOW HISTORY [branch], FORK WORLD name, ...; and SELECT ... FROM t AS "
    "OF '<moment>' reads a table as it was.",
    destructive=True,
)
def sql_op(db: Database, args: Args, caller: Caller) -> Reply:
    branch = _branch(args)
    access = rights.sql_access(db, args.given("branch"), caller)  # (none isn't branch="main")
    outcome = sqlrun.run(db, branch, args["sql"], args.get("params"), caller, access)
    parts, data = [], []
    for result in outcome.results:
        if result.columns is not None:
            text = render.table(result.columns, result.rows)
            if result.more:  # cut for a client with a result size limit
                read = result.read or budget.Read()
                text += "\n" + budget.note(read, caller.budget, result.columns)
            parts.append(text)
            data.append(
                {
                    "statement": _short(result.sql),
                    "columns": result.columns,
                    "rows": [[render.json_value(v) for v in row] for row in result.rows],
                    "more": result.more,
                }
            )
            if result.read is not None and result.read.cut:  # values only begun
                data[-1]["cut"] = [result.columns[i] for i in result.read.cut]
        else:
            parts.append(result.tag)
            data.append({"statement": _short(result.sql), "tag": result.tag})
        if result.report is not None:  # a chronos statement: its operation's data too
            data[-1]["data"] = result.report
    if outcome.rolled_back_open:
        parts.append(
            "ROLLBACK: the call ended with its transaction still open, so it was rolled back; "
            "put COMMIT in the same call"
        )
    return Reply(
        "\n".join(parts),
        {"branch": outcome.branch, "results": data, "rolled_back": outcome.rolled_back_open},
    )


@operation(
    "get",
    "Read one row",
    "Reads one row by its id (its primary key as text).",
    read_only=True,
    idempotent=True,
)
def get_op(db: Database, args: dict, caller: Caller) -> Reply:
    longest = caller.max_chars // 5 if caller.max_chars else None  # (text and data: twice)
    t, row, cut = rows.get_within(db, _branch(args), args["table"], args["id"], longest)
    if row is None:
        raise ChronosError(f"no row {t.name}/{args['id']} on {_branch(args)}", NOT_FOUND)
    text = f"{t.name}/{args['id']} {render.row_json(row)}"
    data = {"table": t.name, "id": args["id"], "row": render.json_row(row)}
    if cut:  # too long for a reply: each long value's beginning, and how to read the rest
        text += (
            f"\n(the values of {', '.join(cut)} are only their first {longest:,} characters "
            f"(bytes of a blob): read them in parts with the sql tool, e.g. select "
            f"substr({cut[0]}, {longest + 1}, {longest}) ...)"
        )
        data["cut"] = cut
    return Reply(text, data)


@operation(
    "put",
    "Create or replace one row",
    "Creates or replaces one row (the whole row: columns left out get their default).",
    destructive=True,
    idempotent=True,
)
def put_op(db: Database, args: dict, caller: Caller) -> Reply:
    branch = _branch(args)
    created = rows.put(db, branch, args["table"], args["id"], args["record"])
    verb = "created" if created else "replaced"
    _, t = db.table(args["table"], db.resolve(branch))
    return Reply(
        f"{verb} {t.name}/{args['id']} on {branch}",
        {"table": t.name, "id": args["id"], "created": created, "branch": branch},
    )


@operation(
    "insert",
    "Load a file into a table",
    "Loads the rows of a CSV, TSV, JSON (an array of objects) or NDJSON file on the local disk "
    "into a table on a branch, all in one transaction (a bad row and nothing is inserted); "
    "creates the table if missing, its column types detected (pk: its primary key). upsert: "
    "insert or update by primary key. Not an MCP tool: it reads the local disk.",
    destructive=True,
    mcp=False,
)
def insert_op(db: Database, args: dict, caller: Caller) -> Reply:
    done = loading.insert(
        db,
        _branch(args),
        args["table"],
        args["file"],
        args.get("pk"),
        bool(args.get("upsert")),
        args.get("format"),
        args.get("encoding"),
    )
    noun = "row" if done.rows == 1 else "rows"
    verb = "upserted" if done.upsert else "inserted"
    text = f"{verb} {done.rows} {noun} into {done.table} on {done.branch}"
    if done.created is not None:
        made = done.created.removeprefix("create table ")
        text = f"created table {made} on {done.branch} and {verb} {done.rows} {noun}"
    if done.upsert:
        text += f" ({done.inserted} inserted, {done.updated} updated)"
    if not done.rows:
        text += f" ({done.file} holds no rows)"
    return Reply(text, done.data())


@operation(
    "delete", "Delete one row", "Deletes one row by its id.", destructive=True, idempotent=True
)
def delete_op(db: Database, args: dict, caller: Caller) -> Reply:
    branch = _branch(args)
    rows.delete(db, branch, args["table"], args["id"])
    _, t = db.table(args["table"], db.resolve(branch))
    return Reply(
        f"deleted {t.name}/{args['id']} on {branch}",
        {"table": t.name, "id": args["id"], "branch": branch},
    )


@operation(
    "fork",
    "Create a branch",
    "Creates a branch: an instant private copy of main (or of another branch) to change freely. "
    'Put notes in meta, e.g. {"task": "..."}. Then pass branch="<name>" to other tools.',
)
def fork_op(db: Database, args: dict, caller: Caller) -> Reply:
    source = args.get("from") or "main"
    world = db.fork(args["name"], source, args.get("meta"), owner=caller.name)
    caller.own_worlds.add(world.wid)
    return Reply(
        f"created branch {world.name} (world id {world.wid}) from {source}; "
        f'pass branch="{world.name}" to work on it',
        _world_data(db, world),
    )


@operation(
    "set_meta",
    "Set a branch's notes",
    "Merges a JSON object into a branch's metadata; a null value removes a key.",
    idempotent=True,
)
def set_meta_op(db: Database, args: dict, caller: Caller) -> Reply:
    world = db.set_meta(args["branch"], args["meta"])
    return Reply(
        f"{world.name}: {json.dumps(world.meta, ensure_ascii=False)}",
        {"branch": world.name, "meta": world.meta},
    )


@operation(
    "branches",
    "List branches",
    "Lists branches (main and every open world) with their parent, number of changes, "
    "version, owner and notes.",
    read_only=True,
    idempotent=True,
)
def branches_op(db: Database, args: dict, caller: Caller) -> Reply:
    worlds = db.worlds()
    columns = ["name", "world_id", "parent", "changes", "version", "owner", "meta"]
    table_rows: list[list[Any]] = [["main", None, None, None, None, None, None]]
    data = [{"name": "main"}]
    for w in worlds:
        item = _world_data(db, w)
        data.append(item)
        table_rows.append(
            [
                w.name,
                w.wid,
                w.parent,
                item["changes"],
                w.version,
                w.owner,
                json.dumps(w.meta, ensure_ascii=False) if w.meta else None,
            ]
        )
    return Reply(render.table(columns, table_rows), {"branches": data}, (columns, table_rows))


@operation(
    "discard",
    "Throw a branch away",
    "Throws a branch and its changes away. A branch with branches forked from it is "
    "refused unless cascade=true, which discards them too.",
    destructive=True,
)
def discard_op(db: Database, args: dict, caller: Caller) -> Reply:
    gone = db.discard(args["branch"], bool(args.get("cascade")))
    names = ", ".join(f"{w.name} (world id {w.wid})" for w in gone)
    noun = "branch" if len(gone) == 1 else "branches"
    return Reply(f"discarded {noun} {names}", {"discarded": [w.name for w in gone]})


def _world_data(db: Database, world: Any) -> dict:
    return {
        "name": world.name,
        "world_id": world.wid,
        "parent": world.parent,
        "changes": merge_diff.diff(db, world.name).count,  # as diff counts them
        "version": world.version,
        "owner": world.owner,
        "meta": world.meta,
    }


__all__ = ["REGISTRY"]


# --- diff and merge (chronos_lite/merge) ------------------------------------------------------


def _merge_options(args: dict) -> merge_apply.Options:
    return merge_apply.Options(
        resolve=args.get("resolve") or "fail",
        by_columns=bool(args.get("by_columns")),
        rows=args.get("rows") or {},
        only_tables=args.get("only_tables"),
        only_keys=args.get("only_keys"),
        into=args.get("into"),
    )


@operation(
    "diff",
    "What changed",
    "What changed on a branch since it was forked, row by row and field by field: the count "
    "and a line per table first, the deleted rows first with what they held, then "
    "'+ table/id {row}' and '~ table/id field: old -> new'. Pages of limit (default 20; ask "
    "for small pages) from offset. to: compare with another branch. as_sql: the change as SQL "
    "statements. count: the count line alone. readers: what reads the changed columns.",
    read_only=True,
    idempotent=True,
)
def diff_op(db: Database, args: dict, caller: Caller) -> Reply:
    branch = args["branch"]
    d = (
        merge_diff.compare(db, branch, args["to"])
        if args.get("to")
        else merge_diff.diff(db, branch)
    )
    if args.get("readers"):
        text, found = merge_preview.readers(db, d)
        return Reply(text, {"branch": branch, "readers": found})
    data = {"branch": branch, "count": d.count, "summary": d.summary()}
    if args.get("count"):
        return Reply(d.summary(), data)
    ordered = d.ordered()
    offset, limit = args.get("offset", 0), args.get("limit", 20)
    page = ordered[offset : offset + limit]
    data["changes"] = [merge_diff.change_data(c) for c in page]
    schema = [s.op.sql(s.table) + ";" for s in d.schema] if offset == 0 else []
    if d.schema:
        data["schema"] = [
            {"table": s.table, "kind": s.op.kind, "sql": s.op.sql(s.table)} for s in d.schema
        ]
    if args.get("as_sql"):
        footer = merge_diff.page_footer(offset, len(page), len(ordered), "changes", "diff")
        text = "\n".join(
            [f"-- {d.summary()}", *schema, *(merge_diff.change_sql(c) for c in page)]
            + ([f"-- {footer}"] if footer else [])
        )
        return Reply(text, data)
    return Reply(merge_diff.render(d, limit, offset), data)


@operation(
    "merge",
    "Merge a branch",
    "Applies a branch's changes to its parent and finishes the branch. If rows both sides "
    "changed, nothing is merged and the conflicts come back (base, ours, theirs), with a hint: "
    "settle with resolve (ours | theirs), by_columns, rows, or look with merge_preview. With "
    "only_tables, only_keys or into, just those rows merge (or go to another branch) and the "
    "branch stays. version: merge only if the branch is still at that version.",
    destructive=True,
)
def merge_op(db: Database, args: dict, caller: Caller) -> Reply:
    name = args["branch"]
    p = merge_apply.merge(
        db,
        name,
        _merge_options(args),
        args.get("version"),
        args.get("confirm_deletes"),
        args.get("target"),
        bool(args.get("confirm")),
    )
    n = len(p.writes) + len(p.schema)
    noun = "change" if n == 1 else "changes"
    text = f"merged {n} {noun} from {name} into {p.parent_name}"
    if p.partial:
        text += f"; {name} stays open"
    kept = [o for o in p.outcomes if o.outcome == "theirs"]
    if kept:
        text += f" ({len(kept)} kept as {p.parent_name} had them)"
    return Reply(text, {"branch": name, "into": p.parent_name, "merged": n, "open": p.partial})


@operation(
    "merge_preview",
    "Preview a merge",
    "What merge would do with the same parameters, without doing it: a row per table first "
    "(outcome summary), then the rows it deletes, then the rest, each with its outcome (apply, "
    "conflict, combined, theirs, by hand), why, and the base, ours, theirs and result rows. "
    "Pages of limit (default 20) from offset; pass the version it names with later pages and "
    "with merge.",
    read_only=True,
    idempotent=True,
)
def merge_preview_op(db: Database, args: dict, caller: Caller) -> Reply:
    text, data = merge_preview.preview(
        db,
        args["branch"],
        _merge_options(args),
        args.get("limit", 20),
        args.get("offset", 0),
        args.get("version"),
    )
    return Reply(text, data)


@operation(
    "rebase",
    "Rebase a branch",
    "Moves a branch's fork point up to its parent as it is now, keeping the branch's own "
    "changes on top, without changing the parent. Conflicts settle as in merge (resolve, "
    "by_columns, rows) or the rebase is refused with nothing changed. Returns REBASE n, n the "
    "parent's rows it took in.",
)
def rebase_op(db: Database, args: dict, caller: Caller) -> Reply:
    n = merge_rebase.rebase(db, args["branch"], _merge_options(args), args.get("version"))
    return Reply(f"REBASE {n}", {"branch": args["branch"], "taken": n})


# --- putting a branch back (chronos_lite/restore.py) -----------------------------------------


@operation(
    "restore",
    "Put a branch back to a moment",
    "Puts a branch back as it was at a moment (a time like 2026-11-30 10:00, or a time ago "
    "like -10 minutes), as an ordinary write: every row that differs is written back, and "
    "history keeps both, so the restore can be undone too.",
    destructive=True,
)
def restore_op(db: Database, args: dict, caller: Caller) -> Reply:
    when = timetravel.checked_moment(db, args["at"])
    done = restore.restore(db, args["branch"], when, args["at"])
    return _restored(done, f"to {timetravel.show_moment(when)}")


@operation(
    "checkpoint",
    "Name a moment",
    "Names this moment of a branch (e.g. before-migration), to go back to with rollback.",
)
def checkpoint_op(db: Database, args: dict, caller: Caller) -> Reply:
    when = restore.checkpoint(db, args["branch"], args["name"])
    text = f"checkpoint {args['name']}: {args['branch']} at {timetravel.show_moment(when)}"
    return Reply(text, {"branch": args["branch"], "checkpoint": args["name"], "at": when})


@operation(
    "rollback",
    "Go back to a checkpoint",
    "Puts a branch back as it was at one of its checkpoints, as an ordinary write (its history "
    "keeps the rest).",
    destructive=True,
)
def rollback_op(db: Database, args: dict, caller: Caller) -> Reply:
    when = restore.checkpoint_time(db, args["branch"], args["checkpoint"])
    timetravel.checked_moment(db, f"checkpoint {args['checkpoint']}", when)
    done = restore.restore(db, args["branch"], when, args["checkpoint"], "rollback")
    return _restored(done, f"to checkpoint {args['checkpoint']} ({timetravel.show_moment(when)})")


def _restored(done: restore.Restored, to: str) -> Reply:
    noun = "row" if done.rows == 1 else "rows"
    return Reply(
        f"restored {done.branch} {to}: {done.rows} {noun} written back",
        {"branch": done.branch, "at": done.when, "rows": done.rows},
    )


# --- history and undo (chronos_lite/events.py, chronos_lite/undo.py) -------------------------


@operation(
    "history",
    "What happened to a branch",
    "What happened to a branch recently, newest first: forks, writes (per call, with the rows "
    "they changed, and on main the writes apps made directly), merges, rebases, restores, "
    "rollbacks, checkpoints, discards; who did each. limit: how many (default 30; ask for "
    "small pages).",
    read_only=True,
    idempotent=True,
)
def history_op(db: Database, args: dict, caller: Caller) -> Reply:
    branch = args["branch"]
    found = events.listing(
        db.main.conn, events.branch_id(db, branch), db.tables(), args.get("limit", 30)
    )
    rows = events.table_rows(found)
    text = render.table(events.COLUMNS, rows)
    return Reply(text, {"branch": branch, "events": found}, (events.COLUMNS, rows))


@operation(
    "undo_merge",
    "Undo a merge",
    "Puts back, in the parent, every row the branch's latest merge changed. Refuses if some "
    "were changed since, naming them; skip_changed=true leaves those alone.",
    destructive=True,
)
def undo_merge_op(db: Database, args: dict, caller: Caller) -> Reply:
    done = undo.undo_merge(db, args["branch"], bool(args.get("skip_changed")))
    noun = "row" if done.rows == 1 else "rows"
    text = f"undid the merge of {args['branch']} into {done.parent}: {done.rows} {noun} put back"
    if done.skipped:
        text += f"; {len(done.skipped)} changed since left alone ({', '.join(done.skipped[:10])})"
    return Reply(
        text,
        {"branch": args["branch"], "into": done.parent, "rows": done.rows, "skipped": done.skipped},
    )


@operation(
    "config",
    "Show or change a setting",
    "Shows or changes a setting of the database: retention, how long every version of every "
    "row is kept (default 7 days); expired history is pruned in the background.",
    mcp=False,
)
def config_op(db: Database, args: dict, caller: Caller) -> Reply:
    conn = db.main.conn
    if args.get("value") is not None:
        seconds = timetravel.parse_span(args["value"])
        with db.write(conn):
            conn.execute("insert or replace into _chronos_meta values ('retention', ?)", (seconds,))
        prune.prune(db)
    kept = timetravel.retention(conn)
    text = f"retention: {timetravel.show_span(kept)} (every version of every row is kept that long)"
    return Reply(text, {"retention": timetravel.show_span(kept), "seconds": kept})


@operation(
    "undo_agent",
    "Undo an agent",
    "Writes back everything one agent (a caller's name: owner, mcp, an agent) changed since a "
    "moment, on main and on every open branch, leaving everyone else's changes alone: rows "
    "someone changed after the agent are named, not overwritten. run: only that run's "
    "changes. The SQL statement UNDO AGENT <name> SINCE '<moment>' runs it.",
    destructive=True,
    mcp=False,
)
def undo_agent_op(db: Database, args: dict, caller: Caller) -> Reply:
    done = undo.undo_agent(db, args["agent"], args["since"], args.get("run"))
    noun = "row" if done.rows == 1 else "rows"
    text = f"UNDO AGENT {args['agent']}: {done.rows} {noun} put back"
    if done.branches:
        text += f" (on {', '.join(done.branches)})"
    if done.named:
        text += (
            f"; {len(done.named)} changed since by someone else, left alone: "
            f"{', '.join(done.named[:20])}"
        )
    return Reply(text, {"rows": done.rows, "branches": done.branches, "named": done.named})
