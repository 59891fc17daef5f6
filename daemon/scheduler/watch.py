"""Which stores changed since their last pass, told by the kernel (inotify) instead of a stat walk.

The daemon watches the folders a pass reads: the notes root and every folder below it (a
repository's ``.git`` aside), and the archive root and below. A store is *quiet* while it
has been watched since before its last pass began and no event has come for it since: then
what that pass saw (its root hash, notes and skipped files) is still what is there, and the
next scheduled pass is told so (``claim``) and records its skip without a stat or a read.

Anything that leaves a doubt makes the store's next pass walk it with ``stat`` as without
watches (the stat cache decides, and reads what moved), never a wrong "unchanged":

- a store is only vouched for by a pass that began after its watches were in place, so a
  write while the daemon was down, or during its restart, is the first pass's to find;
- an overflowed event queue (``IN_Q_OVERFLOW``: events were dropped) drops every watch;
- a folder created or moved in, or a watched folder deleted, moved or unmounted, drops the
  store's watches; its next pass walks it and watches it anew;
- a watch the kernel refuses (the user's watch limit, an unreadable folder), a store on a
  file system other hosts write (NFS, SMB, FUSE: inotify sees only this kernel's writes),
  or no inotify at all (not Linux, the library missing): that store is never vouched for;
- a write through a shared memory map raises no event: every ``RESTAT_S`` a store's pass
  walks it anyway.

The library (``inotify_simple``, a ctypes wrapper of the three system calls) is imported
here only, by the daemon. Events are read without blocking, by the daemon's main loop and
before each claim; nothing runs on a thread of its own.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon import logs

log = logs.get_logger("dreamd.watch")

RESTAT_S = 24 * 3600.0  # a store's pass walks it at least this often, watched or not
SKIPPED_FOLDERS = (".git",)  # never notes (stores.scan.NEVER_SCANNED): its churn is not a change
# File systems whose every write is this kernel's: anything else (nfs, cifs, fuse, 9p,
# overlay over another host's layer…) is walked every pass.
LOCAL_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "bcachefs", "jfs", "reiserfs", "nilfs2"})


@dataclass
class _Store:
    folders: tuple[Path, ...]  # the notes root, the archive root (which need not exist yet)
    wds: set[int] = field(default_factory=set)
    armed: bool = False  # every folder a pass reads is watched
    quiet: bool = False  # armed before the last claim, and no event since
    seen: dict[str, Any] | None = None  # what the last pass saw, while quiet
    walk_by: float = 0.0  # monotonic time by which a pass must walk the store again
    unwatchable: str = ""  # why this store is never watched
    failed: bool = False  # a watch was refused (said once; tried again at each pass)


class Watches:
    """The daemon's inotify watches over its stores."""

    def __init__(self, inotify: Any, flags: Any, clock: Any = None) -> None:
        import time

        self._inotify = inotify
        self._flags = flags
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()  # the main loop drains; job threads claim and report
        self._stores: dict[str, _Store] = {}
        # watch descriptor -> the stores it serves: None for a folder of the store, or the
        # name its archive root will have in this folder (its parent) while it does not exist
        self._users: dict[int, dict[str, str | None]] = {}
        changes = flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.MOVED_FROM | flags.MOVED_TO | flags.CREATE | flags.DELETE
        # MASK_ADD: a folder watched for two reasons (one store's folder, another's archive
        # parent) keeps both masks; the kernel gives one inode one watch descriptor
        self._mask = changes | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW | flags.MASK_ADD
        self._parent_mask = flags.CREATE | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW | flags.MASK_ADD
        self._structural = flags.DELETE_SELF | flags.MOVE_SELF | flags.UNMOUNT | flags.IGNORED

    @classmethod
    def open(cls) -> Watches | None:
        """The watches, or None where inotify cannot be had (every pass then walks its store)."""
        try:
            from inotify_simple import INotify, flags
        except ImportError as exc:  # not Linux, or the package missing: say so once
            log.warning("watch.unavailable", error=f"{exc.__class__.__name__}: {exc}")
            return None
        try:
            return cls(INotify(nonblocking=True), flags)
        except OSError as exc:  # the user's limit of inotify instances
            log.warning("watch.unavailable", error=f"{exc.__class__.__name__}: {exc}")
            return None

    def close(self) -> None:
        self._inotify.close()

    # -- which stores --------------------------------------------------------------------

    def track(self, stores: dict[str, tuple[Path, ...] | None]) -> None:
        """Watch these stores (name -> folders, None for a store a pass never vouches for
        by watch); forget the others. A store whose folders changed starts anew."""
        with self._lock:
            self._track(stores)

    def _track(self, stores: dict[str, tuple[Path, ...] | None]) -> None:
        for name in [n for n in self._stores if n not in stores or stores[n] != self._stores[n].folders]:
            self._disarm(name)
            del self._stores[name]
        for name, folders in stores.items():
            if name not in self._stores:
                self._stores[name] = _Store(folders or (), unwatchable="" if folders else "not a folder store")

    # -- passes --------------------------------------------------------------------------

    def claim(self, name: str) -> dict[str, Any] | None:
        """A pass of ``name`` begins: what its last pass saw, when the store has been quiet
        since (the pass may take it without looking), else None (it walks the store). From
        now on the store is watched afresh: an event after this makes the next pass look."""
        with self._lock:
            return self._claim(name)

    def _claim(self, name: str) -> dict[str, Any] | None:
        self._drain()
        store = self._stores.get(name)
        if store is None or store.unwatchable:
            return None
        now = self._clock()
        seen = store.seen if store.armed and store.quiet and now < store.walk_by else None
        if seen is None:
            store.walk_by = now + RESTAT_S
        if not store.armed:
            self._arm(name, store)
        store.quiet, store.seen = store.armed, None
        return seen

    def passed(self, name: str, seen: dict[str, Any] | None) -> None:
        """The pass of ``name`` ended having seen ``seen`` (None: it failed, or saw nothing
        it could vouch for): kept while no event comes."""
        with self._lock:
            self._drain()
            store = self._stores.get(name)
            if store is not None and store.armed and store.quiet:
                store.seen = seen

    # -- events --------------------------------------------------------------------------

    def drain(self) -> None:
        """Read every event waiting, without blocking; a store with one is no longer quiet."""
        with self._lock:
            self._drain()

    def _drain(self) -> None:
        flags = self._flags
        for event in self._inotify.read(timeout=0):
            if event.mask & flags.Q_OVERFLOW:
                log.warning("watch.overflow", stores=len(self._stores))
                for name in self._stores:
                    self._disarm(name)
                continue
            for name, child in list(self._users.get(event.wd, {}).items()):
                store = self._stores[name]
                if child is not None and event.name != child and not event.mask & self._structural:
                    continue  # another name in the archive root's parent
                store.quiet, store.seen = False, None
                if child is not None or event.mask & self._structural or (event.mask & flags.ISDIR and event.mask & (flags.CREATE | flags.MOVED_TO)):
                    self._disarm(name)  # its next pass walks it, and watches every folder anew

    def _arm(self, name: str, store: _Store) -> None:
        """Watch every folder of the store; when one cannot be watched, none is (and the
        store's passes walk it)."""
        try:
            notes = Path(os.path.realpath(store.folders[0]))
            why = _not_local(notes)
            if why:
                store.unwatchable = why
                log.info("watch.unwatched", store=name, reason=why)
                return
            for below in _folders(notes):  # a missing notes root is refused here, as every pass refuses it
                self._add(name, store, below, self._mask, None)
            for folder in store.folders[1:]:
                real = Path(os.path.realpath(folder))
                if os.path.isdir(real):
                    for below in _folders(real):
                        self._add(name, store, below, self._mask, None)
                elif real.parent != notes:  # an archive root made later beside the notes: its parent tells
                    self._add(name, store, real.parent, self._parent_mask, real.name)
        except OSError as exc:  # ENOSPC: the watch limit; EACCES; a folder gone meanwhile
            self._disarm(name)
            if not store.failed:
                log.warning("watch.failed", store=name, error=f"{exc.__class__.__name__}: {exc}")
            store.failed = True
            return
        store.armed = True

    def _add(self, name: str, store: _Store, folder: Path, mask: int, child: str | None) -> None:
        wd = self._inotify.add_watch(folder, mask)
        users = self._users.setdefault(wd, {})
        users[name] = None if users.get(name, child) is None else child  # a folder of its own outranks a parent
        store.wds.add(wd)

    def _disarm(self, name: str) -> None:
        store = self._stores[name]
        for wd in store.wds:
            users = self._users.get(wd, {})
            users.pop(name, None)
            if users:
                continue  # another store still watches this folder
            self._users.pop(wd, None)
            try:
                self._inotify.rm_watch(wd)
            except OSError:  # the kernel let it go already (its folder was deleted)
                pass
        store.wds.clear()
        store.armed = store.quiet = False
        store.seen = None


def _folders(top: Path) -> list[Path]:
    """``top`` and every folder below it, symlinks not followed, ``.git`` left out."""
    found, pending = [], [top]
    while pending:
        folder = pending.pop()
        found.append(folder)
        with os.scandir(folder) as entries:
            pending += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False) and e.name not in SKIPPED_FOLDERS]
    return found


def _not_local(folder: Path) -> str:
    """Why writes to ``folder`` may not all raise events here ('' when they do): the file
    system of its mount (the longest mount point above it in /proc/self/mountinfo)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.read().splitlines()
    except OSError:
        return "no /proc/self/mountinfo to tell its file system"
    best, kind = "", ""
    text = str(folder)
    for line in lines:
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ")
        if (text == point or text.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
            best, kind = point, line.split(" - ", 1)[1].split()[0]
    return "" if kind in LOCAL_FILE_SYSTEMS else f"its file system ({kind or 'unknown'}) may be written by other hosts"
