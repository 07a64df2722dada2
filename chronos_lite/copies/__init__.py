"""Copies of a database elsewhere: ``backup`` (SQLite's online backup into a new folder, checked
before it counts), ``export`` (a branch as a plain SQLite file, the app's schema and rows and
nothing of chronos), ``contenthash`` (a branch's tables and rows as one hash, equal for equal
contents whatever their history), ``verify`` (a copy checked against its source),
``staging`` (a copy named only once whole and checked) and ``litestream`` (streaming every
commit to a replica with Litestream, and restoring one)."""
