"""File primitives for apply and revert; the caller owns the journal.

A write lands whole or not at all (the journal's promise depends on it): bytes go to a
temp file, are fsynced, exchanged with the file they replace, and the folder is fsynced so
the rename survives a crash (a journal's writes sync each folder once, after the last of
them: ``sync_folders_of``). The displaced file is read back before its name is removed, so
an edit that raced the write is put back or kept, never thrown away. Every file is reached
through folder descriptors (``stores.folders``): nothing swapped in mid-write can send a
byte outside the store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import signal
import stat
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from daemon.core.errors import ConflictError, EditRacedError, StoreError, UnsafePathError
from daemon.core.hashing import hash_bytes
from daemon.stores import folders
from daemon.stores.folders import parent_of
from daemon.stores.paths import StoreRoots, as_roots, store_root

TEMP_MARKER = ".dreamd-tmp-"
# ".<name>.dreamd-tmp-j<journal>-<random hex>": the journal id says whose temp file it is
_TEMP_NAME = re.compile(r"\..+" + re.escape(TEMP_MARKER) + r"(j\d+-)?[0-9a-f]+\Z", re.S)
_SKIPPED_FOLDERS = (".git",)  # never searched for temp files: dreamd never writes there
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What open(2) asks for; the umask, or a default ACL on the store folder (how a service
# user shares a store with the agent's user, see systemd/README.md), decides the rest.
_NEW_FILE_MODE = 0o666


def temp_tag(journal_id: int) -> str:
    """The part of a temp file's name that names the journal it was written for."""
    return f"j{journal_id}-"


def _temp_name(name: str, tag: str) -> str:
    short = name.encode("utf-8", "surrogateescape")[:160].decode("utf-8", "ignore")  # room for the marker
    return f".{short}{TEMP_MARKER}{tag}{os.urandom(8).hex()}"


@contextlib.contextmanager
def _temp_folder(roots: StoreRoots, temp_dir: str | None, found: tuple[int, str] | None) -> Iterator[int]:
    """The descriptor temp files are made in: ``temp_dir`` (a store folder) or the target's own."""
    assert found is not None
    if temp_dir is None:
        yield found[0]
        return
    with parent_of(roots, temp_dir + "/x", create=True) as inside:
        assert inside is not None
        yield inside[0]


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


Keep = Callable[[str, bytes], None]  # stores bytes dreamd displaced, durably, before they are unlinked


def read_file(root: StoreRoots | Path, rel: str) -> bytes | None:
    """Bytes of a store file, or None if it does not exist; refuses symlinks, hard-linked and
    special files (a hard link would let an outside file's bytes in)."""
    with parent_of(as_roots(root), rel) as found:
        if found is None:
            return None
        folder, name = found
        try:
            fd = os.open(name, READ_FLAGS, dir_fd=folder)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise _error("read", rel, exc) from exc
        try:
            info = os.fstat(fd)
            _refuse_odd(info, rel, "read")
            return read_fd(fd, size_hint=info.st_size)
        except OSError as exc:
            raise _error("read", rel, exc) from exc
        finally:
            os.close(fd)


def write_atomic(
    root: StoreRoots | Path, rel: str, data: bytes, *, expected: Collection[str | None] | None = None, keep: Keep | None = None,
    mtime_ns: int | None = None, temp_dir: str | None = None, tag: str = "", sync_folders: bool = True,
) -> None:
    """Replace (or create) a store file with ``data`` atomically, creating parent folders.

    The new file is written and fsynced under a temp name, then exchanged with the old one
    (``renameat2(RENAME_EXCHANGE)``), so the old file is not lost but displaced: it is read
    back, and if it holds none of the ``expected`` hashes (someone edited it after the last
    check) the two are swapped back and ConflictError is raised, the edit in place. Bytes
    written to the old file in the instant after that check go to ``keep`` before the
    old file's last name is removed (EditRacedError). A file that did not exist is created
    only if it still does not.

    The new file keeps the mode of the one it replaces; ``mtime_ns`` restores a
    modification time, as revert does. ``temp_dir`` (a store folder, e.g. the archive)
    holds the temporary file until the rename, so a crash never leaves one beside the
    notes: DeepCode lists every top-level file of its store as a memory. ``tag`` (``temp_tag``)
    names the journal in the temp file's name, so recovery removes only its own temp files.
    ``sync_folders=False`` leaves the folders' fsync to the caller (``sync_folders_of``),
    which writes several files and syncs each folder once before it records them written.
    """
    roots = as_roots(root)
    with parent_of(roots, rel, create=True) as found, _temp_folder(roots, temp_dir, found) as temp_fd:
        assert found is not None  # created
        folder, name = found
        mode = _replaced_mode(folder, name, rel)
        tmp = _temp_name(name, tag)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _NEW_FILE_MODE, dir_fd=temp_fd)
        except OSError as exc:
            raise _error("write", rel, exc) from exc
        try:
            try:
                _write_all(fd, data)
                if mode is not None:
                    os.fchmod(fd, mode)
                if mtime_ns is not None:
                    os.utime(fd, ns=(mtime_ns, mtime_ns))
                os.fsync(fd)
            finally:
                os.close(fd)
            _put_in_place(Place(temp_fd, tmp, folder, name, rel), data, expected, keep, exists=mode is not None)
        except OSError as exc:
            raise _error("write", rel, exc) from exc
        finally:
            _remove_if_ours(temp_fd, tmp, data)  # gone already unless something failed
        if sync_folders:
            _sync(folder, temp_fd)


def remove_file(root: StoreRoots | Path, rel: str, *, expected: Collection[str | None] | None = None, keep: Keep | None = None, temp_dir: str | None = None, tag: str = "", sync_folders: bool = True) -> None:
    """Delete a store file durably; a file that is already gone is fine.

    With ``expected``, the file is first moved to a temp name and read there: one that holds
    none of those hashes is moved back (ConflictError), and bytes written to it in the last
    instant go to ``keep`` (EditRacedError), as for ``write_atomic``; ``sync_folders`` is as
    there.
    """
    roots = as_roots(root)
    with parent_of(roots, rel) as found:
        if found is None:
            return
        folder, name = found
        if _replaced_mode(folder, name, rel) is None:
            return
        with _temp_folder(roots, temp_dir, found) as temp_fd:
            place = Place(temp_fd, _temp_name(name, tag), folder, name, rel)
            try:
                if expected is None:
                    os.unlink(name, dir_fd=folder)
                else:
                    folders.move_new(folder, name, temp_fd, place.temp)
                    checked = _check_displaced(place, expected, lambda old: _move_back(place, old, keep))
                    os.unlink(place.temp, dir_fd=temp_fd)
                    _check_late(place, checked, keep)
            except FileNotFoundError:
                return
            except OSError as exc:
                raise _error("remove", rel, exc) from exc
            if sync_folders:
                _sync(folder, temp_fd)


def _sync(folder: int, temp_fd: int) -> None:
    """Make a rename or an unlink in these folders durable: an fsync of each folder."""
    os.fsync(folder)
    if temp_fd != folder:
        os.fsync(temp_fd)


def sync_folders_of(root: StoreRoots | Path, rels: Iterable[str], temp_dir: str | None = None) -> None:
    """fsync, once each, the folders holding ``rels`` and the folder ``temp_dir``: what writes
    and removals made with ``sync_folders=False`` left to do before they are durable. A folder
    that is gone (nothing of it left to keep) is passed over."""
    roots = as_roots(root)
    folders_of = {rel.rpartition("/")[0]: rel for rel in rels}
    if temp_dir is not None:
        folders_of.setdefault(temp_dir, temp_dir + "/x")
    for rel in folders_of.values():
        with parent_of(roots, rel) as found:
            if found is None:
                continue
            try:
                os.fsync(found[0])
            except OSError as exc:
                raise _error("sync", rel, exc) from exc


@dataclass(frozen=True)
class Place:
    """A temp name and the store file it stands in for, each in its folder's descriptor."""

    temp_fd: int
    temp: str
    folder: int
    name: str
    rel: str


def _put_in_place(place: Place, data: bytes, expected: Collection[str | None] | None, keep: Keep | None, *, exists: bool) -> None:
    if not exists:
        try:
            folders.move_new(place.temp_fd, place.temp, place.folder, place.name)
            return
        except FileExistsError:
            pass  # created meanwhile: displaced and checked like any replaced file
    if expected is None or not folders.exchange(place.temp_fd, place.temp, place.folder, place.name):
        # nothing to check against, or no exchange on this system: a plain rename
        os.rename(place.temp, place.name, src_dir_fd=place.temp_fd, dst_dir_fd=place.folder)
        return
    checked = _check_displaced(place, expected, lambda _: _swap_back(place, data, keep))
    os.unlink(place.temp, dir_fd=place.temp_fd)
    _check_late(place, checked, keep)


@dataclass(frozen=True)
class Checked:
    """The displaced file, still open, and the bytes it held when it was checked."""

    fd: int
    data: bytes


def _check_displaced(place: Place, expected: Collection[str | None], undo: Callable[[bytes], None]) -> Checked:
    """Read the file now at the temp name (the one dreamd displaced); if it holds none of the
    expected hashes, ``undo`` puts it back and ConflictError is raised."""
    fd = os.open(place.temp, READ_FLAGS, dir_fd=place.temp_fd)
    try:
        info = os.fstat(fd)
        _refuse_odd(info, place.rel, "replace")
        alone = _alone(fd)
        old = read_fd(fd, size_hint=info.st_size)
    except BaseException:
        os.close(fd)
        raise
    if alone and hash_bytes(old) in expected:
        return Checked(fd, old)
    os.close(fd)
    undo(old)
    if not alone:
        raise ConflictError(
            f"{place.rel} is open in another program, which could still write to it; nothing of it was overwritten",
            hint="dreamd verify names the journal; dreamd resolve JOURNAL ends it, or apply again once it is closed",
        )
    raise ConflictError(
        f"{place.rel} changed while dreamd was writing; nothing of it was overwritten",
        hint="dreamd verify names the journal; dreamd resolve JOURNAL ends it",
    )


_LEASE_TRIES = 20  # x 10 ms: an agent or editor reading the note has a moment to close it
_LEASE_SIGNAL = signal.SIGWINCH  # what a lease break would send: ignored unless handled, unlike SIGIO


def _alone(fd: int) -> bool:
    """Whether no other process has the displaced file open, so nobody can write to it after
    it is checked: a write lease (``F_SETLEASE``) is granted only then. It is held until ``fd``
    is closed, after the file's last name is gone. Where leases are not available (a file
    dreamd's user does not own, a file system without them) the check after the unlink is what
    remains (``_check_late``)."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, _LEASE_SIGNAL)
    except OSError:
        return True
    for attempt in range(_LEASE_TRIES):
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
            return True
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return True  # no leases here (EACCES: not the owner; EINVAL: file system)
        if attempt + 1 < _LEASE_TRIES:
            time.sleep(0.01)
    return False


def _check_late(place: Place, checked: Checked, keep: Keep | None) -> None:
    """After the displaced file's last name is gone: were bytes written to it since it was
    checked (by someone holding it open)? They go to ``keep``, and the write is refused."""
    try:
        os.lseek(checked.fd, 0, os.SEEK_SET)
        late = read_fd(checked.fd, size_hint=len(checked.data))
    finally:
        os.close(checked.fd)
    if late == checked.data:
        return
    if keep is not None:
        try:
            keep(place.rel, late)
        except BaseException:
            _leave(place, late)  # the database refused: a tagged temp file holds them for recovery
            raise
    raise EditRacedError(
        f"{place.rel} was written to in the instant dreamd replaced it; those bytes are kept (blob {hash_bytes(late)[:12]})",
        hint="dreamd verify names the journal; dreamd resolve JOURNAL puts them back",
    )


def _swap_back(place: Place, ours: bytes, keep: Keep | None) -> None:
    """Undo an exchange whose displaced file was not the expected one: the edit goes back in
    place, and what comes out is dreamd's file (kept too if someone wrote into it meanwhile)."""
    folders.exchange(place.temp_fd, place.temp, place.folder, place.name)
    back = read_file_at(place.temp_fd, place.temp)
    if back is not None and back != ours and keep is not None:
        keep(place.rel, back)


def _move_back(place: Place, old: bytes, keep: Keep | None) -> None:
    """Undo a removal's move: the file goes back under its name, or, if someone re-created
    that name meanwhile, the moved file's bytes are kept before its temp name is removed."""
    try:
        folders.move_new(place.temp_fd, place.temp, place.folder, place.name)
    except FileExistsError:
        if keep is not None:
            keep(place.rel, old)


def _remove_if_ours(folder: int, name: str, ours: bytes) -> None:
    """Remove a temp file that holds dreamd's own bytes (or is gone); one holding anything
    else (someone wrote into it, a keep failed) stays, for recovery to keep as a blob."""
    with contextlib.suppress(OSError):
        if read_file_at(folder, name) in (None, ours):
            os.unlink(name, dir_fd=folder)


def _leave(place: Place, data: bytes) -> None:
    """Put bytes that could not be stored back under the temp name (tagged with the journal),
    where recovery's sweep keeps them: nothing a person wrote lives only in a removed file."""
    with contextlib.suppress(OSError):
        fd = os.open(place.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _NEW_FILE_MODE, dir_fd=place.temp_fd)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def read_file_at(folder: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        return None
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def find_temp_files(root: StoreRoots | Path, tags: tuple[str, ...] | None = None) -> list[str]:
    """Temp files a crashed write of a journal left in the store's roots (symlinked folders and
    ``.git`` not searched); with ``tags``, only those of these journals. A file that merely looks
    like an untagged temp file is someone else's, and is never reported or removed."""
    roots = as_roots(root)
    found: list[str] = []
    pending = [(store_root(roots.notes), "")]
    if roots.beside and roots.archive.is_dir() and not roots.archive.is_symlink():
        pending.append((roots.archive, roots.archive_prefix + "/"))
    while pending:
        folder, prefix = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listing = list(entries)
        except OSError:
            continue
        for entry in listing:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIPPED_FOLDERS:
                    pending.append((Path(entry.path), f"{prefix}{entry.name}/"))
            elif entry.is_file(follow_symlinks=False) and _is_ours(entry.name, tags):
                found.append(prefix + entry.name)
    return sorted(found)


def temp_journal(rel: str) -> int | None:
    """The journal a tagged temp file was written for (its store path), or None."""
    match = _TEMP_NAME.match(rel.rsplit("/", 1)[-1])
    return int(match.group(1)[1:-1]) if match and match.group(1) else None


def _is_ours(name: str, tags: tuple[str, ...] | None) -> bool:
    match = _TEMP_NAME.match(name)
    if match is None or not match.group(1):
        return False
    return tags is None or match.group(1) in tags


def cleanup_temp_files(root: StoreRoots | Path, tags: tuple[str, ...], keep: Keep | None = None, found: list[str] | None = None) -> list[str]:
    """Remove the temp files crashed writes of these journals left; their store paths.
    ``found``: the temp files a caller listed already (``find_temp_files``), not looked for again.

    A temp file may hold a file dreamd displaced and had not checked yet when it crashed
    (possibly someone's edit), so its bytes go to ``keep`` before it is removed.
    """
    roots = as_roots(root)
    removed = find_temp_files(roots, tags) if found is None else [p for p in found if _is_ours(p.rsplit("/", 1)[-1], tags)]
    for rel in removed:
        with parent_of(roots, rel) as found:
            if found is None:
                continue
            folder, name = found
            try:
                if keep is not None and (data := read_file_at(folder, name)) is not None:
                    keep(rel, data)
                os.unlink(name, dir_fd=folder)
                os.fsync(folder)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _error("remove", rel, exc) from exc
    return removed


def _replaced_mode(folder: int, name: str, rel: str) -> int | None:
    """Permission bits of the file being replaced; None for a new file."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _error("write", rel, exc) from exc
    _refuse_odd(info, rel, "write")
    return stat.S_IMODE(info.st_mode)


def _refuse_odd(info: os.stat_result, rel: str, action: str) -> None:
    """Only a regular file with one name is a store file: a symlink or special file could
    reach outside, and a hard link shares its bytes with a file elsewhere."""
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePathError(f"cannot {action} {rel}: it is a symlink")
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"cannot {action} {rel}: not a regular file")
    if info.st_nlink > 1:
        raise UnsafePathError(f"cannot {action} {rel}: it is hard-linked ({info.st_nlink} names), so its bytes are shared with a file that may be outside the store")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _error(action: str, rel: str, exc: OSError) -> StoreError:
    """One-line StoreError for a failed file operation; a symlink race is an UnsafePathError."""
    if exc.errno == errno.ELOOP:
        return UnsafePathError(f"cannot {action} {rel}: it is a symlink")
    return StoreError(f"cannot {action} {rel}: {exc.strerror or exc}")
