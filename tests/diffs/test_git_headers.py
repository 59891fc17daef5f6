"""Diffs a reviewer can read: a note moved into the archive is a rename with its real edit,
every header is git's own (``a/`` and ``b/``, ``rename from``/``rename to``), and each diff
still applies with ``git apply`` at the store root and rebuilds the result byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from daemon.core.hashing import hash_bytes
from daemon.core.patch import rebuild, verify
from daemon.core.proposals import Change
from daemon.diffs.git import unified_diff
from daemon.policies.model import changed_lines

NOTE = b"---\nname: Deploy\n---\n" + b"".join(b"Step %d of the deploy: the script runs on port 8080.\n" % i for i in range(148))
RETIRED = NOTE.replace(b"name: Deploy\n", b"name: Deploy\nstatus: superseded\nsuperseded_by: deploy.md\n")


def change(before: dict[str, bytes | None], after: dict[str, bytes | None]) -> Change:
    data = {hash_bytes(b): b for b in (*before.values(), *after.values()) if b is not None}
    base = {p: hash_bytes(b) if b is not None else None for p, b in before.items()}
    result = {p: hash_bytes(b) if b is not None else None for p, b in after.items()}
    return Change(base=base, result=result, data=data)


def applies(tmp_path: Path, files: dict[str, bytes | None], diff: str) -> dict[str, bytes]:
    """Apply ``diff`` with git at a store root holding ``files``; the tree afterwards."""
    root = tmp_path / "store"
    for path, data in files.items():
        if data is not None:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
    done = subprocess.run(["git", "apply", "-"], cwd=root, input=diff.encode(), capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["deploy copy.md", 'say "hi".md', "new\nline.md"])
def test_an_archive_move_is_a_rename_with_its_real_edit(tmp_path: Path, name: str) -> None:
    """Retiring a 151-line note into the archive: a rename whose hunk is the marker, not 151
    removed and 154 added lines; git applies it and it rebuilds the archived copy."""
    before = {name: NOTE, f".dreamd-archive/{name}": None}
    after = {name: None, f".dreamd-archive/{name}": RETIRED}
    diff = unified_diff(change(before, after))
    assert "\nrename from " in diff and "\nrename to " in diff
    assert changed_lines(diff) == 2  # the two marker lines, which is what a policy's size limit sees
    verify(diff, before, after)
    assert applies(tmp_path, before, diff) == {f".dreamd-archive/{name}": RETIRED}
    print(f"archive move of a {len(NOTE.splitlines())}-line note: {len(diff.splitlines())} diff lines")


def test_a_whole_file_add_and_delete_have_git_headers(tmp_path: Path) -> None:
    before = {"new.md": None, "gone.md": b"old\n"}
    after = {"new.md": b"a fact that is new\n", "gone.md": None}
    diff = unified_diff(change(before, after))
    assert "diff --git a/new.md b/new.md\nnew file mode" in diff
    assert "diff --git a/gone.md b/gone.md\ndeleted file mode" in diff
    assert applies(tmp_path, before, diff) == {"new.md": b"a fact that is new\n"}


def test_a_move_byte_for_byte_has_no_hunk_and_still_rebuilds(tmp_path: Path) -> None:
    """A relocate moves a retired note unchanged: 100% similar, no ---/+++ lines at all; the
    header alone says what moved, and rebuild reads it."""
    before = {"old.md": RETIRED, "archive/old.md": None}
    after = {"old.md": None, "archive/old.md": RETIRED}
    diff = unified_diff(change(before, after))
    assert "similarity index 100%" in diff and "\n--- " not in diff
    assert rebuild(diff, before) == after
    assert applies(tmp_path, before, diff) == {"archive/old.md": RETIRED}


def test_a_rename_of_a_file_not_in_the_base_is_refused() -> None:
    from daemon.core.errors import DiffError

    diff = "diff --git a/x.md b/y.md\nsimilarity index 100%\nrename from x.md\nrename to y.md\n"
    with pytest.raises(DiffError, match="renames x.md, which is not in the base"):
        rebuild(diff, {"y.md": None})
