"""Copies of a database elsewhere: ``backup`` (SQLite's online backup into a new folder, checked
before it counts), ``contenthash`` (a branch's tables and rows as one hash, equal for equal
contents whatever their history), ``verify`` (a copy checked against its source) and
``litestream`` (streaming every commit to a replica with Litestream, and restoring one)."""
