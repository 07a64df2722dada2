"""Diff, merge and merge preview: a world's changes against its parent, row by row."""
