"""chronos_lite: a local SQLite database for AI agents, with instant private worlds."""

from __future__ import annotations

__version__ = "0.1.0"
