"""One call of a named agent: its rights read afresh, a slot of its ``max_concurrent``, its run
fields from the branch's meta, and the audit entry (what changed, or the refusal).

Only the outermost call is counted and audited: a chronos statement inside a sql call runs
within the sql call's slot, and its refusal is the sql call's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import apsw

from ..errors import REFUSED, ChronosError
from ..storage import events, faults
from ..storage.db import Database
from ..storage.governance import audit, slots
from . import rights
from .args import Args
from .caller import Caller
from .calllimits import limits_of

T = TypeVar("T")


class Audited(Protocol):
    """What the audit reads of an operation (the registry's ``Operation``)."""

    name: str
    read_only: bool


# Refusals of the agent's rights and quotas (kept whether or not the call would have changed
# anything): 42501, too many at once, and statements its time or memory quota stopped.
REFUSALS = {REFUSED, slots.TOO_MANY}
QUOTA_STOPS = {faults.QUERY_CANCELED, faults.OUT_OF_MEMORY}
# Faults of the file itself: no entry (the audit's own write would wait on, or fail at, the same)
FILE_FAULTS = {
    faults.LOCK_NOT_AVAILABLE,
    faults.DISK_FULL,
    faults.IO_ERROR,
    faults.FILE_GONE,
    faults.CORRUPT,
    faults.NOT_A_DATABASE,
    faults.READ_ONLY,
}


def run(
    db: Database, op: Audited, args: Any, valid: Args, caller: Caller, call: Callable[[], T]
) -> T:
    """``call`` (the registry's run of the operation) as the agent's audited call (``args``:
    as the agent sent them, which the audit keeps; ``valid``: as validated)."""
    if events.current().audit is not None:  # (inside one of its calls: the outer one audits)
        return call()
    args = args if isinstance(args, dict) else {}
    # the run fields before the call (a merge ends its world); a read needs them only if refused
    fields = {} if op.read_only else _run_fields(db, op.name, args, valid)
    with events.audited() as tally:
        result = _counted(db, op, args, valid, caller, fields, call)
    if not op.read_only and tally.events:  # (it recorded events: it changed)
        _record(db, op.name, args, caller, fields, "ok", rows=tally.rows)
    return result


def _counted(
    db: Database,
    op: Audited,
    args: dict,
    valid: Args,
    caller: Caller,
    fields: dict[str, str],
    call: Callable[[], T],
) -> T:
    """The call within the agent's quotas (its rights read afresh, a slot taken); a refusal,
    a stop or a write's error kept in the audit."""
    slot: slots.Slot | None = None
    try:
        with db.bounds.paused():  # (chronos' own reads, as the audit's write: not the call's)
            # (disabled, or its rights, policy or the mode changed; a call that may write is
            # judged on the file as it is now: a person's `mode production` binds it at once)
            read_again = rights.refresh(db, caller, current=not op.read_only)
        if read_again and db.bounds.active:  # (begun by the MCP server, with older quotas)
            db.bounds.reset(limits_of(caller))
        caller.run = fields.get("run_id")
        quota = caller.quotas.get("max_concurrent")
        if quota:
            slot = slots.take(db.folder, caller.name, quota)
        return call()
    except ChronosError as exc:
        kept = exc.code in REFUSALS or exc.code in QUOTA_STOPS or not op.read_only
        if kept and exc.code not in FILE_FAULTS:
            outcome = (
                "refused"
                if exc.code in REFUSALS
                else "stopped"
                if exc.code in QUOTA_STOPS
                else "error"
            )
            fields = fields or _run_fields(db, op.name, args, valid)
            _record(db, op.name, args, caller, fields, outcome, exc.code, str(exc))
        raise
    finally:
        if slot is not None:  # (before the reply: a client may call another server at once)
            slot.release()


def _record(
    db: Database,
    tool: str,
    args: dict,
    caller: Caller,
    fields: dict[str, str],
    outcome: str,
    code: str | None = None,
    message: str | None = None,
    rows: int = 0,
) -> None:
    entry = audit.Entry(
        caller.name,
        tool,
        _branch(tool, args),
        args,
        outcome,
        code,
        message,
        rows,
        fields,
    )
    with db.bounds.paused():  # (chronos' own: the call's limit doesn't stop it)
        for _attempt in range(2):
            try:
                with db.write(db.main.conn) as conn:
                    audit.record(conn, entry)
                return
            except apsw.InterruptError:
                continue  # (an interrupt meant for the call, landing here: spent, again)
            except (ChronosError, *faults.FAULTS):
                return  # (a full disk, say: the call's own outcome is what the caller must hear)


def _branch(tool: str, args: dict) -> str:
    name = args.get("name") if tool == "fork" else args.get("branch")
    return name if isinstance(name, str) and name else "main"


def _run_fields(db: Database, tool: str, args: dict, valid: Args) -> dict[str, str]:
    """The run fields of the call's branch: its meta's (a fork's: the meta it is given)."""
    with db.bounds.paused():  # (chronos' own read: not the call's to stop)
        return _read_run_fields(db, tool, args, valid)


def _read_run_fields(db: Database, tool: str, args: dict, valid: Args) -> dict[str, str]:
    if tool in ("fork", "set_meta"):
        meta = args.get("meta")
        return audit.run_fields(meta if isinstance(meta, dict) else None)
    try:
        world = valid.world(db) if valid.given_ref() is not None else None
    except ChronosError:
        return {}  # (no such branch: the call's own error says so)
    return audit.run_fields(world.meta) if world is not None else {}
