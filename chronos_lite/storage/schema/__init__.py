"""The schema readers: what SQLite says the app's schema is, read from its pragmas and
``sqlite_schema``. ``catalog`` (tables: columns, keys, generated columns, CHECKs),
``constraints`` (foreign keys, unique rules, NOT NULL's conflict clauses, triggers) and
``virtual`` (virtual tables, an FTS5 table's parts).

It may import only ``storage.fetch`` and the shared helpers (``errors``, ``sqltext``): every
part of storage above it reads the schema through it.
"""
