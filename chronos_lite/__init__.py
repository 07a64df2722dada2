"""chronos_lite: a local SQLite database for AI agents, with instant private worlds."""

from __future__ import annotations

from . import operations  # noqa: F401 - registers the operations
from .api import Chronos, init, open
from .errors import ChronosError
from .operations.registry import REGISTRY, Caller, Reply

__version__ = "0.1.0"

__all__ = ["Chronos", "ChronosError", "REGISTRY", "Caller", "Reply", "init", "open", "__version__"]
