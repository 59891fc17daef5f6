"""File primitives for apply and revert; the caller owns the journal.

A write lands whole or not at all (the journal's promise depends on it): bytes go to a
temp file beside the target, are fsynced, renamed over it, and the folder is fsynced so
the rename survives a crash. Every path goes through ``resolve_in_store``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path

from daemon.core.errors import StoreError, UnsafePathError
from daemon.stores.paths import StoreRoots, as_roots, resolve_in_store, store_root

TEMP_MARKER = ".dreamd-tmp-"
# ".<name>.dreamd-tmp-j<journal>-<random hex>": the journal id says whose temp file it is
_TEMP_NAME = re.compile(r"\..+" + re.escape(TEMP_MARKER) + r"(j\d+-)?[0-9a-f]+\Z", re.S)
_SKIPPED_FOLDERS = (".git",)  # never searched for temp files: dreamd never writes there


def temp_tag(journal_id: int) -> str:
    """The part of a temp file's name that names the journal it was written for."""
    return f"j{journal_id}-"
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What open(2) and mkdir(2) ask for; the umask, or a default ACL on the store folder (how a
# service user shares a store with the agent's user, see systemd/README.md), decides the rest.
_NEW_FILE_MODE = 0o666
_NEW_DIR_MODE = 0o777


def is_temp_name(name: str) -> bool:
    """Whether a file name is one of our in-flight (or crashed) atomic-write temp files."""
    return _TEMP_NAME.match(name) is not None


def read_fd(fd: int, limit: int | None = None, size_hint: int = 0) -> bytes:
    """Read ``fd`` to end of file, stopping past ``limit`` bytes so callers can tell "too large"."""
    chunks = []
    total = 0
    want = max(size_hint + 1, 4096)
    while chunk := os.read(fd, want):
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            break
        want = 1 << 16
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_file(root: StoreRoots | Path, rel: str) -> bytes | None:
    """Bytes of a store file, or None if it does not exist; refuses symlinks and special files."""
    path = resolve_in_store(root, rel)
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _error("read", rel, exc) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f"cannot read {rel}: not a regular file")
        return read_fd(fd, size_hint=info.st_size)
    except OSError as exc:
        raise _error("read", rel, exc) from exc
    finally:
        os.close(fd)


def write_atomic(root: StoreRoots | Path, rel: str, data: bytes, *, mtime_ns: int | None = None, temp_dir: str | None = None, tag: str = "") -> None:
    """Replace (or create) a store file with ``data`` atomically, creating parent folders.

    The new file keeps the mode of the one it replaces; ``mtime_ns`` restores a
    modification time, as revert does. ``temp_dir`` (a store folder, e.g. the archive)
    holds the temporary file until the rename, so a crash never leaves one beside the
    notes: DeepCode lists every top-level file of its store as a memory. ``tag`` (``temp_tag``)
    names the journal in the temp file's name, so recovery removes only its own temp files.
    """
    path = resolve_in_store(root, rel)
    mode = _replaced_mode(path, rel)
    _make_parents(_base(root, rel), path.parent, rel)
    folder = path.parent
    if temp_dir is not None:
        folder = resolve_in_store(root, temp_dir)
        _make_parents(_base(root, temp_dir), folder, temp_dir)
    short = path.name.encode("utf-8", "surrogateescape")[:160].decode("utf-8", "ignore")  # room for the marker
    tmp = folder / f".{short}{TEMP_MARKER}{tag}{secrets.token_hex(8)}"
    created = False
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _NEW_FILE_MODE)
        created = True
        try:
            _write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
            if mtime_ns is not None:
                os.utime(fd, ns=(mtime_ns, mtime_ns))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)  # same file system: a store lives on one
    except OSError as exc:
        if created:
            _unlink_quietly(tmp)
        raise _error("write", rel, exc) from exc
    fsync_dir(path.parent)
    if folder != path.parent:
        fsync_dir(folder)


def remove_file(root: StoreRoots | Path, rel: str) -> None:
    """Delete a store file durably; a file that is already gone is fine."""
    path = resolve_in_store(root, rel)
    try:
        os.unlink(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise _error("remove", rel, exc) from exc
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries, so a rename, create or unlink in it survives a crash."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"cannot open folder {path}: {exc.strerror}") from exc
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def find_temp_files(root: StoreRoots | Path, tags: tuple[str, ...] | None = None) -> list[str]:
    """Temp files a crashed write of a journal left in the store's roots (symlinked folders and
    ``.git`` not searched); with ``tags``, only those of these journals. A file that merely looks
    like an untagged temp file is someone else's, and is never reported or removed."""
    roots = as_roots(root)
    found: list[str] = []
    folders = [(store_root(roots.notes), "")]
    if roots.beside and roots.archive.is_dir() and not roots.archive.is_symlink():
        folders.append((roots.archive, roots.archive_prefix + "/"))
    while folders:
        folder, prefix = folders.pop()
        try:
            with os.scandir(folder) as entries:
                listing = list(entries)
        except OSError:
            continue
        for entry in listing:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIPPED_FOLDERS:
                    folders.append((Path(entry.path), f"{prefix}{entry.name}/"))
            elif entry.is_file(follow_symlinks=False) and _is_ours(entry.name, tags):
                found.append(prefix + entry.name)
    return sorted(found)


def _is_ours(name: str, tags: tuple[str, ...] | None) -> bool:
    match = _TEMP_NAME.match(name)
    if match is None or not match.group(1):
        return False
    return tags is None or match.group(1) in tags


def cleanup_temp_files(root: StoreRoots | Path, tags: tuple[str, ...]) -> list[str]:
    """Remove the temp files crashed writes of these journals left; their store paths."""
    removed = find_temp_files(root, tags)
    paths = [resolve_in_store(root, rel) for rel in removed]
    for rel, path in zip(removed, paths, strict=True):
        try:
            _unlink_quietly(path)
        except OSError as exc:
            raise _error("remove", rel, exc) from exc
    for folder in {path.parent for path in paths}:
        fsync_dir(folder)
    return removed


def _replaced_mode(path: Path, rel: str) -> int | None:
    """Permission bits of the file being replaced; None for a new file."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _error("write", rel, exc) from exc
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"cannot write {rel}: a non-file is in the way")
    return stat.S_IMODE(info.st_mode)


def _base(root: StoreRoots | Path, rel: str) -> Path:
    """The folder that must exist already for a write of ``rel``: the notes root, or for a
    file of an archive beside it, the folder both roots sit in (the archive root is created)."""
    roots = as_roots(root)
    return roots.archive.parent if roots.beside and roots.is_archived(rel) else roots.notes


def _make_parents(root: Path, parent: Path, rel: str) -> None:
    """Create missing folders below ``root`` (never ``root``), fsyncing each one's parent."""
    missing = []
    while parent != root and not parent.is_dir():
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, _NEW_DIR_MODE)
        except OSError as exc:
            raise _error("write", rel, exc) from exc
        fsync_dir(folder.parent)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _error(action: str, rel: str, exc: OSError) -> StoreError:
    """One-line StoreError for a failed file operation; a symlink race is an UnsafePathError."""
    if exc.errno == errno.ELOOP:
        return UnsafePathError(f"cannot {action} {rel}: it is a symlink")
    return StoreError(f"cannot {action} {rel}: {exc.strerror or exc}")
