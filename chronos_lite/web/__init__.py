"""The review page (``chronos <folder> web``): held merges, open worlds, diffs and main's
history in a person's browser, served on loopback; a held merge approved at the version shown
or rejected. Every read and change is a registry call as the database's own user."""
