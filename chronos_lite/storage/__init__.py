"""Storage: the database folder and its one SQLite file.

The core: ``folder`` opens and creates it; ``db`` opens connections and places them on
branches, keeps the schema cache and the write path; ``worlds`` is the world catalog and
``lifecycle`` a world's fork and end; ``shadow``, ``schemasync``, ``events`` and ``moments``
are main's versioning (history tables, overlays, the event log, named moments); ``rows`` reads
and writes one row, ``codec`` spells row ids and values; ``guard``, ``limits``, ``locks`` and
``faults`` hold every statement to what its caller may do, in time, and say what went wrong.

Three wings, each a sub-package whose ``__init__`` says what it may import:
``schema`` (what SQLite says the app's schema is), ``world`` (what makes a connection see and
write a world) and ``governance`` (chronos' own tables of agents, policies, checks, reviews,
holds, audit, slots and mode).
"""
