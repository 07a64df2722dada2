"""The governance wing: chronos' own tables of who may do what, and what was done.

``agents`` (an agent's rights, token hash and quotas), ``policies`` (merge policies),
``checks`` (merge checks), ``reviews`` (held merges), ``holds`` (what a world is held to at its
merge: its fork's scope, rows a rebase took over), ``audit`` (every agent call), ``slots``
(an agent's concurrent calls), ``mode`` (development or production) ``readers`` (who outside
the database reads which columns: MARK READER), ``reads`` (what a world forked with check_reads
read) and ``readlog`` (its new reads, until its next write writes them).

Each module owns its table's DDL and reads and writes it. It may import only ``storage.fetch``
and the shared helpers (``errors``, ``names``): the storage core creates these tables
(``shadow``), and the layers above decide with them.
"""
