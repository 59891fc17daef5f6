"""Atomic file primitives: whole writes, no temp files left, nothing written outside the store."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from daemon.core.errors import StoreError, UnsafePathError
from daemon.stores.files import cleanup_temp_files, read_file, remove_file, temp_tag, write_atomic


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*dreamd-tmp*"))


def test_write_atomic_replaces_content(tmp_path: Path) -> None:
    """A write replaces the file's bytes and leaves no temp file behind."""
    (tmp_path / "a.md").write_bytes(b"old\n")
    write_atomic(tmp_path, "a.md", b"new\n")
    assert (tmp_path / "a.md").read_bytes() == b"new\n"
    assert leftovers(tmp_path) == []


def test_write_atomic_creates_archive_folders(tmp_path: Path) -> None:
    """Missing parent folders, such as the archive, are created."""
    write_atomic(tmp_path, ".dreamd-archive/2024/a.md", b"kept\n")
    assert (tmp_path / ".dreamd-archive/2024/a.md").read_bytes() == b"kept\n"
    assert leftovers(tmp_path) == []


def test_write_atomic_keeps_the_replaced_mode(tmp_path: Path) -> None:
    """A replaced file keeps its permission bits."""
    (tmp_path / "a.md").write_bytes(b"old\n")
    (tmp_path / "a.md").chmod(0o600)
    write_atomic(tmp_path, "a.md", b"new\n")
    assert stat.S_IMODE((tmp_path / "a.md").stat().st_mode) == 0o600


@pytest.mark.parametrize("umask,mode", [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_new_file_mode_follows_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    """A new file asks for 0o666 and the umask (or a default ACL) decides: a group-shared
    store stays group-writable, a private one private."""
    old = os.umask(umask)
    try:
        write_atomic(tmp_path, "sub/a.md", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "sub" / "a.md").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o777 & ~umask


def test_write_atomic_sets_mtime(tmp_path: Path) -> None:
    """An explicit mtime_ns is restored on the written file."""
    write_atomic(tmp_path, "a.md", b"x", mtime_ns=1_700_000_000_123_456_789)
    assert (tmp_path / "a.md").stat().st_mtime_ns == 1_700_000_000_123_456_789


def test_write_through_symlinked_file_is_refused(tmp_path: Path) -> None:
    """Writing to a path that is a symlink is refused and the target is untouched."""
    target = tmp_path / "outside.txt"
    target.write_bytes(b"secret")
    root = tmp_path / "store"
    root.mkdir()
    (root / "a.md").symlink_to(target)
    with pytest.raises(UnsafePathError):
        write_atomic(root, "a.md", b"pwned")
    assert target.read_bytes() == b"secret"


def test_write_through_symlinked_folder_is_refused(tmp_path: Path) -> None:
    """Writing below a symlinked folder is refused and nothing lands outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "store"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        write_atomic(root, "sub/a.md", b"pwned")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("rel", ["../escape.md", "sub/../../escape.md", "/tmp/escape.md"])
def test_write_outside_is_refused(tmp_path: Path, rel: str) -> None:
    """Climbing or absolute paths are refused before anything is written."""
    root = tmp_path / "store"
    root.mkdir()
    with pytest.raises(UnsafePathError):
        write_atomic(root, rel, b"pwned")
    assert not (tmp_path / "escape.md").exists()


def test_write_over_a_folder_is_refused(tmp_path: Path) -> None:
    """A folder in the way of a write is a StoreError, not a crash."""
    (tmp_path / "a.md").mkdir()
    with pytest.raises(StoreError, match=r"a\.md"):
        write_atomic(tmp_path, "a.md", b"x")
    assert leftovers(tmp_path) == []


def test_write_into_missing_root_is_refused(tmp_path: Path) -> None:
    """A missing store root is never created by a write."""
    with pytest.raises(StoreError):
        write_atomic(tmp_path / "gone", "a.md", b"x")
    assert not (tmp_path / "gone").exists()


def test_read_file(tmp_path: Path) -> None:
    """read_file returns bytes, or None for a missing file."""
    (tmp_path / "a.md").write_bytes(b"hello")
    assert read_file(tmp_path, "a.md") == b"hello"
    assert read_file(tmp_path, "missing.md") is None
    assert read_file(tmp_path, "no/such/dir.md") is None


def test_read_file_refuses_symlinks(tmp_path: Path) -> None:
    """read_file never follows a symlink."""
    (tmp_path / "real.md").write_bytes(b"x")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    with pytest.raises(UnsafePathError):
        read_file(tmp_path, "link.md")


def test_read_file_refuses_fifo(tmp_path: Path) -> None:
    """read_file on a FIFO is a StoreError, without blocking."""
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(StoreError, match="regular file"):
        read_file(tmp_path, "pipe.md")


def test_remove_file(tmp_path: Path) -> None:
    """remove_file deletes a file; removing a missing one is fine."""
    (tmp_path / "a.md").write_bytes(b"x")
    remove_file(tmp_path, "a.md")
    assert not (tmp_path / "a.md").exists()
    remove_file(tmp_path, "a.md")


def test_remove_file_refuses_symlinked_folder(tmp_path: Path) -> None:
    """remove_file never reaches through a symlinked folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_bytes(b"keep")
    root = tmp_path / "store"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    with pytest.raises(UnsafePathError):
        remove_file(root, "sub/a.md")
    assert (outside / "a.md").exists()


def test_cleanup_removes_only_the_temp_files_of_the_journals_it_is_given(tmp_path: Path) -> None:
    """Recovery of journal 7 removes journal 7's temp files (holding a start of its bytes) anywhere in the store; another journal's, an untagged look-alike, .git's and notes stay."""
    (tmp_path / "a.md").write_bytes(b"a")
    (tmp_path / ".a.md.dreamd-tmp-j7-0123abcd").write_bytes(b"half")
    (tmp_path / ".dreamd-archive").mkdir()
    (tmp_path / ".dreamd-archive/.b.md.dreamd-tmp-j7-ff").write_bytes(b"half")
    (tmp_path / ".c.md.dreamd-tmp-j8-ff").write_bytes(b"another journal's")
    (tmp_path / ".d.md.dreamd-tmp-0123").write_bytes(b"a person's file that looks like one")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git/.e.md.dreamd-tmp-j7-aa").write_bytes(b"git's business")
    (tmp_path / "dreamd-tmp-notes.md").write_bytes(b"a real note")
    removed = cleanup_temp_files(tmp_path, (temp_tag(7),), known={"h": b"half of what journal 7 writes"})
    assert removed == [".a.md.dreamd-tmp-j7-0123abcd", ".dreamd-archive/.b.md.dreamd-tmp-j7-ff"]
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == [".c.md.dreamd-tmp-j8-ff", ".d.md.dreamd-tmp-0123", ".git/.e.md.dreamd-tmp-j7-aa", "a.md", "dreamd-tmp-notes.md"]


def test_cleanup_does_not_follow_symlinked_folders(tmp_path: Path) -> None:
    """Cleanup never deletes through a symlinked folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".x.md.dreamd-tmp-j1-00").write_bytes(b"not ours")
    root = tmp_path / "store"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    assert cleanup_temp_files(root, (temp_tag(1),)) == []
    assert (outside / ".x.md.dreamd-tmp-j1-00").exists()


def test_write_atomic_can_stage_its_temp_file_in_another_store_folder(tmp_path):
    """With temp_dir the temporary file lives there until the rename, and nothing is left behind."""
    from daemon.stores.files import write_atomic

    (tmp_path / "MEMORY.md").write_bytes(b"old\n")
    write_atomic(tmp_path, "MEMORY.md", b"new\n", temp_dir=".dreamd-archive")
    assert (tmp_path / "MEMORY.md").read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".dreamd-archive", "MEMORY.md"]
    assert list((tmp_path / ".dreamd-archive").iterdir()) == []


def _late_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """No leases (a note dreamd's user does not own), and someone holding a.md open writes a
    line to it right after dreamd checked the displaced file; the descriptor they hold."""
    from daemon.stores import files

    (tmp_path / "a.md").write_bytes(b"old\n")
    held = os.open(tmp_path / "a.md", os.O_WRONLY | os.O_APPEND)
    real = files._check_late

    def late(place, checked, keep):  # noqa: ANN001
        os.write(held, b"late\n")
        return real(place, checked, keep)

    monkeypatch.setattr(files, "_take_lease", lambda fd, tries: None)
    monkeypatch.setattr(files, "_check_late", late)
    return held


def test_bytes_written_in_the_last_instant_are_in_a_caught_file_even_if_they_cannot_be_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes written to the displaced file after its check are read back and go to a caught
    file beside the note before anything else; if storing them fails too (the database is
    gone), that error is raised, and they are still there, not in a removed file."""
    from daemon.core.errors import StateError
    from daemon.core.hashing import hash_bytes

    held = _late_write(tmp_path, monkeypatch)

    def refused(path: str, data: bytes) -> None:
        raise StateError("the state database is gone")

    with pytest.raises(StateError):
        write_atomic(tmp_path, "a.md", b"new\n", expected={hash_bytes(b"old\n")}, keep=refused, tag=temp_tag(7))
    os.close(held)
    assert (tmp_path / "a.md.dreamd-caught-j7.txt").read_bytes() == b"late\n"
    assert leftovers(tmp_path) == []


def test_bytes_with_no_room_for_a_caught_file_stay_in_a_tagged_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If not even a caught file can be written, the bytes read back stay in a temp file tagged
    with the journal (the error says so), which recovery's cleanup turns into the caught file."""
    from daemon.core.errors import EditRacedError
    from daemon.core.hashing import hash_bytes
    from daemon.stores import caught

    held = _late_write(tmp_path, monkeypatch)

    def full(*args: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(caught, "write", full)
    kept: list[bytes] = []
    with pytest.raises(EditRacedError, match="a.md was written to in the instant dreamd replaced it; what was written then is in a temp file recovery keeps"):
        write_atomic(tmp_path, "a.md", b"new\n", expected={hash_bytes(b"old\n")}, keep=lambda path, data: kept.append(data), tag=temp_tag(7))
    os.close(held)
    monkeypatch.undo()
    assert kept == [b"old\nlate\n"]
    assert cleanup_temp_files(tmp_path, (temp_tag(7),), known={hash_bytes(b"old\n"): b"old\n", hash_bytes(b"new\n"): b"new\n"}) != []
    assert (tmp_path / "a.md.dreamd-caught-j7.txt").read_bytes() == b"late\n"
    assert leftovers(tmp_path) == []
