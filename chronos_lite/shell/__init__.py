"""The interactive shell (``chronos <folder>``), psql-like: ``session`` runs statements, chronos
statements and backslash commands and prints their results (``output``), ``repl`` is its
prompt_toolkit prompt (completion, history, keys), ``config`` its settings file, ``cancel`` Ctrl-C
during a statement; ``relations`` (\\d, \\dt, .tables, .schema), ``dots`` (sqlite3's
dot-commands) and ``editor`` (\\e) are commands of their own. Scripts (``-c``, ``-f``, a pipe) run
through the same session."""
