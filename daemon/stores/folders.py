"""Reach a store file through folder descriptors, so no swapped-in symlink can redirect it.

Checking a path once and then using it by name leaves a window: a folder inside the store
can be exchanged for a symlink (or another folder) between the check and the write. Here a
store path is walked from the root's descriptor one component at a time with
``O_NOFOLLOW | O_DIRECTORY``, and the file is then opened, created, renamed or removed
relative to the last folder's descriptor. A component swapped later changes nothing: the
descriptor still names the folder that was checked. The notes root is opened by path (the
configured path is trusted) and must be the folder the store was opened with (its device
and inode), so a root replaced mid-command is refused too.

``exchange`` is ``renameat2(RENAME_EXCHANGE)`` (Linux ≥ 3.15 through glibc ≥ 2.28, read by
ctypes since the standard library has no binding); where it is missing, or the file system
refuses it, callers fall back to a plain rename and say so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
from collections.abc import Iterable, Iterator

from daemon.core.errors import StoreError, UnsafePathError
from daemon.stores.paths import StoreRoots

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_DIR_MODE = 0o777  # the umask or a default ACL on the store folder decides the rest
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def open_root(roots: StoreRoots) -> int:
    """A descriptor of the notes root, refused if it is no longer the folder the store was opened with."""
    try:
        fd = os.open(roots.notes, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"store root {roots.notes}: {exc.strerror or exc}") from exc
    if roots.identity is not None:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != roots.identity:
            os.close(fd)
            raise UnsafePathError(f"store root {roots.notes} was replaced by another folder while dreamd was working; nothing was written there")
    return fd


@contextlib.contextmanager
def parent_of(roots: StoreRoots, rel: str, *, create: bool = False) -> Iterator[tuple[int, str] | None]:
    """``(folder descriptor, file name)`` for store path ``rel``, or None when a folder on the
    way is missing (``create`` makes the missing ones). UnsafePathError if any folder on the
    way is a symlink or not a folder."""
    root, clean = roots.split(rel)
    parts = clean.split("/") if clean else []
    if root == roots.notes:
        fd = open_root(roots)
    else:  # the archive root beside the notes: a folder of the notes root's parent
        try:
            fd = os.open(roots.notes.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise StoreError(f"cannot open {roots.notes.parent}: {exc.strerror}") from exc
        parts = [roots.archive_prefix, *parts]
    if not parts:
        os.close(fd)
        raise UnsafePathError(f"store path {rel} names a root folder, not a file")
    try:
        for depth, name in enumerate(parts[:-1], start=1):
            below = _open_folder(fd, name, rel, "/".join(parts[:depth]), create)
            os.close(fd)
            fd = below
            if fd is None:
                break
        yield None if fd is None else (fd, parts[-1])
    finally:
        if fd is not None:
            os.close(fd)


def _open_folder(fd: int, name: str, rel: str, where: str, create: bool) -> int | None:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            return None
    except OSError as exc:
        raise _walk_error(rel, where, exc) from exc
    try:
        os.mkdir(name, NEW_DIR_MODE, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile: opened (and checked) below like any other
    except OSError as exc:
        raise StoreError(f"cannot write {rel}: {exc.strerror}") from exc
    try:
        os.fsync(fd)  # the new folder's name is durable before anything is put in it
    except OSError as exc:
        raise StoreError(f"cannot write {rel}: {exc.strerror}") from exc
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _walk_error(rel, where, exc) from exc


def _walk_error(rel: str, where: str, exc: OSError) -> StoreError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return UnsafePathError(f"store path {rel} goes through a symlink or a non-folder: {where}")
    return StoreError(f"cannot reach {rel}: {exc.strerror}")


@functools.cache
def _renameat2() -> object | None:
    """renameat2 from the C library, looked up on the first rename that needs it (a scan or a
    no-op pass renames nothing, and loading ctypes costs a command more than a millisecond)."""
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def _rename2(src_fd: int, src: str, dst_fd: int, dst: str, flags: int) -> bool:
    """renameat2 with ``flags``; False when this kernel, libc or file system lacks it."""
    function = _renameat2()
    if function is None:
        return False
    if function(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), flags) == 0:  # type: ignore[operator]
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), dst)


def exchange(src_fd: int, src: str, dst_fd: int, dst: str) -> bool:
    """Swap two existing names atomically; False when the system cannot."""
    return _rename2(src_fd, src, dst_fd, dst, _RENAME_EXCHANGE)


def move_new(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Rename ``src`` to ``dst`` only if ``dst`` does not exist (FileExistsError otherwise)."""
    if _rename2(src_fd, src, dst_fd, dst, _RENAME_NOREPLACE):
        return
    os.link(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)  # EEXIST if taken
    os.unlink(src, dir_fd=src_fd)


def missing(roots: StoreRoots, rels: Iterable[str]) -> list[str]:
    """The folders (store paths, outermost first) that writing ``rels`` would create: the
    folders on their way that do not exist now (an archive root beside the notes included)."""
    wanted = sorted({"/".join(rel.split("/")[:depth]) for rel in rels for depth in range(1, rel.count("/") + 1)}, key=lambda f: (f.count("/"), f))
    absent: list[str] = []
    for folder in wanted:
        if any(folder.startswith(f + "/") for f in absent):
            absent.append(folder)
            continue
        with parent_of(roots, folder + "/x") as found:
            if found is None:
                absent.append(folder)
    return absent


def remove_empty(roots: StoreRoots, rel: str) -> bool:
    """Remove the folder at store path ``rel`` if it is empty (durably); False when it holds
    anything or is gone already."""
    with parent_of(roots, rel) as found:
        if found is None:
            return False
        folder, name = found
        try:
            os.rmdir(name, dir_fd=folder)
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                return False
            raise StoreError(f"cannot remove the folder {rel}: {exc.strerror}") from exc
        try:
            os.fsync(folder)
        except OSError as exc:
            raise StoreError(f"cannot remove the folder {rel}: {exc.strerror}") from exc
        return True
