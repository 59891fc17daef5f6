"""Writing a proposal's files through the journal, so a crash leaves all-old or all-new.

The journal row (with every file's before and after hash, whose bytes are already blobs)
is committed before the first byte is written. Writes happen in an order that never loses
content: new and changed files first (the archive copy exists before its original goes),
removals last. Each write is atomic (temp file, fsync, rename, fsync of the folder).
Recovery reads the row back and finishes the job. A record store's steps are written
instead as one database transaction that commits whole or not at all
(``stores.records.database.write``); the journal around it is the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from daemon.core.errors import ConflictError, StoreError
from daemon.core.hashing import hash_bytes
from daemon.stores import files, folders
from daemon.stores.paths import StoreRoots, as_roots
from daemon.stores.records import database as records
from daemon.stores.presets import StoreSettings


@dataclass(frozen=True)
class Step:
    path: str
    before: str | None
    after: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "before": self.before, "after": self.after}

    @classmethod
    def from_dict(cls, raw: Mapping[str, str | None]) -> Step:
        return cls(str(raw["path"]), raw["before"], raw["after"])


def blob_bases(steps: list[Step]) -> dict[str, str | None]:
    """Each blob the steps write, with the bytes it is a new version of (stored as a delta of
    them): the file's own before, or for a file moved (a note retired into the archive) the
    before of the file of the same name the steps remove."""
    moved = {PurePosixPath(s.path).name: s.before for s in steps if s.after is None and s.before}
    return {s.after: s.before or moved.get(PurePosixPath(s.path).name) for s in steps if s.after}


def temp_dir_for(settings: StoreSettings, roots: StoreRoots) -> str | None:
    """An agent that lists every file of its folder (DeepCode) would list a temporary file
    too, so those wait in the archive folder inside the store; elsewhere they wait beside
    their target, under a name no agent lists as a note."""
    listing = settings.listing
    return roots.archive_prefix if listing.suffixes is None and not roots.beside else None


def new_folders(root: StoreRoots | records.RecordRoots | Path, steps: Iterable[Step], temp_dir: str | None) -> list[str]:
    """The folders writing ``steps`` will create (temp files' folder included), outermost first:
    an apply records them, so that its revert takes them away again once they are empty."""
    if isinstance(root, records.RecordRoots):
        return []
    wanted = [s.path for s in steps if s.after is not None] + ([f"{temp_dir}/x"] if temp_dir else [])
    return folders.missing(as_roots(root), wanted)


def remove_empty_folders(root: StoreRoots | records.RecordRoots | Path, made: Iterable[str]) -> list[str]:
    """Remove each of the folders ``made`` that is empty, innermost first; those removed."""
    if isinstance(root, records.RecordRoots):
        return []
    return [rel for rel in sorted(set(made), key=lambda f: (-f.count("/"), f)) if folders.remove_empty(as_roots(root), rel)]


def on_disk(root: StoreRoots | records.RecordRoots | Path, paths: Iterable[str], read: dict[str, bytes] | None = None) -> dict[str, str | None]:
    """Current hash of each path (None when absent). A symlink or unreadable file
    counts as a hash nobody expects, so it can never pass a compare-and-swap. ``read``
    gets the bytes of each file read (a folder store's), so a caller needs no second read."""
    if isinstance(root, records.RecordRoots):
        return records.on_disk(root, paths)
    found: dict[str, str | None] = {}
    for path in paths:
        try:
            data = files.read_file(root, path)
        except StoreError:
            found[path] = "unreadable"
            continue
        found[path] = None if data is None else hash_bytes(data)
        if data is not None and read is not None:
            read[path] = data
    return found


def mismatches(root: StoreRoots | records.RecordRoots | Path, expected: Mapping[str, str | None]) -> list[str]:
    current = on_disk(root, expected)
    return sorted(p for p, h in expected.items() if current[p] != h)


def write(root: StoreRoots | records.RecordRoots | Path, steps: Iterable[Step], blobs: Mapping[str, bytes], *, temp_dir: str | None = None, undo: bool = False, journal_id: int | None = None, keep: files.Keep | None = None) -> None:
    """Bring each step's file to its after hash (``undo``: its before hash): writes first,
    removals last. ``temp_dir`` is where temporary files wait for their rename.

    Compare-and-swap to the last moment: each file is hashed just before it is replaced,
    and the file the replace displaced is hashed again (files.write_atomic). One that holds
    neither side of its step (someone edited it after the proposal was checked) stops the
    write with a ConflictError, the edit back in place; bytes that raced the very last
    instant go to ``keep`` (durably stored) before the displaced file is gone.

    Each file's bytes are fsynced before its rename; the folders' fsyncs, which make the
    renames durable, come once per folder when the writes are over (recovery puts any mix
    of before and after right, so only their being durable before the journal closes counts).
    """
    if isinstance(root, records.RecordRoots):  # one transaction, all or nothing (StaleError)
        records.write(root, steps, blobs, undo=undo)
        return
    steps = list(steps)
    want = {s.path: (s.before if undo else s.after) for s in steps}
    allowed = {s.path: {s.before, s.after} for s in steps}
    current = on_disk(root, want)
    _refuse_edited(current, allowed)
    tag = files.temp_tag(journal_id) if journal_id is not None else ""
    touched: list[str] = []  # their folders are synced once each, at the end, written or not
    try:
        _write_steps(root, want, current, allowed, blobs, touched, temp_dir=temp_dir, tag=tag, keep=keep)
    except BaseException:
        if touched:  # the swap back of a conflict is made durable too, if it can be; the first error is the one told
            with contextlib.suppress(StoreError):
                files.sync_folders_of(root, touched, temp_dir)
        raise
    if touched:  # before the caller records the writes done
        files.sync_folders_of(root, touched, temp_dir)


def _write_steps(root: StoreRoots | Path, want: Mapping[str, str | None], current: Mapping[str, str | None], allowed: Mapping[str, set[str | None]], blobs: Mapping[str, bytes], touched: list[str], *, temp_dir: str | None, tag: str, keep: files.Keep | None) -> None:
    """The writes of ``write``, then its removals; each path is added to ``touched`` before it is written."""
    for path in sorted(p for p, h in want.items() if h is not None):
        if current[path] != want[path]:
            data = blobs.get(want[path])  # type: ignore[arg-type]
            if data is None:
                raise StoreError(f"the bytes {path} should get are missing from the state database; refusing to write it")
            if hash_bytes(data) != want[path]:
                raise StoreError(f"blob for {path} does not match its hash; refusing to write it")
            _refuse_edited(on_disk(root, [path]), allowed)
            touched.append(path)
            files.write_atomic(root, path, data, expected=allowed[path], keep=keep, temp_dir=temp_dir, tag=tag, sync_folders=False)
    for path in sorted(p for p, h in want.items() if h is None):
        if current[path] is not None:
            _refuse_edited(on_disk(root, [path]), allowed)
            touched.append(path)
            files.remove_file(root, path, expected=allowed[path], keep=keep, temp_dir=temp_dir, tag=tag, sync_folders=False)


def _refuse_edited(current: Mapping[str, str | None], allowed: Mapping[str, set[str | None]]) -> None:
    edited = sorted(p for p, h in current.items() if h not in allowed[p])
    if edited:
        raise ConflictError(f"{', '.join(edited)} changed while dreamd was writing; nothing of it was overwritten", hint="dreamd verify names the journal; dreamd resolve JOURNAL ends it")
