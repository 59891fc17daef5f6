"""The stat cache in a scan: a file whose stat is what a trusted row recorded is not read; any other is."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from daemon.core.errors import StoreError
from daemon.core.hashing import hash_bytes
from daemon.stores.presets import resolve_settings
from daemon.stores.scan import scan_store
from daemon.stores.statcache import RACY_NS, Seen

FLAT = resolve_settings("deepcode", {})
OLD_NS = 1_700_000_000 * 10**9
BOGUS = "f" * 64  # a hash no bytes of these tests have: an entry carrying it was not read
TEXT = b"# build\n\nRun `make test`.\n"


@pytest.fixture
def note(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    path = root / "build.md"
    path.write_bytes(TEXT)
    os.utime(path, ns=(OLD_NS, OLD_NS))
    return path


def _row(path: Path, hash_: str = BOGUS, *, later_ns: int = 10 * 10**9) -> Seen:
    """A row recording the file's stat now, as read by a scan ``later_ns`` after its last change."""
    info = os.stat(path)
    return Seen(info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, hash_, info.st_ctime_ns + later_ns)


def test_a_file_a_trusted_row_vouches_for_is_not_read(note: Path) -> None:
    """Same size, mtime, inode and ctime as a trusted row: the entry takes the row's hash and holds no bytes."""
    scan = scan_store(note.parent, FLAT, {"build.md": _row(note)})
    entry = scan.files["build.md"]
    assert (entry.hash, entry.read, scan.vouched) == (BOGUS, None, 1)


def _same_size_edit(path: Path) -> None:
    path.write_bytes(TEXT.replace(b"test", b"lint"))
    os.utime(path, ns=(OLD_NS, OLD_NS))


def _replaced(path: Path) -> None:
    other = path.with_name("new.tmp")
    other.write_bytes(TEXT)
    os.utime(other, ns=(OLD_NS, OLD_NS))
    os.replace(other, path)


def _appended(path: Path) -> None:
    with path.open("ab") as f:
        f.write(b"More.\n")
    os.utime(path, ns=(OLD_NS, OLD_NS))


def _touched(path: Path) -> None:
    os.utime(path, ns=(OLD_NS + 1, OLD_NS + 1))


def _stat(path: Path) -> tuple[int, int, int, int]:
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


@pytest.mark.parametrize(("change", "moved"), [(_same_size_edit, 3), (_replaced, 2), (_appended, 0), (_touched, 1)], ids=["ctime", "inode", "size", "mtime"])
def test_a_file_whose_stat_moved_is_read_again(note: Path, change, moved: int) -> None:  # noqa: ANN001
    """Any one of size, mtime, inode or ctime differing from the row: the file is read and hashed from its bytes."""
    row = _row(note)
    change(note)
    while _stat(note)[moved] == (row.size, row.mtime_ns, row.ino, row.ctime_ns)[moved]:  # within one tick of the clock
        time.sleep(0.01)
        change(note)
    entry = scan_store(note.parent, FLAT, {"build.md": row}).files["build.md"]
    assert (entry.hash, entry.read) == (hash_bytes(note.read_bytes()), note.read_bytes())


def test_a_racily_clean_file_is_read_again(note: Path) -> None:
    """A row read within RACY_NS of the file's last change is not trusted, though every field matches."""
    row = _row(note, later_ns=RACY_NS)
    entry = scan_store(note.parent, FLAT, {"build.md": row}).files["build.md"]
    assert entry.hash == hash_bytes(TEXT)


def test_a_hard_linked_file_is_never_vouched_for(note: Path) -> None:
    """A second name makes the file a hard link, skipped as every scan skips one, whatever the row says."""
    row = _row(note)
    os.link(note, note.parent.parent / "outside.md")
    scan = scan_store(note.parent, FLAT, {"build.md": row._replace(ctime_ns=os.stat(note).st_ctime_ns)})
    assert (list(scan.files), [(s.path, s.reason) for s in scan.skipped]) == ([], [("build.md", "hard-link")])


def test_bytes_of_a_vouched_file_are_read_on_first_use(note: Path) -> None:
    """Asking a vouched entry for its data reads the file through the store's folders."""
    entry = scan_store(note.parent, FLAT, {"build.md": _row(note, hash_bytes(TEXT))}).files["build.md"]
    assert (entry.read, entry.data) == (None, TEXT)


def test_bytes_that_no_longer_have_the_vouched_hash_are_refused(note: Path) -> None:
    """A vouched entry whose file now holds other bytes raises StoreError instead of handing them out."""
    entry = scan_store(note.parent, FLAT, {"build.md": _row(note)}).files["build.md"]
    with pytest.raises(StoreError, match="build.md changed after the scan vouched for it"):
        entry.data  # noqa: B018


def test_stat_changes_are_the_files_read_anew_and_the_paths_gone(note: Path) -> None:
    """A vouched file's row stands; a new file gets a row with the scan's start time; a vanished path is dropped."""
    (note.parent / "new.md").write_bytes(b"# new\n")
    seen = {"build.md": _row(note, hash_bytes(TEXT)), "gone.md": _row(note)}
    scan = scan_store(note.parent, FLAT, seen, started_ns=123)
    info = os.stat(note.parent / "new.md")
    new = Seen(6, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, hash_bytes(b"# new\n"), 123)
    assert scan.stat_changes(seen) == ({"new.md": new}, ["gone.md"])


def test_a_file_read_again_whose_trusted_row_holds_changes_no_row(note: Path) -> None:
    """A scan that read every file (as a planning pass does) leaves a row that still holds as it was."""
    seen = {"build.md": _row(note, hash_bytes(TEXT))}
    assert scan_store(note.parent, FLAT).stat_changes(seen) == ({}, [])


def test_a_file_read_again_with_other_bytes_than_its_row_gets_a_new_row(note: Path) -> None:
    """A row whose hash the file's bytes do not have (a change the stat missed) is replaced once the file is read."""
    seen = {"build.md": _row(note)}
    rows, gone = scan_store(note.parent, FLAT, started_ns=123).stat_changes(seen)
    assert (rows["build.md"].hash, rows["build.md"].scanned_ns, gone) == (hash_bytes(TEXT), 123, [])


def _vouched_store(root: Path) -> dict[str, Seen]:
    """A nested store with an archive beside it, a symlink, a binary and a too-large file,
    and a trusted row for every file a scan reads."""
    (root / "topic").mkdir(parents=True)
    archive = root.parent / f"{root.name}.dreamd-archive"
    archive.mkdir()
    files = {root / "a.md": b"# A\n", root / "topic" / "b.md": b"# B\n", root / "MEMORY.md": b"- [A](a.md)\n", archive / "old.md": b"# Old\n"}
    for path, data in files.items():
        path.write_bytes(data)
        os.utime(path, ns=(OLD_NS, OLD_NS))
    (root / "blob.md").write_bytes(b"\0binary")
    (root / "link.md").symlink_to(root / "a.md")
    rows = {}
    for path, data in files.items():
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else f"{archive.name}/{path.name}"
        rows[rel] = _row(path, hash_bytes(data))
    return rows


NESTED = resolve_settings("generic", {"archive_root": "../{notes}.dreamd-archive"})


def test_a_glimpse_finds_what_a_scan_finds_without_reading(tmp_path: Path) -> None:
    """Over a store every file of which a trusted row vouches for: the same manifest, root hash,
    note count and skipped files as scan_store, with plain-tuple rows."""
    from daemon.stores.paths import open_roots
    from daemon.stores.scan import glimpse

    root = tmp_path / "notes"
    rows = _vouched_store(root)
    roots = open_roots(root, NESTED.archive_root)
    scan = scan_store(roots, NESTED, rows)
    seen = glimpse(roots, NESTED, {path: tuple(row) for path, row in rows.items()})
    assert scan.vouched == len(scan.manifest) == 4
    assert (seen.manifest, seen.root_hash, seen.notes, seen.skipped) == (scan.manifest, scan.root_hash, len(scan.notes), scan.skipped)
    assert [s.reason for s in seen.skipped] == ["binary", "symlink"]


@pytest.mark.parametrize("change", ["edit", "new", "racy"])
def test_a_glimpse_ends_at_a_file_it_would_have_to_read(tmp_path: Path, change: str) -> None:
    """A file edited or new, or a row read too soon after its file's change: no glimpse (None)."""
    from daemon.stores.paths import open_roots
    from daemon.stores.scan import glimpse

    root = tmp_path / "notes"
    rows = _vouched_store(root)
    if change == "edit":
        (root / "topic" / "b.md").write_bytes(b"# B, edited\n")
    elif change == "new":
        (root / "c.md").write_bytes(b"# C\n")
    else:
        rows["a.md"] = _row(root / "a.md", rows["a.md"].hash, later_ns=RACY_NS)
    assert glimpse(open_roots(root, NESTED.archive_root), NESTED, {path: tuple(row) for path, row in rows.items()}) is None
