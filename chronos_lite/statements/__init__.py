"""Statements: SQL on a branch. ``sqlrun`` runs a call's statements as one transaction on a
session, under the guard and within a result budget (``budget``); ``worldstmt`` adapts INSERTs
for a world's views, ``ddl`` runs a schema statement on a world, ``loading`` loads a file's rows
(``sources`` reads them); ``chronos`` parses chronos' own statements (FORK WORLD, SHOW HISTORY,
...) into operations, which the operations layer runs."""
