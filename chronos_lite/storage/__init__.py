"""Storage: the database folder and its one SQLite file. ``db`` opens connections and places
them on branches (sessions), keeps the schema cache and the write path; ``worlds`` is the world
catalog and ``lifecycle`` a world's fork and end; ``shadow``, ``schemasync``, ``worldviews`` and
``worldsql`` are the history tables, overlays, triggers and views that make main versioned and a
world a copy; ``rows`` reads and writes one row; ``guard``, ``limits``, ``locks`` and ``faults``
hold every statement to what its caller may do, in time, and say what went wrong."""
