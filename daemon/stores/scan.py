"""Scan a store: read every file safely, hash it, and report what could not be read.

A scan is the snapshot every proposal is built from, so it must never read outside
the store (symlinks are skipped, never followed), never hang (FIFOs are opened
non-blocking and not read), and never fail on one bad file (it is reported instead).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter
from pathlib import Path

from daemon.core.errors import StoreError
from daemon.core.hashing import hash_bytes, root_hash
from daemon.stores.files import READ_FLAGS, is_temp_name, read_fd
from daemon.stores.paths import store_root
from daemon.stores.presets import StoreSettings

SKIP_REASONS = ("symlink", "too-large", "binary", "not-utf8", "unreadable", "special-file")
_BINARY_PROBE = 8192
# A symlink or socket swapped in after listing fails open(); name it for what it is.
_OPEN_ERRORS: dict[int | None, str] = {errno.ELOOP: "symlink", errno.ENXIO: "special-file"}


@dataclass(frozen=True)
class FileEntry:
    """One file as scanned: its store-relative path, bytes and BLAKE3 hash."""

    path: str
    data: bytes
    hash: str
    size: int
    mtime_ns: int

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


@dataclass(frozen=True)
class Skipped:
    """A file or folder the scan left out, and why (one of SKIP_REASONS)."""

    path: str
    reason: str


@dataclass(frozen=True)
class ScanResult:
    """A store at one moment: live files, archived files, and what was skipped."""

    root: Path
    files: dict[str, FileEntry]
    archived: dict[str, FileEntry]
    notes: dict[str, FileEntry]
    skipped: list[Skipped]

    @cached_property
    def manifest(self) -> dict[str, str]:
        """Path -> hash of live and archived files: the store's recoverable state."""
        return {path: entry.hash for path, entry in (self.files | self.archived).items()}

    @cached_property
    def root_hash(self) -> str:
        return root_hash(self.manifest)


def scan_store(root: Path, settings: StoreSettings) -> ScanResult:
    """Read the store at ``root``; StoreError only if the root itself cannot be read.

    Symlinks are reported, never followed. The top-level archive folder goes to
    ``archived``; other dot folders (.git) and excluded paths are left out silently, as
    are subfolders of a flat store and our own atomic-write temp files.
    """
    base = store_root(root)
    try:
        top = _listing(str(base))
    except OSError as exc:
        raise StoreError(f"cannot read store root {base}: {exc.strerror}") from exc
    files: dict[str, FileEntry] = {}
    archived: dict[str, FileEntry] = {}
    skipped: list[Skipped] = []
    pending = [(top, "", files)]
    while pending:
        listing, prefix, into = pending.pop()
        for entry in listing:
            rel = prefix + entry.name
            if entry.is_symlink():
                skipped.append(Skipped(rel, "symlink"))
            elif settings.is_excluded(rel):
                continue
            elif entry.is_dir(follow_symlinks=False):
                if prefix == "" and entry.name == settings.archive_dir:
                    target = archived
                elif entry.name.startswith(".") or (settings.flat and into is files):
                    continue
                else:
                    target = into
                try:
                    pending.append((_listing(entry.path), rel + "/", target))
                except OSError:
                    skipped.append(Skipped(rel, "unreadable"))
            elif not entry.is_file(follow_symlinks=False):
                skipped.append(Skipped(rel, "special-file"))
            elif not is_temp_name(entry.name):
                result = _read_entry(entry.path, rel, settings.max_file_bytes)
                if isinstance(result, FileEntry):
                    into[rel] = result
                elif result is not None:
                    skipped.append(result)
    files = dict(sorted(files.items()))
    return ScanResult(
        root=base,
        files=files,
        archived=dict(sorted(archived.items())),
        notes={path: entry for path, entry in files.items() if settings.is_note(path)},
        skipped=sorted(skipped, key=attrgetter("path")),
    )


def _listing(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as entries:
        return sorted(entries, key=attrgetter("name"))


def _read_entry(path: str, rel: str, limit: int) -> FileEntry | Skipped | None:
    """The file's entry, why it was skipped, or None if it vanished mid-scan."""
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Skipped(rel, _OPEN_ERRORS.get(exc.errno, "unreadable"))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Skipped(rel, "special-file")
        if info.st_size > limit:
            return Skipped(rel, "too-large")
        data = read_fd(fd, limit, info.st_size)
    except OSError:
        return Skipped(rel, "unreadable")
    finally:
        os.close(fd)
    if len(data) > limit:
        return Skipped(rel, "too-large")
    if data.find(b"\0", 0, _BINARY_PROBE) != -1:
        return Skipped(rel, "binary")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return Skipped(rel, "not-utf8")
    return FileEntry(rel, data, hash_bytes(data), len(data), info.st_mtime_ns)
