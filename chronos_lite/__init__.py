"""chronos_lite: a local SQLite database for AI agents, with instant private worlds.

The names below load on first use (PEP 562), so ``chronos --help`` or a module of the package
imported alone doesn't pay for the whole API."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Chronos, init, open
    from .errors import ChronosError
    from .operations.registry import REGISTRY, Caller, Reply

__version__ = "0.1.0"

__all__ = ["Chronos", "ChronosError", "REGISTRY", "Caller", "Reply", "init", "open", "__version__"]

# Each lazy name and the module it comes from (importing the operations package indexes them).
_LAZY = {
    "Chronos": ".api",
    "init": ".api",
    "open": ".api",
    "ChronosError": ".errors",
    "REGISTRY": ".operations.registry",
    "Caller": ".operations.registry",
    "Reply": ".operations.registry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # (found here from now on)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
