"""A branch as a caller names it: ``main``, a world's name, or ``name@when``, the branch as it
was at a moment (read only). Parsed here and nowhere else; the refusal to change a branch as
it was is spelled here once."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import REFUSED, ChronosError


@dataclass(frozen=True)
class BranchRef:
    name: str  # main, or a world's name
    when: str | None = None  # the moment's text as given (name@when), None for now

    @classmethod
    def parse(cls, text: str | BranchRef | None) -> BranchRef:
        """``None`` and ``""`` are main; ``name@when`` splits at the first ``@`` (a name can't
        hold one; a moment may)."""
        if isinstance(text, BranchRef):
            return text
        if not text:
            return MAIN
        name, at, when = text.partition("@")
        return cls(name or "main", when if at else None)

    @property
    def past(self) -> bool:
        return self.when is not None

    @property
    def is_main(self) -> bool:
        return self.name == "main"

    def __str__(self) -> str:
        return self.name if self.when is None else f"{self.name}@{self.when}"

    def writable(self) -> str:
        """The branch's name, to change it; for a branch as it was, the refusal."""
        if self.past:
            raise self.read_only()
        return self.name

    def read_only(self) -> ChronosError:
        return ChronosError(
            f"{self} is a branch as it was at a moment: it can only be read (SELECT); write on "
            f"the branch itself ({self.name})",
            REFUSED,
        )


MAIN = BranchRef("main")
