"""Merge: a world's changes against its parent and applying them. ``changes`` finds them row by
row, ``diff`` shows them (and compares two branches), ``preview`` says what a merge would do,
``apply`` merges in one transaction (conflicts, resolutions, partial merges), ``schema`` the
schema changes a merge carries, ``rebase`` moves a world's fork point up to its parent now."""
