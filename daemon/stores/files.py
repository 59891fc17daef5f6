"""File primitives for apply and revert; the caller owns the journal.

A write lands whole or not at all (the journal's promise depends on it): bytes go to a
temp file, are fsynced, exchanged with the file they replace, and the folder is fsynced so
the rename survives a crash (a journal's writes sync each folder once, after the last of
them: ``sync_folders_of``). The displaced file is read back before its name is removed, so
an edit that raced the write is put back or kept, never thrown away; and when the two are
swapped back, what was written to dreamd's file in between (by a writer that re-opened the
note by path) follows the person's file back, or waits in a caught file (``stores.caught``).
Write leases (``F_SETLEASE``) say who else has a file open: taken on the file about to be
displaced before the exchange and held until its last name is gone, one proves that nothing
was written to it meanwhile, and its breaking says that someone began to open it. Every file
is reached through folder descriptors (``stores.folders``): nothing swapped in mid-write can
send a byte outside the store.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import re
import signal
import stat
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from daemon.core.errors import ConflictError, EditRacedError, StoreError, UnsafePathError
from daemon.core.hashing import hash_bytes
from daemon.stores import caught, folders
from daemon.stores.caught import Caught
from daemon.stores.folders import parent_of
from daemon.stores.paths import StoreRoots, as_roots, store_root

TEMP_MARKER = ".dreamd-tmp-"
# ".<name>.dreamd-tmp-j<journal>-<random hex>": the journal id says whose temp file it is
_TEMP_NAME = re.compile(r"\.(?P<note>.+)" + re.escape(TEMP_MARKER) + r"(?P<tag>j\d+-)?[0-9a-f]+\Z", re.S)
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
    check) the two are swapped back and ConflictError is raised, the edit in place, and what
    was written to dreamd's file in between back at its end or in a caught file (the error
    says which). Bytes written to the old file in the instant after that check go to a caught
    file and to ``keep`` before the old file's last name is removed (EditRacedError). A file
    that did not exist is created only if it still does not.

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
                ours = os.fstat(fd).st_ino
            finally:
                os.close(fd)
            place = Place(temp_fd, tmp, folder, name, rel, _folder_of(rel, temp_dir), tag, mode)
            _put_in_place(place, Ours(data, ours), expected, keep, exists=mode is not None)
        except OSError as exc:
            raise _error("write", rel, exc) from exc
        finally:
            _remove_if_ours(temp_fd, tmp, data)  # gone already unless something failed
        if sync_folders:
            _sync(folder, temp_fd)


def remove_file(root: StoreRoots | Path, rel: str, *, expected: Collection[str | None] | None = None, keep: Keep | None = None, temp_dir: str | None = None, tag: str = "", sync_folders: bool = True) -> None:
    """Delete a store file durably; a file that is already gone is fine.

    With ``expected``, the file is first moved to a temp name and read there: one that holds
    none of those hashes is moved back (ConflictError; if someone made a new file under its
    name meanwhile, the moved one becomes a caught file beside it), and bytes written to it in
    the last instant go to a caught file and ``keep`` (EditRacedError), as for ``write_atomic``;
    ``sync_folders`` is as there.
    """
    roots = as_roots(root)
    with parent_of(roots, rel) as found:
        if found is None:
            return
        folder, name = found
        mode = _replaced_mode(folder, name, rel)
        if mode is None:
            return
        with _temp_folder(roots, temp_dir, found) as temp_fd:
            place = Place(temp_fd, _temp_name(name, tag), folder, name, rel, _folder_of(rel, temp_dir), tag, mode)
            try:
                if expected is None:
                    os.unlink(name, dir_fd=folder)
                else:
                    folders.move_new(folder, name, temp_fd, place.temp)
                    undo = functools.partial(_move_back, place, keep=keep)
                    _drop_displaced(place, _check_displaced(place, expected, undo), keep, undo)
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


def _folder_of(rel: str, temp_dir: str | None) -> str:
    """The store path of the folder a file's temp file (and any caught file) waits in."""
    return temp_dir if temp_dir is not None else rel.rpartition("/")[0]


@dataclass(frozen=True)
class Place:
    """A temp name and the store file it stands in for, each in its folder's descriptor;
    ``where``: the temp folder's store path, ``tag``: the journal's, ``mode``: the file's."""

    temp_fd: int
    temp: str
    folder: int
    name: str
    rel: str
    where: str = ""
    tag: str = ""
    mode: int | None = None

    def store_path(self, name: str) -> str:
        """The store path of a file ``name`` in the temp folder."""
        return f"{self.where}/{name}" if self.where else name


@dataclass(frozen=True)
class Ours:
    """The bytes dreamd wrote to its temp file, and that file's inode."""

    data: bytes
    ino: int


def _put_in_place(place: Place, ours: Ours, expected: Collection[str | None] | None, keep: Keep | None, *, exists: bool) -> None:
    if not exists:
        try:
            folders.move_new(place.temp_fd, place.temp, place.folder, place.name)
            return
        except FileExistsError:
            pass  # created meanwhile: displaced and checked like any replaced file
    before = _lease_before(place) if expected is not None else None
    try:
        exchanged = expected is not None and folders.exchange(place.temp_fd, place.temp, place.folder, place.name)
    except BaseException:
        _close(before)
        raise
    if not exchanged:  # nothing to check against, or no exchange on this system: a plain rename
        _close(before)
        os.rename(place.temp, place.name, src_dir_fd=place.temp_fd, dst_dir_fd=place.folder)
        return
    assert expected is not None
    undo = functools.partial(_swap_back, place, ours)
    _drop_displaced(place, _check_displaced(place, expected, undo, before), keep, undo)


def _lease_before(place: Place) -> int | None:
    """The file about to be displaced, open with its write lease, or None (someone has it
    open: no waiting here). Taken before the exchange, the lease proves that nothing was
    written to the file after it: an open that would write waits for dreamd to let go."""
    try:
        fd = os.open(place.name, READ_FLAGS, dir_fd=place.folder)
    except OSError:
        return None
    if _take_lease(fd, 1):
        return fd
    os.close(fd)
    return None


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


@dataclass(frozen=True)
class Checked:
    """The displaced file, still open, the bytes it held when it was checked, its inode,
    whether dreamd holds its write lease (nobody else had it open), and whether nothing was
    written to it since it was displaced (``_unwritten``)."""

    fd: int
    data: bytes
    ino: int = 0
    leased: bool = False
    unwritten: bool = False
    stamp: tuple[int, int, int] = (0, 0, 0)  # its modification and change times and size, once leased


Undo = Callable[[Checked], Caught | None]  # puts a displaced file back (closing its descriptor)


def _check_displaced(place: Place, expected: Collection[str | None], undo: Undo, before: int | None = None) -> Checked:
    """Read the file now at the temp name (the one dreamd displaced); if it holds none of the
    expected hashes, ``undo`` puts it back and ConflictError is raised. ``before``: that file
    open with its lease since before the exchange (``_lease_before``), if it still is that file."""
    fd, unwritten = _displaced(place, before)
    try:
        info = os.fstat(fd)
        _refuse_odd(info, place.rel, "replace")
        alone = unwritten or _alone(fd)
        leased = alone and _leased(fd)  # from here on nobody else can write to it
        now = os.fstat(fd)
        unwritten = leased and (unwritten or _unwritten(now))
        checked = Checked(fd, read_fd(fd, size_hint=info.st_size), info.st_ino, leased, unwritten, _stamp(now))
    except BaseException:
        os.close(fd)
        raise
    if alone and hash_bytes(checked.data) in expected:
        return checked
    raise _conflict(place, undo(checked), alone)


def _displaced(place: Place, before: int | None) -> tuple[int, bool]:
    """A descriptor of the file at the temp name, and whether its lease has held since before
    the exchange. One leased before whose lease broke since (someone began to open it: a reader
    too) lets go, so that they can finish, and is leased again (``_alone``) like any other."""
    if before is not None:
        try:
            same = os.stat(place.temp, dir_fd=place.temp_fd, follow_symlinks=False).st_ino == os.fstat(before).st_ino
        except OSError:
            same = False
        if same:
            if _leased(before):
                return before, True
            with contextlib.suppress(OSError):
                fcntl.fcntl(before, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            return before, False
        os.close(before)  # someone saved another file under the note's name before the exchange
    return os.open(place.temp, READ_FLAGS, dir_fd=place.temp_fd), False


def _conflict(place: Place, found: Caught | None, alone: bool) -> ConflictError:
    """The one line of a write given up, saying where everything written meanwhile is."""
    if alone:
        return ConflictError(
            f"{place.rel} changed while dreamd was writing; {found.told() if found else 'nothing of it was overwritten'}",
            hint="dreamd verify names the journal; dreamd resolve JOURNAL ends it",
        )
    return ConflictError(
        f"{place.rel} is open in another program, which could still write to it; {found.told() if found else 'nothing of it was overwritten'}",
        hint="dreamd verify names the journal; dreamd resolve JOURNAL ends it, or apply again once it is closed",
    )


def _drop_displaced(place: Place, checked: Checked, keep: Keep | None, undo: Undo) -> None:
    """Remove the checked displaced file's last name, then look at it once more (``_check_late``).
    One that someone began to open since its check (its lease broken: an open whose path was
    looked up before the exchange) is put back instead, as one held open would have been."""
    if checked.leased and _lease_broken(checked.fd):
        raise _conflict(place, undo(checked), alone=False)
    try:
        os.unlink(place.temp, dir_fd=place.temp_fd)
    except BaseException:  # it stays at the temp name, for the rollback or recovery to clear: let go of it
        os.close(checked.fd)
        raise
    _check_late(place, checked, keep)


_LEASE_TRIES = 20  # x 10 ms: an agent or editor reading the note has a moment to close it
_LEASE_SIGNAL = signal.SIGWINCH  # what a lease break would send: ignored unless handled, unlike SIGIO


def _alone(fd: int) -> bool:
    """Whether no other process has the displaced file open, so nobody can write to it after
    it is checked: a write lease (``F_SETLEASE``) is granted only then. It is held until ``fd``
    is closed, after the file's last name is gone. Where leases are not available (a file
    dreamd's user does not own, a file system without them) the check after the unlink is what
    remains (``_check_late``)."""
    return _take_lease(fd, _LEASE_TRIES) is not False


def _take_lease(fd: int, tries: int) -> bool | None:
    """A write lease on ``fd``: True once granted, False while another process has the file
    open (after ``tries`` attempts 10 ms apart), None where there are no leases."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, _LEASE_SIGNAL)
    except OSError:
        return None
    for attempt in range(tries):
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
            return True
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return None  # no leases here (EACCES: not the owner; EINVAL: file system)
        if attempt + 1 < tries:
            time.sleep(0.01)
    return False


def _leased(fd: int) -> bool:
    """Whether dreamd holds the write lease of ``fd``, unbroken."""
    try:
        return bool(fcntl.fcntl(fd, fcntl.F_GETLEASE) == fcntl.F_WRLCK)
    except OSError:
        return False


def _unwritten(info: os.stat_result) -> bool:
    """Whether nothing was written to a file since it was renamed (displaced): a rename sets its
    change time, a write sets its modification and change times to one same instant, so a
    file last written before its last change was not written to since. Where a rename leaves
    the times be, or both fall in one clock tick, it says "written", the safe answer."""
    return info.st_mtime_ns < info.st_ctime_ns


def _stamp(info: os.stat_result) -> tuple[int, int, int]:
    return info.st_mtime_ns, info.st_ctime_ns, info.st_size


def _lease_broken(fd: int) -> bool:
    """Whether another process began to open a file whose write lease dreamd took: its open
    waits until dreamd lets go, and the lease reads as about to be given up."""
    return not _leased(fd)


def _check_late(place: Place, checked: Checked, keep: Keep | None) -> None:
    """After the displaced file's last name is gone: were bytes written to it since it was
    checked (by someone holding it open, or opening it as dreamd removed its name)? What they
    added goes to a caught file and the whole to ``keep`` (for resolve), and the write is refused."""
    try:
        if checked.leased and _lease_broken(checked.fd):
            fcntl.fcntl(checked.fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)  # their open goes on; what they write is read below
            _alone(checked.fd)
        os.lseek(checked.fd, 0, os.SEEK_SET)
        late = read_fd(checked.fd, size_hint=len(checked.data))
    finally:
        os.close(checked.fd)
    if late == checked.data:
        return
    added = caught.beyond(late, checked.data)
    try:
        where: str | None = place.store_path(caught.write(place.temp_fd, place.name, place.tag, added, place.mode))
    except OSError:
        where = None
        _leave(place, late)  # no room for a caught file: a tagged temp file holds them for recovery
    if keep is not None:
        keep(place.rel, late)
    found = f"what was written then ({caught.counted(added)}) is in {where}" if where else "what was written then is in a temp file recovery keeps"
    raise EditRacedError(
        f"{place.rel} was written to in the instant dreamd replaced it; {found} (and blob {hash_bytes(late)[:12]})",
        hint="dreamd verify names the journal; dreamd resolve JOURNAL puts them back",
    )


def _swap_back(place: Place, ours: Ours, displaced: Checked) -> Caught | None:
    """Undo an exchange whose displaced file was not the expected one: the person's file goes
    back under its name, and what was written to dreamd's file meanwhile follows it (``_catch``)."""
    held = _writable(place, displaced)
    try:
        try:
            folders.exchange(place.temp_fd, place.temp, place.folder, place.name)
        except FileNotFoundError:  # the note's name was removed meanwhile: its file stays out, visible
            return _caught_whole(place, displaced.data, "removed")
        return _catch(place, ours, displaced, held)
    finally:
        if held is not None:
            os.close(held)


def _writable(place: Place, displaced: Checked) -> int | None:
    """A descriptor that can append to the displaced file and holds its write lease, so that
    nobody else can write to it until dreamd is done (their open waits), or None.

    Appending what was written to dreamd's file keeps the order things were written in only if
    nothing was written to the person's file after the exchange (until the exchange, writes
    went to it; after, writes by path went to dreamd's file), nor will be until the append is
    done: it must have been unwritten since the exchange when checked and leased since. The
    lease is let go for the moment of reopening the file (an open of dreamd's own would break
    it), so the file must still be the one checked, unchanged, holding the bytes checked."""
    os.close(displaced.fd)
    if not displaced.unwritten:
        return None  # someone wrote to it after the exchange: what went to dreamd's file may be older
    try:
        fd = os.open(place.temp, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=place.temp_fd)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_ino == displaced.ino and _take_lease(fd, 1) and _stamp(os.fstat(fd)) == displaced.stamp and read_fd(fd, size_hint=len(displaced.data)) == displaced.data:
            return fd  # at its end, where anything caught is appended
    except OSError:
        pass
    os.close(fd)
    return None


def _catch(place: Place, ours: Ours, displaced: Checked, held: int | None) -> Caught | None:
    """After a swap back, the temp name holds dreamd's file, unless someone saved another under
    the note's name meanwhile: then that one, the newest, goes back under the name, and the file
    it replaced becomes a caught file. Bytes beyond dreamd's own in dreamd's file were written
    by a person (by path, after the exchange): they go back at the end of the person's file when
    nobody can have written to that since it was checked (``held``, its lease), else into a
    caught file. Dreamd's file still open in another program becomes a caught file whole, so
    what is written to it later lands there too. Nothing is left at the temp name."""
    fd = os.open(place.temp, READ_FLAGS, dir_fd=place.temp_fd)
    try:
        if os.fstat(fd).st_ino != ours.ino:  # a save replaced dreamd's file: it goes back, what it replaced waits beside it
            folders.exchange(place.temp_fd, place.temp, place.folder, place.name)
            return _caught_whole(place, _bytes_of(place, displaced), "replaced")
        alone = _alone(fd)  # a writer that opened it before the swap back has a moment to finish
        leased = alone and _leased(fd)
        data = read_fd(fd)
        added = caught.beyond(data, ours.data)
        if not alone or (leased and _lease_broken(fd)):
            return _caught_whole(place, added, "held")
        found = None
        if added:
            back = data.startswith(ours.data) and held is not None and _append(held, added)
            where = place.rel if back else place.store_path(caught.write(place.temp_fd, place.name, place.tag, added, place.mode))
            found = Caught(place.rel, where, caught.lines(added), "back" if back else "file")
        os.unlink(place.temp, dir_fd=place.temp_fd)
        return found
    finally:
        os.close(fd)


def _bytes_of(place: Place, displaced: Checked) -> bytes:
    """The bytes at the temp name: the displaced file's as checked when it is that file (its
    lease, if dreamd holds it, keeps them so; and an open of dreamd's own would break it)."""
    if os.stat(place.temp, dir_fd=place.temp_fd, follow_symlinks=False).st_ino == displaced.ino:
        return displaced.data
    return read_file_at(place.temp_fd, place.temp) or b""


def _append(fd: int, data: bytes) -> bool:
    """Append to the person's file through ``fd`` (at its end), durably; False if that failed
    (then whatever part of it got there is also in the caught file)."""
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except OSError:
        return False
    return True


def _caught_whole(place: Place, data: bytes, how: str) -> Caught:
    """The file at the temp name becomes a caught file as it is (``data``: what a person wrote of it)."""
    name = caught.move(place.temp_fd, place.temp, place.name, place.tag)
    return Caught(place.rel, place.store_path(name), caught.lines(data), how)


def _move_back(place: Place, displaced: Checked, keep: Keep | None) -> Caught | None:
    """Undo a removal's move: the file goes back under its name, or, if someone re-created
    that name meanwhile, the moved file becomes a caught file beside it (and is kept)."""
    os.close(displaced.fd)
    try:
        folders.move_new(place.temp_fd, place.temp, place.folder, place.name)
        return None
    except FileExistsError:
        if keep is not None:
            keep(place.rel, displaced.data)
        return _caught_whole(place, displaced.data, "re-created")


def _remove_if_ours(folder: int, name: str, ours: bytes) -> None:
    """Remove a temp file that holds dreamd's own bytes, or a start of them (or is gone); one
    holding anything else (someone wrote into it, a catch failed) stays, for recovery."""
    with contextlib.suppress(OSError):
        found = read_file_at(folder, name)
        if found is None or ours.startswith(found):
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
    return _find(as_roots(root), lambda name: _is_ours(name, tags))


def find_caught_files(root: StoreRoots | Path, journal: int | None = None) -> list[str]:
    """Caught files (``stores.caught``) in the store's roots; with ``journal``, that journal's."""
    return _find(as_roots(root), lambda name: caught.is_caught_name(name, journal))


def _find(roots: StoreRoots, wanted: Callable[[str], bool]) -> list[str]:
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
            elif entry.is_file(follow_symlinks=False) and wanted(entry.name):
                found.append(prefix + entry.name)
    return sorted(found)


def temp_journal(rel: str) -> int | None:
    """The journal a tagged temp file was written for (its store path), or None."""
    match = _TEMP_NAME.match(rel.rsplit("/", 1)[-1])
    return int(match["tag"][1:-1]) if match and match["tag"] else None


def _is_ours(name: str, tags: tuple[str, ...] | None) -> bool:
    match = _TEMP_NAME.match(name)
    if match is None or not match["tag"]:
        return False
    return tags is None or match["tag"] in tags


def cleanup_temp_files(root: StoreRoots | Path, tags: tuple[str, ...], keep: Keep | None = None, found: list[str] | None = None, known: Mapping[str, bytes] | None = None) -> list[str]:
    """Clear the temp files crashed writes of these journals left; their store paths.
    ``found``: the temp files a caller listed already (``find_temp_files``), not looked for again.

    A temp file may hold a file dreamd displaced and had not checked yet when it crashed
    (possibly someone's edit), or dreamd's own file with bytes someone wrote into it. It is
    removed only when its bytes are dreamd's own: ``known`` (the journal's bytes, by hash), or a
    start of them (a write cut short); any other bytes go to ``keep`` first. What it holds beyond them goes to a caught file beside
    it (``stores.caught``); one that starts with none of them becomes a caught file whole.
    """
    roots = as_roots(root)
    cleared = find_temp_files(roots, tags) if found is None else [p for p in found if _is_ours(p.rsplit("/", 1)[-1], tags)]
    for rel in cleared:
        with parent_of(roots, rel) as inside:
            if inside is None:
                continue
            folder, name = inside
            try:
                data = read_file_at(folder, name)
                if data is None:
                    continue
                added = caught.beyond_known(data, (known or {}).values())
                if keep is not None and added:  # nothing but dreamd's own bytes (or a start of them) needs keeping
                    keep(rel, data)
                match = _TEMP_NAME.match(name)
                assert match is not None  # listed as ours
                if added and len(added) == len(data):
                    caught.move(folder, name, match["note"], match["tag"])
                    continue
                if added:
                    caught.write(folder, match["note"], match["tag"], added)
                os.unlink(name, dir_fd=folder)
                os.fsync(folder)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise _error("remove", rel, exc) from exc
    return cleared


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
