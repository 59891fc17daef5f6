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
from daemon.stores.paths import StoreRoots, open_roots
from daemon.stores.presets import StoreSettings

NEVER_SCANNED = (".git",)  # a repository's own folder is never notes, whoever lists it

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

    roots: StoreRoots
    files: dict[str, FileEntry]
    archived: dict[str, FileEntry]
    notes: dict[str, FileEntry]
    skipped: list[Skipped]

    @property
    def root(self) -> Path:
        return self.roots.notes

    @cached_property
    def manifest(self) -> dict[str, str]:
        """Path -> hash of live and archived files: the store's recoverable state."""
        return {path: entry.hash for path, entry in (self.files | self.archived).items()}

    @cached_property
    def root_hash(self) -> str:
        return root_hash(self.manifest)


def scan_store(root: StoreRoots | Path, settings: StoreSettings) -> ScanResult:
    """Read the store; StoreError only if a root itself cannot be read.

    The notes root is walked as the agent lists it (flat or recursive, dot-folders or not);
    ``.git``, excluded paths and our own atomic-write temp files are left out silently.
    The archive root's files go to ``archived``. Symlinks are reported, never followed.
    """
    roots = root if isinstance(root, StoreRoots) else open_roots(root, settings.archive_root)
    files: dict[str, FileEntry] = {}
    archived: dict[str, FileEntry] = {}
    skipped: list[Skipped] = []
    walk = [(roots.notes, "", files)]
    if roots.beside and roots.archive.is_dir():
        walk.append((roots.archive, roots.archive_prefix + "/", archived))
    for folder, prefix, into in walk:
        try:
            top = _listing(str(folder))
        except OSError as exc:
            raise StoreError(f"cannot read {'archive' if into is archived else 'store'} root {folder}: {exc.strerror}") from exc
        _walk(top, prefix, into, settings, roots, archived, skipped)
    files = dict(sorted(files.items()))
    return ScanResult(
        roots=roots,
        files=files,
        archived=dict(sorted(archived.items())),
        notes={path: entry for path, entry in files.items() if settings.is_note(path)},
        skipped=sorted(skipped, key=attrgetter("path")),
    )


def _walk(top: list[os.DirEntry[str]], prefix: str, into: dict[str, FileEntry], settings: StoreSettings, roots: StoreRoots, archived: dict[str, FileEntry], skipped: list[Skipped]) -> None:  # noqa: PLR0913
    listing = settings.listing
    pending = [(top, prefix, into)]
    while pending:
        entries, prefix, target = pending.pop()
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_symlink():
                skipped.append(Skipped(rel, "symlink"))
            elif settings.is_excluded(rel):
                continue
            elif entry.is_dir(follow_symlinks=False):
                folder = _folder_target(rel, entry.name, target, archived, listing, roots)
                if folder is None:
                    continue
                try:
                    pending.append((_listing(entry.path), rel + "/", folder))
                except OSError:
                    skipped.append(Skipped(rel, "unreadable"))
            elif not entry.is_file(follow_symlinks=False):
                skipped.append(Skipped(rel, "special-file"))
            elif not is_temp_name(entry.name):
                result = _read_entry(entry.path, rel, settings.max_file_bytes)
                if isinstance(result, FileEntry):
                    target[rel] = result
                elif result is not None:
                    skipped.append(result)


def _folder_target(rel: str, name: str, target: dict[str, FileEntry], archived: dict[str, FileEntry], listing, roots: StoreRoots):  # noqa: ANN001, ANN202
    """Where a folder's files go (live files, the archive), or None when it is not read."""
    if target is archived:
        return archived
    if name in NEVER_SCANNED:
        return None
    if rel == roots.archive_prefix:
        if roots.beside:
            raise StoreError(f"a folder {rel}/ inside the notes root has the archive root's name", hint=f"rename it: dreamd keeps retired notes in {roots.archive}")
        return archived
    if not listing.recursive or (name.startswith(".") and not listing.dot_dirs):
        return None
    return target


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
