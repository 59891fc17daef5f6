"""Gitignore-like globs used by store settings."""

from __future__ import annotations

import pytest

from daemon.core.globs import matches


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("a.md", "*.md", True),
        ("deep/down/a.md", "*.md", True),
        ("a.txt", "*.md", False),
        ("tasks/t1.md", "tasks/*.md", True),
        ("tasks/done/t1.md", "tasks/*.md", False),
        ("x/tasks/t1.md", "tasks/*.md", False),
        ("tasks/t1.md", "tasks/**/*.md", True),
        ("tasks/done/old/t1.md", "tasks/**/*.md", True),
        ("progress.md", "/progress.md", True),
        ("sub/progress.md", "/progress.md", False),
        ("drafts", "drafts/", True),
        ("notes/drafts", "drafts", True),
        ("a/b", "a?b", False),
        ("axb", "a[!y]b", True),
        ("a/b", "a[!y]b", False),
        ("n1.md", "n[0-9].md", True),
        ("a^b", "a[^]b", True),
    ],
)
def test_matches(path: str, pattern: str, expected: bool) -> None:
    """A path matches a glob by name at any depth, or anchored when the glob has a slash."""
    assert matches(path, [pattern]) is expected


def test_no_patterns_match_nothing() -> None:
    """An empty pattern list matches no path."""
    assert not matches("a.md", [])
