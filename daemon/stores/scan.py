"""Scan a store: read every file safely, hash it, and report what could not be read.

A scan is the snapshot every proposal is built from, so it must never read outside
the store (symlinks are skipped, never followed), never hang (FIFOs are opened
non-blocking and not read), and never fail on one bad file (it is reported instead).

Given what an earlier scan saw (``seen``, see ``statcache``), a file whose stat still
matches is not read or hashed: its entry takes the recorded hash, and its bytes are read
only if someone asks for them (through the store's folder descriptors, hash checked).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from array import array
from collections.abc import Mapping
from functools import cached_property
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

import blake3

from daemon.core.errors import StoreError
from daemon.core.hashing import hash_bytes, root_hash
from daemon.stores.folders import DIR_FLAGS, open_root
from daemon.stores.paths import StoreRoots, open_roots
from daemon.stores.presets import StoreSettings
from daemon.stores.statcache import RACY_NS, Seen

NEVER_SCANNED = (".git",)  # a repository's own folder is never notes, whoever lists it
_TEMP_MARKER = ".dreamd-tmp-"  # in every temp file's name (stores.files.TEMP_MARKER; a test holds the two equal)

SKIP_REASONS = ("symlink", "too-large", "binary", "not-utf8", "unreadable", "special-file", "bad-name", "hard-link")
_BINARY_PROBE = 8192
# A symlink or socket swapped in after listing fails open(); name it for what it is.
_OPEN_ERRORS: dict[int | None, str] = {errno.ELOOP: "symlink", errno.ENOTDIR: "symlink", errno.ENXIO: "special-file"}


class FileEntry:
    """One file as scanned: its store-relative path, BLAKE3 hash and stat, and its bytes.

    ``read`` holds the bytes when this scan read them; None when the stat cache vouched for
    the file, and then ``data`` reads them on first use from ``roots``, refusing bytes that
    no longer have ``hash``. Nothing changes one after its scan. A plain class, as every
    class the no-op lane builds (see service/passes/noop.py); equal entries have the same
    path, hash, stat and bytes read.
    """

    def __init__(self, path: str, hash: str, size: int, mtime_ns: int, ino: int, ctime_ns: int, read: bytes | None = None,
                 roots: StoreRoots | None = None) -> None:  # fmt: skip
        self.path = path
        self.hash = hash
        self.size = size
        self.mtime_ns = mtime_ns
        self.ino = ino
        self.ctime_ns = ctime_ns
        self.read = read
        self.roots = roots

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileEntry):
            return NotImplemented
        return self._compared() == other._compared()

    __hash__ = None  # type: ignore[assignment]  # equal by value, and not frozen

    def _compared(self) -> tuple[object, ...]:
        return (self.path, self.hash, self.size, self.mtime_ns, self.ino, self.ctime_ns, self.read)

    def __repr__(self) -> str:
        return f"FileEntry(path={self.path!r}, hash={self.hash!r}, size={self.size})"

    @cached_property
    def data(self) -> bytes:
        if self.read is not None:
            return self.read
        assert self.roots is not None  # an entry is either read or vouched for, with its roots
        from daemon.stores.files import read_file

        data = read_file(self.roots, self.path)
        if data is None or hash_bytes(data) != self.hash:
            raise StoreError(f"{self.path} changed after the scan vouched for it; nothing was planned from it", hint="the next pass reads it again")
        return data

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")

    def seen(self, scanned_ns: int) -> Seen:
        """What the stat cache records of this file, read by a scan that began at ``scanned_ns``."""
        return Seen(self.size, self.mtime_ns, self.ino, self.ctime_ns, self.hash, scanned_ns)


class Skipped(NamedTuple):
    """A file or folder the scan left out, and why (one of SKIP_REASONS)."""

    path: str
    reason: str


class ScanResult:
    """A store at one moment: live files, archived files, and what was skipped."""

    def __init__(self, roots: StoreRoots, files: dict[str, FileEntry], archived: dict[str, FileEntry], notes: dict[str, FileEntry],
                 skipped: list[Skipped], started_ns: int = 0) -> None:  # fmt: skip
        self.roots = roots
        self.files = files
        self.archived = archived
        self.notes = notes
        self.skipped = skipped
        self.started_ns = started_ns  # wall clock when the scan began: what makes a file racily clean

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

    @property
    def vouched(self) -> int:
        """How many files the stat cache vouched for (not read by this scan)."""
        return sum(1 for entry in (self.files | self.archived).values() if entry.read is None)

    def stat_changes(self, seen: Mapping[str, Seen]) -> tuple[dict[str, Seen], list[str]]:
        """What the stat cache must change after this scan: rows for the files it read whose
        trusted row no longer holds (or that had none), and the paths no longer there. A
        vouched file's row stands, so a pass over an unchanged store changes nothing."""
        rows = {}
        for path, entry in (self.files | self.archived).items():
            if entry.read is None:
                continue
            old = seen.get(path)
            if old is None or not old.trusted() or old != entry.seen(old.scanned_ns):
                rows[path] = entry.seen(self.started_ns)
        present = self.files.keys() | self.archived.keys()
        return rows, sorted(path for path in seen if path not in present)


def scan_store(root: StoreRoots | Path, settings: StoreSettings, seen: Mapping[str, Seen] | None = None, started_ns: int | None = None) -> ScanResult:
    """Read the store; StoreError only if a root itself cannot be read.

    The notes root is walked as the agent lists it (flat or recursive, dot-folders or not);
    ``.git``, excluded paths and our own atomic-write temp files are left out silently.
    The archive root's files go to ``archived``. Symlinks are reported, never followed.
    A file ``seen`` vouches for (see ``_Walk._take_vouched``) is not read. ``started_ns``: the
    wall clock now (``time.time_ns()`` unless given).
    """
    roots = root if isinstance(root, StoreRoots) else open_roots(root, settings.archive_root)
    walk = _Walk(settings, roots, seen or {})
    started_ns = time.time_ns() if started_ns is None else started_ns
    walk.walk()
    files = dict(sorted(walk.files.items()))
    return ScanResult(
        roots=roots,
        files=files,
        archived=dict(sorted(walk.archived.items())),
        notes={path: files[path] for path in settings.notes_among(files)},
        skipped=sorted(walk.skipped, key=attrgetter("path")),
        started_ns=started_ns,
    )


class Glimpse:
    """A store the stat cache vouches for whole: every file's recorded hash, none read."""

    def __init__(self, manifest: dict[str, str], notes: int, skipped: list[Skipped]) -> None:
        self.manifest = manifest  # path -> hash of live and archived files, as ScanResult.manifest
        self.notes = notes  # how many of them are notes
        self.skipped = skipped

    @cached_property
    def root_hash(self) -> str:
        return root_hash(self.manifest)


def glimpse(roots: StoreRoots, settings: StoreSettings, seen: Mapping[str, tuple[int, int, int, int, str, int]]) -> Glimpse | None:
    """What ``scan_store(roots, settings, seen)`` would find when the stat cache vouches for
    every file, without a FileEntry each; None as soon as one file would have to be read.
    ``seen`` maps a path to its row as a plain tuple (size, mtime_ns, ino, ctime_ns, hash,
    scanned_ns): the no-op lane's walk, where every microsecond a file is paid 10,000 times."""
    walk = _Glance(settings, roots, seen)  # type: ignore[arg-type]
    try:
        walk.walk()
    except _Unvouched:
        return None
    manifest = walk.files | walk.archived
    return Glimpse(manifest, len(settings.notes_among(walk.files)), sorted(walk.skipped, key=attrgetter("path")))  # type: ignore[arg-type]


class _Walk:
    """One scan's state: what it read into live files and the archive, and what it skipped."""

    def __init__(self, settings: StoreSettings, roots: StoreRoots, seen: Mapping[str, Seen]) -> None:
        self.settings = settings
        self.roots = roots
        self.seen = seen
        self.files: dict[str, FileEntry] = {}
        self.archived: dict[str, FileEntry] = {}
        self.skipped: list[Skipped] = []

    def walk(self) -> None:
        """The notes root, and the archive root when it is beside it."""
        self.folder(self.roots.notes, "", self.files, "store")
        if self.roots.beside and self.roots.archive.is_dir():
            self.folder(self.roots.archive, self.roots.archive_prefix + "/", self.archived, "archive")

    def unread(self, rel: str, seen: tuple[int, int, int, int, str, int]) -> FileEntry:
        """The entry of a file the stat cache vouches for."""
        size, mtime_ns, ino, ctime_ns, digest, _ = seen
        return FileEntry(rel, digest, size, mtime_ns, ino, ctime_ns, None, self.roots)

    def read(self, folder: int, name: str, rel: str) -> FileEntry | Skipped | None:
        return _read_entry(folder, name, rel, self.settings.max_file_bytes)

    def folder(self, path: Path, prefix: str, into: dict[str, FileEntry], what: str) -> None:
        """Read a root folder and everything below it that the walk reads.

        Folders are walked by descriptor (``O_NOFOLLOW`` per component) and files opened
        relative to their folder's, so one swapped for a symlink mid-scan is never followed.
        """
        try:
            top = open_root(self.roots) if what == "store" else os.open(path, DIR_FLAGS)
        except OSError as exc:
            raise StoreError(f"cannot read {what} root {path}: {exc.strerror}") from exc
        pending = [(top, prefix, into)]
        try:
            while pending:
                fd, prefix, target = pending[-1]
                try:
                    entries = _listing(fd)
                except OSError:
                    self.skipped.append(Skipped(prefix.rstrip("/") or ".", "unreadable"))
                    entries = []
                pending.pop()
                try:
                    for entry in self._sift(entries, prefix, target):
                        self._entry(fd, entry, prefix, target, pending)
                finally:
                    os.close(fd)
        finally:
            for fd, _, _ in pending:
                os.close(fd)

    def _sift(self, entries: list[os.DirEntry[str]], prefix: str, target: dict[str, FileEntry]) -> list[os.DirEntry[str]]:
        """The entries of a folder that need ``_entry``: those the stat cache does not vouch for."""
        return self._take_vouched(entries, prefix, target) if self.seen else entries

    def _take_vouched(self, entries: list[os.DirEntry[str]], prefix: str, target: dict[str, FileEntry]) -> list[os.DirEntry[str]]:
        """Put the files the stat cache vouches for into ``target`` unread; return the other
        entries, for every check a scan makes. A file an earlier scan read has a UTF-8 name
        and is no temp file, so what is left to check is that it is still a regular file with
        one name, within the size limit, not excluded since, with the size, mtime, inode and
        ctime its row recorded, and that the row is trusted (``statcache.Seen.trusted``: the
        file was last changed clearly before it was read). One loop with its lookups held in
        locals and the rule written out: this runs for every file of every pass."""
        seen_of, limit, unread, racy = self.seen.get, self.settings.max_file_bytes, self.unread, RACY_NS
        excluded = self.settings.is_excluded if self.settings.exclude else None
        regular = stat.S_ISREG
        rest = []
        for entry in entries:
            rel = prefix + entry.name
            seen = seen_of(rel)
            if seen is None or not entry.is_file(follow_symlinks=False) or (excluded is not None and excluded(rel)):
                rest.append(entry)
                continue
            try:
                info = entry.stat(follow_symlinks=False)  # fstatat on the folder's descriptor
            except OSError:
                rest.append(entry)
                continue
            size, mtime_ns, ino, ctime_ns, _, scanned_ns = seen
            if (
                info.st_mtime_ns == mtime_ns and info.st_ctime_ns == ctime_ns and info.st_size == size and info.st_ino == ino
                and (mtime_ns if mtime_ns > ctime_ns else ctime_ns) < scanned_ns - racy
                and info.st_nlink == 1 and size <= limit and regular(info.st_mode)
            ):  # fmt: skip
                target[rel] = unread(rel, seen)
            else:
                rest.append(entry)
        return rest

    def _entry(self, fd: int, entry: os.DirEntry[str], prefix: str, target: dict[str, FileEntry], pending: list[tuple[int, str, dict[str, FileEntry]]]) -> None:
        rel = prefix + entry.name
        if not _utf8(entry.name):
            self.skipped.append(Skipped(printable(rel), "bad-name"))  # no UTF-8 name to record it under
        elif entry.is_symlink():
            self.skipped.append(Skipped(rel, "symlink"))
        elif self.settings.exclude and self.settings.is_excluded(rel):
            return
        elif entry.is_dir(follow_symlinks=False):
            below = self._into(rel, entry.name, target)
            if below is None:
                return
            try:
                pending.append((os.open(entry.name, DIR_FLAGS, dir_fd=fd), rel + "/", below))
            except OSError as exc:
                self.skipped.append(Skipped(rel, _OPEN_ERRORS.get(exc.errno, "unreadable")))
        elif not entry.is_file(follow_symlinks=False):
            self.skipped.append(Skipped(rel, "special-file"))
        elif not _is_temp_name(entry.name):
            result = self.read(fd, entry.name, rel)
            if isinstance(result, FileEntry):
                target[rel] = result
            elif result is not None:
                self.skipped.append(result)

    def _into(self, rel: str, name: str, target: dict[str, FileEntry]) -> dict[str, FileEntry] | None:
        """Where a subfolder's files go (live files, the archive), or None when it is not read."""
        if target is self.archived:
            return self.archived
        if name in NEVER_SCANNED:
            return None
        if rel == self.roots.archive_prefix:
            if self.roots.beside:
                raise StoreError(f"a folder {rel}/ inside the notes root has the archive root's name", hint=f"rename it: dreamd keeps retired notes in {self.roots.archive}")
            return self.archived
        listing = self.settings.listing
        if not listing.recursive or (name.startswith(".") and not listing.dot_dirs):
            return None
        return target


class _Unvouched(Exception):
    """A file the stat cache does not vouch for: the glimpse is over."""


class _Glance(_Walk):
    """The walk of ``glimpse``: a vouched file is its recorded hash; a file read that is no
    binary, too large or otherwise skipped (as every scan would) ends it."""

    def unread(self, rel: str, seen: tuple[int, int, int, int, str, int]) -> str:  # type: ignore[override]
        return seen[4]

    def read(self, folder: int, name: str, rel: str) -> FileEntry | Skipped | None:
        found = super().read(folder, name, rel)
        if isinstance(found, FileEntry):
            raise _Unvouched(rel)
        return found


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, kept by the OS as surrogates
        return False
    return True


def printable(name: str) -> str:
    """A name as it can be shown and stored: undecodable bytes as \\xNN escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _listing(fd: int) -> list[os.DirEntry[str]]:
    """A folder's entries, in the order the file system gives them (a scan sorts what it found)."""
    with os.scandir(fd) as entries:
        return list(entries)


def _is_temp_name(name: str) -> bool:
    from daemon.stores.files import is_temp_name

    return is_temp_name(name)


def _read_entry(folder: int, name: str, rel: str, limit: int) -> FileEntry | Skipped | None:
    """The file's entry, why it was skipped, or None if it vanished mid-scan. The write
    side's module (``stores.files``) is imported by the first file read, not with this one:
    a pass over an unchanged store reads no file."""
    from daemon.stores.files import READ_FLAGS, read_fd

    try:
        fd = os.open(name, READ_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Skipped(rel, _OPEN_ERRORS.get(exc.errno, "unreadable"))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Skipped(rel, "special-file")
        if info.st_nlink > 1:  # its bytes are shared with a name that may be outside the store
            return Skipped(rel, "hard-link")
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
    return FileEntry(rel, hash_bytes(data), len(data), info.st_mtime_ns, info.st_ino, info.st_ctime_ns, read=data)


StatKey = tuple[int, int, int, int]  # size, mtime_ns, ino, ctime_ns


class StatWalk:
    """A store's files as their stats show them, none read and no stat-cache row looked up:
    every file a scan would read or take on the stat cache's word, with its stat, and what
    the walk skipped without reading (symlinks, special files, bad names...).

    ``digest`` sums up the paths and stats; the no-op lane keeps it once the stat cache has
    vouched for every one of these files (``glimpse``), and next time compares this digest
    alone with it instead of the store's rows one by one. Equal digests say what equal rows
    say: no file has been written, replaced or added since (see stores/statcache.py)."""

    def __init__(self, files: dict[str, StatKey], archived: dict[str, StatKey], skipped: list[Skipped], started_ns: int) -> None:
        self.files = files  # live files
        self.archived = archived
        self.skipped = skipped
        self.started_ns = started_ns  # wall clock when the walk began

    @cached_property
    def digest(self) -> str:
        """BLAKE3 of the paths in order, each ended by a NUL (no path holds one), then of
        their stats in that order as unsigned 64-bit numbers: two flat encodings rather than
        a text per file (4 ms where 11 ms for 10,000 files); the numbers are read straight
        into the array, with no list of 40,000 between."""
        stats = self.files | self.archived
        paths = sorted(stats)
        hasher = blake3.blake3("\0".join(paths).encode("utf-8"))
        hasher.update(b"\0" + array("Q", chain.from_iterable(map(stats.__getitem__, paths))).tobytes())
        return hasher.hexdigest()


def stat_walk(roots: StoreRoots, settings: StoreSettings) -> StatWalk | None:
    """Every file ``scan_store(roots, settings)`` would read, with its stat, none read; None
    when a file could be read only by reading it (one that changed between its stat and its
    opening)."""
    walk = _StatOnly(settings, roots, {})
    started_ns = time.time_ns()
    try:
        walk.walk()
    except _Unvouched:
        return None
    return StatWalk(walk.files, walk.archived, walk.skipped, started_ns)  # type: ignore[arg-type]


class _StatOnly(_Glance):
    """The walk of ``stat_walk``: a file a scan would read is kept with its stat, unread; a
    file it would skip is skipped as a scan skips it (reading no bytes, only its stat)."""

    def _sift(self, entries: list[os.DirEntry[str]], prefix: str, target: dict[str, FileEntry]) -> list[os.DirEntry[str]]:
        """Keep each regular file of one name and within the size limit, not excluded, not a
        temp file, with a UTF-8 name; return the rest for ``_entry``. Like ``_take_vouched``,
        one loop with its lookups held in locals: this runs for every file of every pass."""
        limit, regular = self.settings.max_file_bytes, stat.S_ISREG
        excluded = self.settings.is_excluded if self.settings.exclude else None
        named = _all_utf8(entries)
        rest = []
        for entry in entries:
            name = entry.name
            rel = prefix + name
            if (
                not entry.is_file(follow_symlinks=False) or _TEMP_MARKER in name
                or not (named or _utf8(name)) or (excluded is not None and excluded(rel))
            ):  # fmt: skip
                rest.append(entry)
                continue
            try:
                info = entry.stat(follow_symlinks=False)  # fstatat on the folder's descriptor
            except OSError:
                rest.append(entry)
                continue
            if info.st_nlink == 1 and info.st_size <= limit and regular(info.st_mode):
                target[rel] = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)  # type: ignore[assignment]
            else:
                rest.append(entry)
        return rest


def _all_utf8(entries: list[os.DirEntry[str]]) -> bool:
    """Whether every name of a folder is UTF-8: one encoding for the folder, not one per name."""
    try:
        "".join([entry.name for entry in entries]).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
