"""History: reading the past and going back. ``timetravel`` reads a table AS OF a moment (and
a branch as ``name@when``); ``restore`` puts a branch back as it was (checkpoints, rollback);
``undo`` undoes a merge or an agent's writes; ``prune`` drops history past the retention window.
(The clock and the history tables themselves are storage's: ``moments``, ``shadow``.)"""
