"""A store's two roots: notes scanned as the agent lists them, an archive root beside them for
agents that list every folder, and nothing else in scope."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.core.errors import StoreError, UnsafePathError
from daemon.stores import files
from daemon.stores.paths import open_roots
from daemon.stores.presets import resolve_settings
from daemon.stores.scan import scan_store

SERENA = resolve_settings("serena", {})
CLAUDE = resolve_settings("claude-code", {})
DEEPCODE = resolve_settings("deepcode", {})


def write(root: Path, rel: str, text: str = "x\n") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def memories(tmp_path: Path) -> Path:
    root = tmp_path / ".serena" / "memories"
    root.mkdir(parents=True)
    return root


def test_serena_notes_are_every_md_file_at_any_depth_dot_folders_included(memories: Path) -> None:
    """The scan lists what Serena lists: nested and hidden-folder .md files are notes; other files are files, not notes."""
    for rel in ("core.md", "auth/login.md", ".dreamd-archive/old.md", ".hidden/x.md", "auth/diagram.png", ".git/HEAD"):
        write(memories, rel)
    result = scan_store(memories, SERENA)
    assert list(result.notes) == [".dreamd-archive/old.md", ".hidden/x.md", "auth/login.md", "core.md"]
    assert "auth/diagram.png" in result.files and ".git/HEAD" not in result.files
    assert result.archived == {}  # the old archive folder is where Serena reads it: a folder of notes


def test_an_archive_beside_the_notes_is_scanned_under_its_own_prefix(memories: Path) -> None:
    """Files of .serena/memories.dreamd-archive/ are the store's archived files, named memories.dreamd-archive/..."""
    write(memories, "core.md")
    write(memories.parent, "memories.dreamd-archive/auth/old.md")
    write(memories.parent, "project.yml")  # beside, but not the store's
    result = scan_store(memories, SERENA)
    assert list(result.archived) == ["memories.dreamd-archive/auth/old.md"]
    assert list(result.files) == ["core.md"]
    assert "memories.dreamd-archive/auth/old.md" in result.manifest


def test_a_notes_folder_named_like_the_archive_root_is_refused(memories: Path) -> None:
    """A folder inside the notes with the archive root's name would shadow it: the scan refuses, naming both."""
    write(memories, "memories.dreamd-archive/x.md")
    with pytest.raises(StoreError, match="has the archive root's name"):
        scan_store(memories, SERENA)


def test_a_symlinked_archive_root_beside_the_notes_is_refused(memories: Path, tmp_path: Path) -> None:
    """An archive root that is a symlink (to anywhere) is not a store root: opening the store fails with one line."""
    (tmp_path / "elsewhere").mkdir()
    (memories.parent / "memories.dreamd-archive").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError, match="not a folder"):
        open_roots(memories, SERENA.archive_root)


def test_writes_to_the_archive_land_beside_the_notes_and_create_its_root(memories: Path) -> None:
    """Writing memories.dreamd-archive/a/b.md creates .serena/memories.dreamd-archive/a/b.md, never inside memories/."""
    roots = open_roots(memories, SERENA.archive_root)
    files.write_atomic(roots, "memories.dreamd-archive/a/b.md", b"old\n")
    assert (memories.parent / "memories.dreamd-archive" / "a" / "b.md").read_bytes() == b"old\n"
    assert not (memories / "memories.dreamd-archive").exists()
    assert files.read_file(roots, "memories.dreamd-archive/a/b.md") == b"old\n"
    files.remove_file(roots, "memories.dreamd-archive/a/b.md")
    assert files.read_file(roots, "memories.dreamd-archive/a/b.md") is None


def test_a_symlink_swapped_in_for_the_archive_root_is_refused_on_write(memories: Path, tmp_path: Path) -> None:
    """The archive root is checked again on every write: a symlink put there after opening is never followed."""
    roots = open_roots(memories, SERENA.archive_root)
    (tmp_path / "outside").mkdir()
    (memories.parent / "memories.dreamd-archive").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafePathError):
        files.read_file(roots, "memories.dreamd-archive/x.md")
    with pytest.raises(UnsafePathError):
        files.write_atomic(roots, "memories.dreamd-archive/x.md", b"x")
    assert list((tmp_path / "outside").iterdir()) == []


def test_claude_code_team_notes_are_notes_and_only_the_top_index_is_the_index(tmp_path: Path) -> None:
    """memory/team/x.md is a note Claude Code recalls; memory/team/MEMORY.md is neither note nor index."""
    root = tmp_path / "memory"
    for rel in ("MEMORY.md", "user_role.md", "team/deploys.md", "team/MEMORY.md", ".notes/x.md"):
        write(root, rel)
    result = scan_store(root, CLAUDE)
    assert list(result.notes) == [".notes/x.md", "MEMORY.md", "team/deploys.md", "user_role.md"]
    assert "team/MEMORY.md" in result.files


def test_deepcode_reads_top_level_files_and_keeps_its_archive_inside(tmp_path: Path) -> None:
    """DeepCode's notes are its top-level .md files; its archive stays the inside .dreamd-archive folder."""
    root = tmp_path / "memory"
    for rel in ("MEMORY.md", "a.md", "notes.txt", "sub/b.md", ".dreamd-archive/old.md"):
        write(root, rel)
    result = scan_store(root, DEEPCODE)
    assert list(result.notes) == ["MEMORY.md", "a.md"] and "notes.txt" in result.files
    assert list(result.archived) == [".dreamd-archive/old.md"]
    assert not open_roots(root, DEEPCODE.archive_root).beside
