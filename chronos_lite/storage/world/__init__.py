"""The world wing: what makes a connection see a world as a copy of main, and write it.

``placement`` puts a connection on a branch (a ``Session``) and ``state`` says how each table
shows there (main's own, or materialized over its overlay: a whole copy, or main's rows and
the world's apart, which ``demand`` copies whole once its reads show a copy costs less);
``sql`` builds a world's objects: its views (``views``), the INSTEAD OF triggers that write
them (``writes``, ``overlay``, ``rowid``) keeping SQLite's rules (``rules``) and the app's own
triggers (``triggers``), in the statement context ``context`` keeps; ``schema`` is a world's
own schema changes and ``fts`` its copies of FTS5 tables.

It may import the storage core below it (``fetch``, ``shadow``, ``events``, ``worlds``,
``guard``), the schema readers (``storage.schema``) and the shared helpers (``errors``,
``sqltext``); nothing above storage, and not ``db``, ``rows`` or ``lifecycle``, which use it.
"""
