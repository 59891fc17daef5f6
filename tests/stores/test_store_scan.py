"""Scanning a store: safe reads, stable hashes, and every bad file reported, never fatal."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from daemon.core.errors import StoreError
from daemon.stores.presets import resolve_settings
from daemon.stores.scan import ScanResult, Skipped, scan_store

SECRET = b"TOP-SECRET-DO-NOT-READ"
GENERIC = resolve_settings("generic", {})
FLAT = resolve_settings("deepcode", {})


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def all_bytes(result: ScanResult) -> bytes:
    return b"".join(entry.data for entry in (result.files | result.archived).values())


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    return root


def test_nested_store_lists_every_file(store: Path) -> None:
    """A nested store reads subfolders; only markdown files become notes."""
    write(store, "a.md", "# a\n")
    write(store, "sub/deeper/b.md", "# b\n")
    write(store, "notes.txt", "plain\n")
    result = scan_store(store, GENERIC)
    assert list(result.files) == ["a.md", "notes.txt", "sub/deeper/b.md"]
    assert list(result.notes) == ["a.md", "sub/deeper/b.md"]
    assert result.skipped == []
    entry = result.files["a.md"]
    assert (entry.data, entry.size, entry.text) == (b"# a\n", 4, "# a\n")
    assert entry.mtime_ns == (store / "a.md").stat().st_mtime_ns


def test_flat_store_ignores_subfolders_but_lists_archive(store: Path) -> None:
    """A flat store reads top-level files only, plus its archive folder at any depth."""
    write(store, "MEMORY.md", "- [a](a.md)\n")
    write(store, "a.md", "a\n")
    write(store, "sub/b.md", "b\n")
    write(store, ".dreamd-archive/old.md", "old\n")
    write(store, ".dreamd-archive/2024/older.md", "older\n")
    result = scan_store(store, FLAT)
    assert list(result.files) == ["MEMORY.md", "a.md"]
    assert list(result.archived) == [".dreamd-archive/2024/older.md", ".dreamd-archive/old.md"]
    assert ".dreamd-archive/old.md" in result.manifest and "a.md" in result.manifest
    assert "a.md" in result.notes and ".dreamd-archive/old.md" not in result.notes
    assert result.skipped == []


def test_dot_folders_and_excludes_are_skipped_silently(store: Path) -> None:
    """Dot folders such as .git and excluded globs are left out without a report."""
    write(store, "a.md", "a\n")
    write(store, ".git/config", "[core]\n")
    write(store, "drafts/x.md", "x\n")
    write(store, "scratch.tmp", "x\n")
    settings = resolve_settings("generic", {"exclude": ["drafts/", "*.tmp"]})
    result = scan_store(store, settings)
    assert list(result.files) == ["a.md"]
    assert result.skipped == []


def test_leftover_temp_files_are_not_store_content(store: Path) -> None:
    """A crashed write's temp file does not enter the manifest."""
    write(store, "a.md", "a\n")
    write(store, ".a.md.dreamd-tmp-0123abcd", "half\n")
    assert list(scan_store(store, GENERIC).files) == ["a.md"]


def test_symlink_to_outside_file_is_never_read(tmp_path: Path, store: Path) -> None:
    """A symlink to a file outside the store is reported and its bytes never read."""
    outside = write(tmp_path, "secret.txt", SECRET)
    write(store, "a.md", "a\n")
    (store / "leak.md").symlink_to(outside)
    result = scan_store(store, GENERIC)
    assert list(result.files) == ["a.md"]
    assert result.skipped == [Skipped("leak.md", "symlink")]
    assert SECRET not in all_bytes(result)


def test_symlinked_folder_is_not_descended(tmp_path: Path, store: Path) -> None:
    """A symlinked folder, even one pointing inside the store, is reported and not walked."""
    write(tmp_path, "outside/secret.md", SECRET)
    write(store, "inside/a.md", "a\n")
    (store / "out").symlink_to(tmp_path / "outside")
    (store / "again").symlink_to(store / "inside")
    result = scan_store(store, GENERIC)
    assert list(result.files) == ["inside/a.md"]
    assert result.skipped == [Skipped("again", "symlink"), Skipped("out", "symlink")]
    assert SECRET not in all_bytes(result)


def test_symlinked_archive_is_not_descended(tmp_path: Path, store: Path) -> None:
    """An archive folder that is a symlink is refused when the store is opened, and one swapped
    in after that is reported by the scan, not read."""
    from daemon.core.errors import UnsafePathError
    from daemon.stores.paths import open_roots

    write(tmp_path, "elsewhere/secret.md", SECRET)
    roots = open_roots(store, FLAT.archive_root)
    (store / ".dreamd-archive").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError, match="is a symlink"):
        scan_store(store, FLAT)
    result = scan_store(roots, FLAT)
    assert result.archived == {}
    assert result.skipped == [Skipped(".dreamd-archive", "symlink")]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"text\0with nul", "binary"),
        (b"caf\xe9 latin-1", "not-utf8"),
        (b"x" * 101, "too-large"),
    ],
)
def test_bad_content_is_reported(store: Path, data: bytes, reason: str) -> None:
    """Binary, non-UTF-8 and oversized files are skipped with their reason."""
    write(store, "ok.md", "x" * 100)
    write(store, "bad.md", data)
    result = scan_store(store, resolve_settings("generic", {"max_file_bytes": 100}))
    assert list(result.files) == ["ok.md"]
    assert result.skipped == [Skipped("bad.md", reason)]


def test_fifo_is_reported_without_blocking(store: Path) -> None:
    """A FIFO is a special file: reported, never opened for a blocking read."""
    os.mkfifo(store / "pipe.md")
    result = scan_store(store, GENERIC)
    assert result.skipped == [Skipped("pipe.md", "special-file")]


def test_socket_is_reported(tmp_path: Path) -> None:
    """A socket in the store is a special file."""
    root = tmp_path / "s"  # keep the socket path short (AF_UNIX limit)
    root.mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
        assert scan_store(root, GENERIC).skipped == [Skipped("sock", "special-file")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads through chmod 000")
def test_unreadable_file_and_folder_are_reported(store: Path) -> None:
    """Files and folders without read permission are reported as unreadable."""
    locked = write(store, "locked.md", "x")
    write(store, "closed/a.md", "x")
    locked.chmod(0)
    (store / "closed").chmod(0)
    try:
        result = scan_store(store, GENERIC)
    finally:
        locked.chmod(0o644)
        (store / "closed").chmod(0o755)
    assert result.skipped == [Skipped("closed", "unreadable"), Skipped("locked.md", "unreadable")]


def test_root_hash_is_stable_and_sensitive(store: Path) -> None:
    """The root hash repeats across scans and changes when one byte changes."""
    write(store, "a.md", "alpha\n")
    write(store, "sub/b.md", "beta\n")
    first = scan_store(store, GENERIC).root_hash
    assert scan_store(store, GENERIC).root_hash == first
    write(store, "sub/b.md", "betA\n")
    assert scan_store(store, GENERIC).root_hash != first


def test_archived_files_count_in_the_root_hash(store: Path) -> None:
    """Changing an archived file changes the root hash: it is recoverable state."""
    write(store, "a.md", "a\n")
    write(store, ".dreamd-archive/old.md", "old\n")
    first = scan_store(store, FLAT).root_hash
    write(store, ".dreamd-archive/old.md", "0ld\n")
    assert scan_store(store, FLAT).root_hash != first


def test_root_through_symlink_is_resolved(tmp_path: Path, store: Path) -> None:
    """A store reached through a symlinked root scans normally, from its real path."""
    write(store, "a.md", "a\n")
    (tmp_path / "alias").symlink_to(store)
    result = scan_store(tmp_path / "alias", GENERIC)
    assert result.root == store.resolve() and list(result.files) == ["a.md"]


def test_missing_root_is_one_clear_error(tmp_path: Path) -> None:
    """A missing store root is a StoreError naming it."""
    with pytest.raises(StoreError, match="nowhere"):
        scan_store(tmp_path / "nowhere", GENERIC)
