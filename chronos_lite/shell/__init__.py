"""The interactive shell (``chronos <folder>``), psql-like: ``session`` runs statements, chronos
statements and backslash commands and prints their results (``output``), ``repl`` is its
prompt_toolkit prompt (completion, history, keys), ``config`` its settings file, ``cancel`` Ctrl-C
during a statement. Scripts (``-c``, ``-f``, a pipe) run through the same session."""
