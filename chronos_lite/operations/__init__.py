"""The operations layer: the one registry every front end calls (``registry``: validation,
rights, bounds, faults, the reply), who may do what (``rights``), and the operations' handlers
with their text renderings, one module per concern. Importing the package registers them all."""

from . import handlers, insert, sql  # noqa: F401 - each module registers its operations
