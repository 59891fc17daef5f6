"""Diff engine adapter: unified diffs produced by git's own diff machinery."""
