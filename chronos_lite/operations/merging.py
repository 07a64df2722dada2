"""Diff and merge: what changed, merge, merge preview, rebase.

Each handler takes the database, validated arguments and the caller, and returns a Reply whose
text is what every front end shows (the shell's output for the same command)."""

from __future__ import annotations

from ..merge import apply as merge_apply
from ..merge import diff as merge_diff
from ..merge import preview as merge_preview
from ..merge import readers as merge_readers
from ..merge import rebase as merge_rebase
from ..merge.gate import Gate
from ..merge.policy import Held
from ..merge.request import Options
from ..storage.db import Database
from . import reviewing
from .registry import Args, Caller, Reply, operation


def _merge_options(args: Args, gate: Gate | None = None) -> Options:
    """The merge's request, as the call gives it (``gate``: what may hold it)."""
    return Options(
        resolve=args.get("resolve") or "fail",
        by_columns=bool(args.get("by_columns")),
        rows=args.get("rows") or {},
        only_tables=args.get("only_tables"),
        only_keys=args.get("only_keys"),
        into=args.given_ref("into"),
        version=args.get("version"),
        target=args.get("target"),
        confirm_deletes=args.get("confirm_deletes"),
        confirm=bool(args.get("confirm")),
        gate=gate or Gate(),
    )


@operation(
    "diff",
    "What changed",
    "What changed on a branch since its fork, row by row. Check your changes with it; ask for "
    "small pages.",
    read_only=True,
    idempotent=True,
)
def diff_op(db: Database, args: Args, caller: Caller) -> Reply:
    if args.get("to"):
        d = merge_diff.compare(db, args.ref(), args.ref("to"))
    else:
        d = merge_diff.diff(db, merge_diff.forked(db, args.ref()))
    return Reply(value=d, render=lambda: _diff_reply(db, args, d))


def _diff_reply(db: Database, args: dict, d: merge_diff.Diff) -> Reply:
    """The diff as text and data: readers, the count, or a page of changes (as SQL)."""
    branch = args["branch"]
    if args.get("readers"):
        text, found = merge_readers.readers(db, d)
        return Reply(text, {"branch": branch, **found})
    data = {"branch": branch, "count": d.count, "summary": d.summary()}
    if args.get("count"):
        return Reply(d.summary(), data)
    offset, limit = args.get("offset", 0), args.get("limit", 20)
    page = d.page(offset, limit)  # (only the page's rows are read: the counts come from SQL)
    data["changes"] = [merge_diff.change_data(c) for c in page]
    schema = [s.op.sql(s.table) + ";" for s in d.schema] if offset == 0 else []
    if d.schema:
        data["schema"] = [
            {"table": s.table, "kind": s.op.kind, "sql": s.op.sql(s.table)} for s in d.schema
        ]
    if args.get("as_sql"):
        footer = merge_diff.page_footer(offset, len(page), d.rows, "changes", "diff")
        text = "\n".join(
            [f"-- {d.summary()}", *schema, *(merge_diff.change_sql(c) for c in page)]
            + ([f"-- {footer}"] if footer else [])
        )
        return Reply(text, data)
    return Reply(merge_diff.render(d, limit, offset, page), data)


@operation(
    "merge",
    "Merge a branch",
    "Applies a branch's changes to its parent and ends the branch. Conflicts come back unmerged: "
    "settle them with resolve, by_columns or rows.",
    destructive=True,
)
def merge_op(db: Database, args: Args, caller: Caller) -> Reply:
    world = args.world_named(db)
    name = world.name
    try:
        gate = reviewing.gate_for(db, world, caller)
        p = merge_apply.merge(db, world, _merge_options(args, gate))
    except Held as held:  # (an agent's merge a rule holds: it waits for a person)
        raise reviewing.queued(db, world, held, caller) from None
    n = len(p.writes) + len(p.schema)
    noun = "change" if n == 1 else "changes"
    text = f"merged {n} {noun} from {name} into {p.parent_name}"
    if p.partial:
        text += f"; {name} stays open"
    kept = [o for o in p.outcomes if o.outcome == "theirs"]
    if kept:
        text += f" ({len(kept)} kept as {p.parent_name} had them)"
    data = {"branch": name, "into": p.parent_name, "merged": n, "open": p.partial}
    return Reply(text, data, value=p)


@operation(
    "merge_preview",
    "Preview a merge",
    "What merge would do with the same parameters, without doing it. Ask for small pages.",
    read_only=True,
    idempotent=True,
)
def merge_preview_op(db: Database, args: Args, caller: Caller) -> Reply:
    world, opts = args.world_named(db), _merge_options(args)
    blocked = reviewing.blocked(db, world, opts, caller)
    limit, offset = args.get("limit", 20), args.get("offset", 0)
    text, data = merge_preview.preview(db, world, opts, limit, offset, blocked)
    return Reply(text, data)


@operation(
    "rebase",
    "Rebase a branch",
    "Moves a branch's fork point up to its parent as it is now, keeping its changes on top.",
)
def rebase_op(db: Database, args: Args, caller: Caller) -> Reply:
    n = merge_rebase.rebase(db, args.world_named(db), _merge_options(args))
    return Reply(f"REBASE {n}", {"branch": args["branch"], "taken": n}, value=n)


# --- putting a branch back (chronos_lite/history/restore.py) ---------------------------------
