"""The one rule for a name a person reads later in a terminal: a branch's, a checkpoint's, an
agent's, a merge policy's or check's. Checked where each is made (``check``), whatever front
end made it; a new branch's name also mustn't read like one that is there (``lookalike``).

A name is 1 to 128 characters in NFC form, each a letter or a digit of any script, a combining
mark after a letter, or one of ``_ - . : /``; it doesn't start with ``-`` (it would read as an
option), ``.`` or ``/``, holds no ``//``, and doesn't mix Latin, Cyrillic and Greek letters
(``mаin`` with a Cyrillic ``а`` looks like ``main``). So no control, format, bidi, space or
invisible character is ever part of one. A schema may ask for less (an agent's name is ASCII
letters, digits, ``_`` and ``-``).
"""

from __future__ import annotations

import unicodedata

from . import render
from .errors import BAD_ARGUMENT, IN_USE, ChronosError

MAX_NAME = 128
PUNCTUATION = "_-.:/"
NOT_FIRST = "-./"
RULE = (
    "a name is 1 to 128 letters or digits (any script, not mixing Latin, Cyrillic and Greek), "
    "combining marks after a letter, and _ - . : /; not starting with - . or /, no //"
)
# Letters that draw nothing (they pass as a letter or a mark): never part of a name.
_INVISIBLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0]
    + [*range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)]
)
_MIXED_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")  # the scripts whose letters look alike
# Cyrillic and Greek letters drawn like a Latin one: what a name reads as, to find one that
# looks like another (Unicode's confusables for these scripts, the letters alone).
_LOOKS_LIKE = str.maketrans(
    {
        **dict(zip("АВЕЅІЈКМНОРСТХУаеѕіјкорсхуԁһԛԝӏ", "ABESIJKMHOPCTXYaesijkopcxydhqwl")),
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧαικνορυχ", "ABEZHIKMNOPTYXaikvopux")),
    }
)


def check(name: object, what: str) -> str:
    """``name`` if it keeps the rule; else a clear error naming the character and the rule
    (``what``: "a branch's name", "an agent's name", ...)."""
    if not isinstance(name, str) or not name:
        raise ChronosError(f"{what} can't be empty: {RULE}", BAD_ARGUMENT)
    shown = _shown(name)
    if len(name) > MAX_NAME:
        raise ChronosError(
            f"{what} is {len(name):,} characters, more than {MAX_NAME}: {RULE}", BAD_ARGUMENT
        )
    if unicodedata.normalize("NFC", name) != name:
        fixed = _shown(unicodedata.normalize("NFC", name))
        raise ChronosError(
            f"{what} {shown} isn't in NFC form (a letter and its accent as one character): "
            f"write it {fixed}",
            BAD_ARGUMENT,
        )
    for at, c in enumerate(name):
        why = _bad_character(name, at)
        if why:
            raise ChronosError(
                f"{what} {shown} holds {describe(c)} at character {at + 1}, {why}: {RULE}",
                BAD_ARGUMENT,
            )
    if name[0] in NOT_FIRST:
        raise ChronosError(f"{what} {shown} starts with '{name[0]}': {RULE}", BAD_ARGUMENT)
    if "//" in name:
        raise ChronosError(f"{what} {shown} holds '//': {RULE}", BAD_ARGUMENT)
    _one_script(name, what, shown)
    return name


def describe(c: str) -> str:
    """A character as a person can tell it: U+0430 CYRILLIC SMALL LETTER A (a control
    character has no name: U+001B)."""
    return f"U+{ord(c):04X} {unicodedata.name(c, '')}".rstrip()


def _bad_character(name: str, at: int) -> str:
    """Why the character at ``at`` can't be in a name ('' when it can)."""
    c = name[at]
    kind = unicodedata.category(c)
    if ord(c) in _INVISIBLE:
        return "which draws nothing"
    if kind[0] == "L" or kind == "Nd" or c in PUNCTUATION:
        return ""
    if kind[0] == "M":
        before = unicodedata.category(name[at - 1])[0] if at else ""
        return "" if before in ("L", "M") else "a combining mark not after a letter"
    if kind in ("Cc", "Cf", "Zl", "Zp"):
        return "a control or format character (it changes how text shows, or shows nothing)"
    if kind[0] == "Z":
        return "a space"
    return "which isn't a letter, a digit or one of _ - . : /"


def _one_script(name: str, what: str, shown: str) -> None:
    seen: dict[str, str] = {}  # script -> its first letter in the name
    for c in name:
        script = unicodedata.name(c, "").split(" ", 1)[0]
        if script in _MIXED_SCRIPTS:
            seen.setdefault(script, c)
    if len(seen) > 1:
        found = ", ".join(f"{s.title()} ({describe(c)})" for s, c in seen.items())
        raise ChronosError(
            f"{what} {shown} mixes letters of {found}, which look alike: write it in one script",
            BAD_ARGUMENT,
        )


def fold(name: str) -> str:
    """What a name reads as: compatibility forms (NFKC), case, and the Cyrillic and Greek
    letters drawn like a Latin one set aside. Two names that fold alike look alike."""
    text = unicodedata.normalize("NFKC", name).translate(_LOOKS_LIKE)
    return unicodedata.normalize("NFKC", text.casefold()).translate(_LOOKS_LIKE)


def lookalike(name: str, taken: list[str]) -> None:
    """Refuse a new branch ``name`` that reads like one of ``taken`` (but isn't it: the caller
    says that one is taken in its own words)."""
    folded = fold(name)
    for other in taken:
        if other != name and fold(other) == folded:
            raise ChronosError(
                f"{_shown(name)} reads like the branch {_shown(other)} (they differ only in "
                f"case, or in letters drawn alike): pick a name that reads differently",
                IN_USE,
            )


def _shown(name: str) -> str:
    """A name quoted for a message, whatever it holds (what a terminal would obey, or not
    show, escaped; a long one cut)."""
    return "'" + render.terminal(name if len(name) <= 60 else name[:57] + "...") + "'"
