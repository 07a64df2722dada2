"""What a person decides on the review page: approve a held merge at the version the page
showed (the registry's merge with ``version``: refused if the world moved on since), or reject
it (the registry's discard). The form's fields are checked first; nothing else is."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ChronosError
from .pages import Call

WORLD_NEEDED = (
    "{action} needs the world's name (the form's world field): open the world from the list "
    "and press the button there"
)
VERSION_NEEDED = (
    "approve needs the version the page showed, a whole number (the form's version field): "
    "reload the world's page and press Approve there"
)


@dataclass(frozen=True)
class Outcome:
    """What a decision did: its message, whether it was done, and whether the form itself was
    wrong (nothing was asked of the database then)."""

    message: str
    done: bool
    bad_form: bool = False


def approve(call: Call, form: dict[str, list[str]]) -> Outcome:
    world, version = _one(form, "world"), _one(form, "version")
    if not world:
        return Outcome(WORLD_NEEDED.format(action="approve"), False, True)
    if version is None or not version.isdigit():
        return Outcome(VERSION_NEEDED, False, True)
    return _run(call, "merge", {"branch": world, "version": int(version)})


def reject(call: Call, form: dict[str, list[str]]) -> Outcome:
    world = _one(form, "world")
    if not world:
        return Outcome(WORLD_NEEDED.format(action="reject"), False, True)
    return _run(call, "discard", {"branch": world})


def _run(call: Call, name: str, args: dict) -> Outcome:
    try:
        return Outcome(call(name, args).text, True)
    except ChronosError as exc:
        return Outcome(exc.message, False)


def _one(form: dict[str, list[str]], key: str) -> str | None:
    """A field given once (a field given twice is as good as none: which would it mean?)."""
    values = form.get(key, [])
    return values[0].strip() if len(values) == 1 else None
