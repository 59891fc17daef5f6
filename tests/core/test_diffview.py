"""The review pages' reading of a diff: files, hunks, numbered rows and side-by-side pairs."""

from __future__ import annotations

import pytest

from daemon.core.diffview import Row, parse
from daemon.core.errors import DiffError

RENAMED = (
    'diff --git "a/my\\tnote.md" "b/.dreamd-archive/my\\tnote.md"\n'
    "similarity index 80%\n"
    'rename from "my\\tnote.md"\n'
    'rename to ".dreamd-archive/my\\tnote.md"\n'
    "index 1111111..2222222 100644\n"
    '--- "a/my\\tnote.md"\n'
    '+++ "b/.dreamd-archive/my\\tnote.md"\n'
    "@@ -1,2 +1,3 @@\n"
    " ---\n"
    "+status: expired\n"
    " ---\n"
    "diff --git a/MEMORY.md b/MEMORY.md\n"
    "index 3333333..4444444 100644\n"
    "--- a/MEMORY.md\n"
    "+++ b/MEMORY.md\n"
    "@@ -1,4 +1,3 @@ # Memory\n"
    " # Memory\n"
    "-- [Old](old.md)\n"
    "-- [Gone](gone.md)\n"
    "+- [New](new.md)\n"
    " - [Kept](kept.md)\n"
)


def test_each_git_section_is_a_file_with_its_paths_headers_and_counts():
    """A rename with a C-quoted name and an edit, then an index edit, read as two files in order."""
    moved, index = parse(RENAMED)
    assert (moved.title, moved.added, moved.removed) == ("my\tnote.md => .dreamd-archive/my\tnote.md", 1, 0)
    assert moved.headers == ("similarity index 80%", 'rename from "my\\tnote.md"', 'rename to ".dreamd-archive/my\\tnote.md"', "index 1111111..2222222 100644")
    assert (index.title, index.added, index.removed) == ("MEMORY.md", 1, 2)
    assert index.hunks[0].header == "@@ -1,4 +1,3 @@ # Memory"


def test_rows_carry_their_old_and_new_line_numbers():
    """Context has both numbers, a removed line only the old one, an added line only the new one."""
    rows = parse(RENAMED)[1].hunks[0].rows
    assert rows == (
        Row("context", 1, 1, "# Memory"), Row("removed", 2, None, "- [Old](old.md)"), Row("removed", 3, None, "- [Gone](gone.md)"),
        Row("added", None, 2, "- [New](new.md)"), Row("context", 4, 3, "- [Kept](kept.md)"),
    )  # fmt: skip


def test_side_by_side_faces_removed_lines_with_the_added_lines_after_them():
    """Two removed lines and one added: the first pair is old against new, the second old against nothing."""
    pairs = parse(RENAMED)[1].hunks[0].pairs
    assert [(p.left and p.left.text, p.right and p.right.text) for p in pairs] == [
        ("# Memory", "# Memory"), ("- [Old](old.md)", "- [New](new.md)"), ("- [Gone](gone.md)", None), ("- [Kept](kept.md)", "- [Kept](kept.md)"),
    ]  # fmt: skip


def test_a_rename_without_an_edit_is_a_file_without_hunks():
    """A pure move has only git's header; its two paths come from rename from/to."""
    (moved,) = parse("diff --git a/a.md b/.dreamd-archive/a.md\nsimilarity index 100%\nrename from a.md\nrename to .dreamd-archive/a.md\n")
    assert (moved.old_path, moved.new_path, moved.hunks) == ("a.md", ".dreamd-archive/a.md", ())


def test_a_diff_that_does_not_parse_is_a_diff_error():
    """A hunk header promising more lines than follow is refused, not drawn half."""
    with pytest.raises(DiffError):
        parse("--- a/a.md\n+++ b/a.md\n@@ -1,5 +1,5 @@\n one\n")


def test_the_removal_of_an_empty_file_names_the_file():
    """git writes no ---/+++ lines for an empty file it deletes: the file is still named, with no hunk."""
    from daemon.core.diffview import parse

    (removed,) = parse("diff --git a/empty.md b/empty.md\ndeleted file mode 100644\nindex e69de29..0000000\n")
    assert (removed.old_path, removed.new_path, removed.hunks) == ("empty.md", None, ())
