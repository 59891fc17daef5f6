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


def test_a_removed_line_and_the_added_line_facing_it_mark_the_words_that_differ():
    """Only the changed word is marked on each side; joined, the pieces are the lines themselves."""
    from daemon.core.diffview import words
    from daemon.core.marks import Piece

    old, new = words("Deploys go out on Tuesdays at noon.", "Deploys go out on Thursdays at noon.")
    assert old == (Piece("Deploys go out on ", False), Piece("Tuesdays", True), Piece(" at noon.", False))
    assert new == (Piece("Deploys go out on ", False), Piece("Thursdays", True), Piece(" at noon.", False))


def test_lines_sharing_too_little_are_changed_whole():
    """Two unrelated lines get no word marks: marking nearly every word would only add noise."""
    from daemon.core.diffview import words

    assert words("Deploys go out on Tuesdays.", "The palette is teal and grey.") is None


def test_rows_of_a_hunk_carry_word_marks_only_when_a_removed_line_faces_an_added_one():
    """In RENAMED's index hunk the first removed line faces the added one and is marked; the second faces nothing."""
    rows = parse(RENAMED)[1].hunks[0].rows
    assert [r.words is not None for r in rows] == [False, True, False, True, False]


def test_drawn_counts_the_unchanged_lines_before_between_and_after_hunks():
    """Hunks at old lines 5-11 and 40-46 of a 60-line file: 4 lines before, 28 between, 14 after."""
    from daemon.core.diffview import Skip, drawn

    old = [f"line {i}" for i in range(1, 61)]
    diff = "--- a/n.md\n+++ b/n.md\n"
    for changed in (8, 43):
        diff += f"@@ -{changed - 3},7 +{changed - 3},7 @@\n" + "".join(f" {old[i - 1]}\n" for i in range(changed - 3, changed))
        diff += f"-{old[changed - 1]}\n+{old[changed - 1]}!\n" + "".join(f" {old[i - 1]}\n" for i in range(changed + 1, changed + 4))
    (file,) = parse(diff)
    assert [item.lines for item in drawn(file, 60).shown if isinstance(item, Skip)] == [4, 28, 14]
    assert [item.lines for item in drawn(file, None).shown if isinstance(item, Skip)] == [4, 28]  # the old file's length unknown


def test_drawn_folds_after_its_first_rows_and_counts_what_it_folds():
    """A file of 10 added lines drawn with 4 shown: 4 rows shown, 6 folded, all added."""
    from daemon.core.diffview import Row, drawn

    (file,) = parse("--- /dev/null\n+++ b/n.md\n@@ -0,0 +1,10 @@\n" + "".join(f"+line {i}\n" for i in range(10)))
    view = drawn(file, None, fold_after=4)
    assert sum(isinstance(item, Row) for item in view.shown) == 4
    assert (len(view.folded), view.folded_counts) == (6, (6, 0, 0))


def test_side_by_side_drawing_folds_pairs_and_counts_each_side():
    """Side by side, a changed line is one pair counted as one removed and one added line."""
    from daemon.core.diffview import Pair, drawn

    (file,) = parse("--- a/n.md\n+++ b/n.md\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")
    view = drawn(file, 3, side_by_side=True, fold_after=1)
    assert [type(item).__name__ for item in view.shown] == ["str", "Pair"]
    assert view.folded_counts == (1, 1, 1)
    assert all(isinstance(item, Pair) for item in view.folded)
