"""Path safety for every store read and write (invariant 5: nothing outside the root).

Store paths are relative POSIX strings. Anything that could name a file outside the
store — absolute names, "..", drive letters, backslashes, symlinks — is refused, not
normalised away, so a bad path is an error someone sees rather than a silent rewrite.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, NamedTuple

from daemon.core.errors import StoreError, UnsafePathError

_DRIVE = re.compile(r"[A-Za-z]:")
DEFAULT_ARCHIVE_PREFIX = ".dreamd-archive"


def safe_relpath(rel: str) -> str:
    """Normalise a store-relative path ("./a/./b.md" -> "a/b.md") or raise UnsafePathError."""
    if not isinstance(rel, str):
        raise UnsafePathError(f"store path must be a string, got {type(rel).__name__}")
    if "\0" in rel:
        raise UnsafePathError(f"store path contains a NUL byte: {rel!r}")
    if "\\" in rel:
        raise UnsafePathError(f"store path contains a backslash: {rel!r}")
    if _DRIVE.match(rel):
        raise UnsafePathError(f"store path has a drive letter: {rel!r}")
    if rel.startswith("/"):
        raise UnsafePathError(f"store path is absolute: {rel!r}")
    parts = [part for part in rel.split("/") if part != "."]
    if not parts or "" in parts:
        raise UnsafePathError(f"store path has an empty name: {rel!r}")
    if ".." in parts:
        raise UnsafePathError(f"store path climbs out with '..': {rel!r}")
    return "/".join(parts)


def store_root(root: Path | str) -> Path:
    """Resolve a store root once, when the store is opened; StoreError if it is not a folder.

    The root itself may be reached through a symlink (a configured path is trusted);
    nothing below it may be.
    """
    try:
        resolved = Path(root).resolve(strict=True)
    except OSError as exc:
        raise StoreError(f"store root {root}: {exc.strerror or exc}") from exc
    except RuntimeError as exc:  # symlink loop, on Python < 3.13
        raise StoreError(f"store root {root}: {exc}") from exc
    if not resolved.is_dir():
        raise StoreError(f"store root {root} is not a directory")
    return resolved


class StoreRoots(NamedTuple):
    """A store's two folders: its notes root, and the archive root retired notes go to.

    Every store path is relative to the notes root, except that paths under
    ``archive_prefix`` name files of the archive root, wherever it is: inside the notes
    root (``.dreamd-archive``, for agents that do not list it) or beside it
    (``../memories.dreamd-archive``, for agents that list every folder). Nothing else is in scope.
    """

    notes: Path
    archive: Path
    archive_prefix: str
    # (device, inode) of the notes root when the store was opened: a root replaced after
    # that is refused by every write and read that goes through stores.folders
    identity: tuple[int, int] | None = None

    @property
    def beside(self) -> bool:
        return self.archive.parent != self.notes

    def split(self, rel: str) -> tuple[Path, str]:
        """The root a store path lives under, and the path below that root."""
        clean = safe_relpath(rel)
        if self.beside:
            if clean == self.archive_prefix:
                return self.archive, ""
            if clean.startswith(self.archive_prefix + "/"):
                return self.archive, clean[len(self.archive_prefix) + 1 :]
        return self.notes, clean

    def is_archived(self, rel: str) -> bool:
        return rel == self.archive_prefix or rel.startswith(self.archive_prefix + "/")


def as_roots(value: StoreRoots | Path | str) -> StoreRoots:
    """Roots given as such, or a bare folder: a store whose archive (if any) is inside it."""
    if isinstance(value, StoreRoots):
        return value
    return StoreRoots(Path(value), Path(value) / DEFAULT_ARCHIVE_PREFIX, DEFAULT_ARCHIVE_PREFIX)


def open_roots(notes: Path | str, archive_root: str) -> StoreRoots:
    """Resolve a store's roots once, when it is opened; StoreError if either is unusable.

    ``archive_root`` is a folder name inside the notes root or ``../NAME`` beside it
    (``{notes}`` stands for the notes folder's own name). The archive root need not exist
    yet, but if it does it must be a real folder, not a symlink (to a folder outside the
    store's scope) nor a file, wherever it is.
    """
    base = store_root(notes)
    identity = root_identity(base)
    name = archive_name(archive_root, base.name)
    archive = base.parent / name if archive_root.startswith("../") else base / name
    try:
        info = os.lstat(archive)
    except FileNotFoundError:
        return StoreRoots(base, archive, name, identity)
    except OSError as exc:
        raise StoreError(f"archive root {archive}: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePathError(
            f"archive root {archive} is a symlink (to {os.readlink(archive)}), not a folder: dreamd reads and writes no folder through a symlink",
            hint="put the folder itself in its place, or remove the link (dreamd makes the archive root when it first retires a note)",
        )
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(f"archive root {archive} is not a folder (a file is in its place)", hint="move the file away; dreamd makes the archive root when it first retires a note")
    return StoreRoots(base, archive, name, identity)


def root_identity(folder: Path) -> tuple[int, int]:
    """(device, inode) of a resolved root folder: what "the same folder" means across commands."""
    try:
        info = os.stat(folder)
    except OSError as exc:
        raise StoreError(f"store root {folder}: {exc.strerror or exc}") from exc
    return info.st_dev, info.st_ino


def archive_name(archive_root: str, notes_name: str) -> str:
    """The archive root's folder name, which is also the store-path prefix of its files."""
    return archive_root.removeprefix("../").replace("{notes}", notes_name)


def identity_text(roots: Any) -> str:
    """How a store records its root (a folder's, a record database's): ``device:inode``."""
    dev, ino = roots.identity or (0, 0)
    return f"{dev}:{ino}"
