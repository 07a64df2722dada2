"""History and going back: restore, checkpoints, rollback, the history, undoing a merge or an
agent's writes, the settings.

Each handler takes the database, validated arguments and the caller, and returns a Reply whose
text is what every front end shows (the shell's output for the same command)."""

from __future__ import annotations

from .. import render
from ..errors import BAD_ARGUMENT, ChronosError
from ..history import prune, restore, undo
from ..storage import events, moments
from ..storage.db import Database
from ..storage.world import state as worldstate
from . import agentrights
from .registry import Caller, Reply, operation


@operation(
    "restore",
    "Put a branch back to a moment",
    "Puts a branch back as it was at a moment, as an ordinary (undoable) write.",
    destructive=True,
)
def restore_op(db: Database, args: dict, caller: Caller) -> Reply:
    when = moments.checked_moment(db, args["at"])
    done = restore.restore(db, args["branch"], when, args["at"])
    return _restored(done, f"to {moments.show_moment(when)}")


@operation(
    "checkpoint",
    "Name a moment",
    "Names this moment of a branch, to go back to with rollback.",
)
def checkpoint_op(db: Database, args: dict, caller: Caller) -> Reply:
    when = restore.checkpoint(db, args["branch"], args["name"])
    text = f"checkpoint {args['name']}: {args['branch']} at {moments.show_moment(when)}"
    return Reply(text, {"branch": args["branch"], "checkpoint": args["name"], "at": when})


@operation(
    "rollback",
    "Go back to a checkpoint",
    "Puts a branch back as it was at one of its checkpoints.",
    destructive=True,
)
def rollback_op(db: Database, args: dict, caller: Caller) -> Reply:
    when = restore.checkpoint_time(db, args["branch"], args["checkpoint"])
    moments.checked_moment(db, f"checkpoint {args['checkpoint']}", when)
    done = restore.restore(db, args["branch"], when, args["checkpoint"], "rollback")
    return _restored(done, f"to checkpoint {args['checkpoint']} ({moments.show_moment(when)})")


def _restored(done: restore.Restored, to: str) -> Reply:
    noun = "row" if done.rows == 1 else "rows"
    return Reply(
        f"restored {done.branch} {to}: {done.rows} {noun} written back",
        {"branch": done.branch, "at": done.when, "rows": done.rows},
    )


# --- history and undo (storage/events.py, history/undo.py) --------------------------------------


@operation(
    "history",
    "What happened to a branch",
    "What happened to a branch, newest first, and who did it. Ask for small pages.",
    read_only=True,
    idempotent=True,
)
def history_op(db: Database, args: dict, caller: Caller) -> Reply:
    branch = args["branch"]
    found = events.listing(
        db.main.conn,
        events.branch_id(db.main.conn, branch, db.world),
        db.tables(),
        args.get("limit", 30),
    )
    rows = events.table_rows(found)
    text = render.table(events.COLUMNS, rows)
    return Reply(text, {"branch": branch, "events": found}, (events.COLUMNS, rows))


@operation(
    "undo_merge",
    "Undo a merge",
    "Puts back, in the parent, every row a branch's latest merge changed.",
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
    "row is kept (default 7 days; expired history is pruned in the background); whole_rows, "
    "the most rows of a changed table a world's connection copies whole, to read it as fast "
    "as main (default 100000; a bigger table reads main's rows and the world's apart).",
    mcp=False,
)
def config_op(db: Database, args: dict, caller: Caller) -> Reply:
    if args["setting"] == "whole_rows":
        return _whole_rows(db, args.get("value"))
    conn = db.main.conn
    if args.get("value") is not None:
        seconds = moments.parse_span(args["value"])
        with db.write(conn):
            conn.execute("insert or replace into _chronos_meta values ('retention', ?)", (seconds,))
        prune.prune(db)
    kept = moments.retention(conn)
    text = f"retention: {moments.show_span(kept)} (every version of every row is kept that long)"
    return Reply(text, {"retention": moments.show_span(kept), "seconds": kept})


def _whole_rows(db: Database, value: str | None) -> Reply:
    conn = db.main.conn
    if value is not None:
        if not value.strip().isdigit():
            raise ChronosError(
                f"whole_rows is a number of rows (e.g. 50000; 0: no table is copied whole), "
                f"not {value!r}",
                BAD_ARGUMENT,
            )
        with db.write(conn):
            conn.execute(
                "insert or replace into _chronos_meta values ('whole_rows', ?)", (int(value),)
            )
    rows = worldstate.whole_rows(conn)
    text = (
        f"whole_rows: {rows} (a world's connection copies a changed table of at most {rows} "
        "rows whole; worlds opened from now on)"
    )
    return Reply(text, {"whole_rows": rows})


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
    closed = caller.mode == "agent" and agentrights.main_closed(caller) is not None
    refusal = (
        agentrights.main_rewrite_refused(caller, f"undo {args['agent']}'s changes on main")
        if closed
        else None
    )
    done = undo.undo_agent(db, args["agent"], args["since"], args.get("run"), refusal)
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
