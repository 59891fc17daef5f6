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

from daemon.core.errors import StoreError, UnsafePathError

_DRIVE = re.compile(r"[A-Za-z]:")


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


def resolve_in_store(root: Path, rel: str) -> Path:
    """Absolute path of ``rel`` under ``root``; UnsafePathError if any existing part is a symlink.

    With ``..`` refused and no symlink below the root, the result cannot leave the root.
    Missing trailing parts are fine: writes create them.
    """
    clean = safe_relpath(rel)
    parts = clean.split("/")
    for depth in range(1, len(parts) + 1):
        prefix = "/".join(parts[:depth])
        try:
            mode = os.lstat(Path(root) / prefix).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break
        except OSError as exc:
            raise StoreError(f"cannot check {clean}: {exc.strerror}") from exc
        if stat.S_ISLNK(mode):
            raise UnsafePathError(f"store path {clean} goes through a symlink: {prefix}")
    return Path(root) / clean
