"""Finish what a crash interrupted, before any command reads or writes a store.

An unfinished journal means an apply or revert died mid-way. Every file it names is in
its before or after state (each write is atomic), and all after-bytes are blobs, so
recovery rolls forward: it writes what is missing and records the outcome. If a file
holds neither state, someone edited it meanwhile: the journal is closed as ``conflict``
and ``dreamd verify`` reports it, with nothing overwritten, until ``dreamd resolve`` ends it.

A write the file system refuses (a full disk, an I/O error, a quota) is rolled back at once,
here and in apply and revert (``roll_back``): the store is left as it was before the journal
and the journal is closed ``rolled-back``. A rollback that cannot finish either closes the
journal as ``conflict``, and a store with a journal in conflict is held (``refuse_if_held``):
no apply or revert of it runs until ``dreamd resolve`` ends that journal, so nothing is
applied again on top of a half-written state that resolve would then undo.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection

from daemon import logs
from daemon.config import StoreConfig
from daemon.core.errors import ConflictError, DreamdError, EditRacedError, StaleError, StoreError, UnresolvedError
from daemon.core.hashing import hash_bytes, manifest_changes, root_hash
from daemon.core.notes import Note, retired_notes
from daemon.core.proposals import APPLIED, REVERTED
from daemon.db import repo
from daemon.service import recorded
from daemon.service.apply import journal
from daemon.service.context import App
from daemon.service.workspace import registered_roots
from daemon.service.apply.interrupt import shielded
from daemon.service.leases import StoreBusyError, holding_store
from daemon.stores import files as store_files
from daemon.stores import port
from daemon.stores.scan import ScanResult


log = logs.get_logger("dreamd.recovery")


def recover(app: App, store: StoreConfig) -> list[int]:
    """Roll every unfinished journal of the store forward; returns the proposal ids.

    Runs under the store's lease: a journal another live process is still writing is its
    business, not a crash, and is left alone.
    """
    engine = app.engine()
    with engine.connect() as conn:
        row = repo.find_store(conn, store.name)
        if row is None or not repo.unfinished_journals(conn, row.id):
            return []
    try:
        with shielded(), holding_store(app, row.id, store.name):
            with engine.connect() as conn:
                pending = repo.unfinished_journals(conn, row.id)
            return _roll_forward(app, store, row, pending)
    except StoreBusyError:
        return []


def _roll_forward(app: App, store: StoreConfig, row: Any, pending: list[Any]) -> list[int]:
    engine = app.engine()
    roots = registered_roots(app, row.id, store)
    done = []
    for entry in pending:
        steps = [journal.Step.from_dict(s) for s in entry.steps["files"]]
        current = journal.on_disk(roots, [s.path for s in steps])
        torn = [s.path for s in steps if current[s.path] not in (s.before, s.after)]
        now = app.clock()
        written = False
        outcome = _transaction_outcome(steps, current) if torn and port.is_records(roots) else None
        if outcome == "rolled-back":
            close_rolled_back(app, row.id, entry.id, entry.proposal_id, StaleError(f"changed since dreamd read them: {', '.join(torn)}"))
            continue
        if outcome == "committed":
            torn, written = [], True  # the records that differ were changed after the commit
        if torn:
            log.warning("journal.conflict", store=store.name, journal=entry.id, proposal_id=entry.proposal_id, files=torn)
            with engine.begin() as conn:
                repo.close_journal(conn, row.id, entry.id, "conflict", now)
                repo.add_event(conn, row.id, "journal.conflict", app.actor, app.surface, now, {"journal": entry.id, "files": torn}, proposal_id=entry.proposal_id)
            continue
        with engine.connect() as conn:
            blobs = repo.get_blobs(conn, [s.after for s in steps if s.after])  # stored before the journal opened
        try:
            if not written:
                journal.write(roots, steps, blobs, temp_dir=journal.temp_dir_for(store.settings, roots), journal_id=entry.id, keep=keeper(app, row.id, entry.id, entry.proposal_id))
        except StaleError as exc:  # a record store's transaction found a changed record: rolled back
            close_rolled_back(app, row.id, entry.id, entry.proposal_id, exc)
            continue
        except DreamdError as exc:  # a missing or bad blob, a write the file system refuses, an edit meanwhile
            if port.is_records(roots):  # rolled back (a lock held too long): still all-old, tried again later
                log.warning("journal.retry_later", store=store.name, journal=entry.id, proposal_id=entry.proposal_id, error=str(exc))
                continue
            if not rolls_back(exc):
                fail_journal(app, row.id, entry.id, entry.proposal_id, exc)
                continue
            roll_back(app, store, roots, row.id, entry.id, entry.proposal_id, steps, blobs, exc)
            continue
        scan = port.scan(roots, store.settings)
        with engine.begin() as conn:
            repo.put_blobs(conn, scan_blobs(scan))
            finish_journal(app, conn, row.id, entry.proposal_id, entry.id, entry.operation, steps, scan.manifest, recovered=True)
        log.warning("journal.recovered", store=store.name, journal=entry.id, operation=entry.operation, proposal_id=entry.proposal_id)
        done.append(entry.proposal_id)
    found = port.find_temp_files(roots)
    for entry in pending:
        sweep_journal(app, roots, row.id, entry, found)
    for entry in pending:  # what a revert does after its files, once the temp files are gone too
        if entry.operation == "revert" and entry.proposal_id in done:
            remove_reverted_folders(app, store, row.id, entry.proposal_id)
    return done


def remove_reverted_folders(app: App, store: StoreConfig, store_id: int, proposal_id: int) -> list[str]:
    """Remove the folders applies of the store's reverted proposals created, once empty (the
    archive folder a retirement made); the ones removed. A revert's last step, after its
    files: a folder that cannot be removed is logged and left, untidy but harmless."""
    with app.engine().connect() as conn:  # this revert's apply's, or a revert's before it left holding another apply's files
        made = repo.made_folders(conn, store_id, (REVERTED,))
    try:
        return journal.remove_empty_folders(registered_roots(app, store_id, store), made)
    except StoreError as exc:
        log.warning("revert.folder_kept", store=store.name, proposal_id=proposal_id, error=str(exc))
        return []


def _transaction_outcome(steps: list[journal.Step], current: dict[str, str | None]) -> str | None:
    """What became of a record store's one transaction, seen from records someone changed
    since: ``committed`` when a record it wrote holds its result, ``rolled-back`` when no
    record holds any result, None (a conflict for resolve) when only a deleted record is
    gone: the agent may have deleted it as well."""
    changed = [s for s in steps if s.after != s.before]
    if any(current[s.path] == s.after for s in changed if s.after is not None):
        return "committed"
    if not any(current[s.path] == s.after for s in changed):
        return "rolled-back"
    return None


def sweep_temp_files(app: App, store: StoreConfig, store_id: int) -> list[str]:
    """Remove temp files of this store's journals that are over (done or resolved): a crash
    after a journal closed, in recovery too, can leave one, and verify would never be clean
    again. Under the store's lease, their bytes kept; a busy store is left for later.
    Returns the temp files still there (of journals not over, or of a busy store)."""
    roots = registered_roots(app, store_id, store)
    found = port.find_temp_files(roots)
    if not found:
        return []
    removed: list[str] = []
    try:
        with shielded(), holding_store(app, store_id, store.name):
            with app.engine().connect() as conn:
                over = {j: repo.journal_entry(conn, store_id, j) for j in {store_files.temp_journal(p) for p in found} if j is not None}
            for entry in over.values():
                if entry is not None and entry.state in ("done", "resolved"):
                    removed += sweep_journal(app, roots, store_id, entry, found)
    except StoreBusyError:
        return found
    if removed:
        log.warning("temp_files.removed", store=store.name, files=removed)
    return [p for p in found if p not in removed]


def sweep_journal(app: App, roots: port.Roots, store_id: int, entry: Any, found: list[str]) -> list[str]:
    """Clear the temp files of one journal among ``found`` (``port.find_temp_files``): those
    holding its own bytes (or a start of them: a write cut short) are removed; what any other
    holds beyond them goes to a caught file beside it, never only to a blob (its bytes are
    kept as one too). Returns the temp files cleared."""
    mine = [p for p in found if store_files.temp_journal(p) == entry.id]
    if not mine:
        return []
    hashes = frozenset(h for s in entry.steps["files"] for h in (s["before"], s["after"]) if h)
    with app.engine().connect() as conn:
        known = repo.get_blobs(conn, hashes)
    keep = keeper(app, store_id, entry.id, entry.proposal_id, hashes)
    return port.cleanup_temp_files(roots, (store_files.temp_tag(entry.id),), keep, mine, known)


def keeper(app: App, store_id: int, journal_id: int, proposal_id: int, known: frozenset[str] = frozenset()) -> store_files.Keep:
    """Where a journal's writes put bytes they displaced and did not expect: a blob, committed
    before the displaced file is gone, and a ``file.displaced`` event naming it for resolve.
    Bytes whose hash is in ``known`` (the journal's own before and after) are stored already."""

    def keep(path: str, data: bytes) -> None:
        digest = hash_bytes(data)
        if digest in known:
            return
        with app.engine().begin() as conn:
            repo.put_blobs(conn, {digest: data})
            payload = {"journal": journal_id, "path": path, "hash": digest, "size": len(data)}
            repo.add_event(conn, store_id, repo.DISPLACED, app.actor, app.surface, app.clock(), payload, proposal_id=proposal_id)
        log.warning("file.displaced", journal=journal_id, path=path, hash=digest)

    return keep


def fail_journal(app: App, store_id: int, journal_id: int, proposal_id: int, error: Exception, *, rollback: Exception | None = None) -> None:
    """Close a journal whose writes failed as ``conflict`` (``rollback``: what stopped its
    rollback too), so the store never wedges: verify names it, apply and revert are refused
    until resolve rolls back what dreamd wrote and keeps what anyone else did."""
    now = app.clock()
    payload = {"journal": journal_id, "error": str(error)} | ({"rollback": str(rollback)} if rollback is not None else {})
    with app.engine().begin() as conn:
        repo.close_journal(conn, store_id, journal_id, "conflict", now)
        repo.add_event(conn, store_id, "journal.failed", app.actor, app.surface, now, payload, proposal_id=proposal_id)
    log.warning("journal.failed", proposal_id=proposal_id, **payload)


def rolls_back(error: DreamdError) -> bool:
    """Whether a failed write is rolled back at once: one the file system refused (or a blob
    missing), not one a person's edit stopped, whose bytes are for ``dreamd resolve`` to place."""
    return not isinstance(error, (ConflictError, EditRacedError))


def roll_back(app: App, store: StoreConfig, roots: port.Roots, store_id: int, journal_id: int, proposal_id: int, steps: list[journal.Step], blobs: Mapping[str, bytes], error: DreamdError) -> DreamdError | None:
    """Undo at once what a journal whose writes failed had written: every file holding its
    after bytes gets its before bytes back (compare-and-swap, like any write: writes first,
    removals last), and the journal's temp files are cleared. Then the store is as it was
    before the journal, which is closed ``rolled-back``, the proposal's state untouched;
    returns None. If the rollback fails as well (the disk is still full, a person's edit is
    in the way), the journal is closed as ``conflict``, which holds the store until
    ``dreamd resolve``; returns what stopped the rollback."""
    hashes = frozenset(h for s in steps for h in (s.before, s.after) if h)
    try:
        with app.engine().connect() as conn:
            known = {**blobs, **repo.get_blobs(conn, {s.before for s in steps if s.before} - set(blobs))}
        keep = keeper(app, store_id, journal_id, proposal_id, hashes)
        journal.write(roots, steps, known, temp_dir=journal.temp_dir_for(store.settings, roots), undo=True, journal_id=journal_id, keep=keep)
        tag = store_files.temp_tag(journal_id)
        port.cleanup_temp_files(roots, (tag,), keep, known=known)
        current = journal.on_disk(roots, [s.path for s in steps])
        left = store_files.find_temp_files(roots, (tag,)) + port.find_caught_files(roots, journal_id)
        if left or any(current[s.path] != s.before for s in steps):
            raise StoreError(f"{', '.join(left) or 'a file'} could not be put back as it was")
    except DreamdError as failed:
        fail_journal(app, store_id, journal_id, proposal_id, error, rollback=failed)
        return failed
    close_rolled_back(app, store_id, journal_id, proposal_id, error, failed=True)
    return None


def refuse_if_held(app: App, store_id: int, store_name: str) -> None:
    """Refuse to apply or revert in a store one of whose journals is in conflict: its files
    may hold part of what it wrote, and only ``dreamd resolve`` ends it (UnresolvedError)."""
    with app.engine().connect() as conn:
        held = repo.unfinished_journals(conn, store_id, ("conflict",))
    if held:
        entry = held[0]
        raise UnresolvedError(
            f"store {store_name} is held: journal {entry.id} ({entry.operation} of proposal {entry.proposal_id}) did not finish; no apply or revert runs on it until that journal is resolved",
            hint=f"dreamd resolve {entry.id} ends it; dreamd verify says what it holds",
        )


def close_rolled_back(app: App, store_id: int, journal_id: int, proposal_id: int, error: Exception, *, failed: bool = False) -> None:
    """Close a journal whose one database transaction rolled back: nothing was written, so
    there is nothing to resolve (a record store's compare-and-swap found a changed record);
    or (``failed``, said as a warning) one whose failed writes ``roll_back`` undid."""
    now = app.clock()
    with app.engine().begin() as conn:
        repo.close_journal(conn, store_id, journal_id, "rolled-back", now)
        repo.add_event(conn, store_id, "journal.rolled_back", app.actor, app.surface, now, {"journal": journal_id, "reason": str(error)}, proposal_id=proposal_id)
    (log.warning if failed else log.info)("journal.rolled_back", journal=journal_id, proposal_id=proposal_id, reason=str(error))


def finish_journal(app: App, conn: Connection, store_id: int, proposal_id: int, journal_id: int, operation: str, steps: list[journal.Step], after: Mapping[str, str], *, proposal: tuple[recorded.Files, dict[str, bytes]] | None = None, recovered: bool = False, index_path: str | None = None, before_root: str | None = None, after_root: str | None = None) -> tuple[dict[str, str], str]:
    """Record a completed apply or revert: state, snapshots, tombstones, event.

    ``after`` is the store's manifest after the writes, its bytes stored (a scan's: see
    ``scan_blobs``; or the manifest an earlier apply of the same run recorded, moved by the
    steps). ``proposal``: its files and bytes when the caller has them already, else they
    are rebuilt. Returns ``after`` as recorded.
    """
    now = app.clock()
    after = dict(after)
    before = manifest_before(steps, after)
    previous = repo.latest_snapshot(conn, store_id)
    before_root = before_root or root_hash(before)
    if previous is None:
        before_id = repo.save_manifest(conn, store_id, before_root, before)
    elif previous.root_hash == before_root:  # as an apply of a run finds it: the last one's after
        before_id = previous.manifest_id
    else:  # files dreamd did not write changed since it last looked: say so before recording
        seen = repo.manifest_entries(conn, store_id, previous.manifest_id)
        record_external_changes(app, conn, store_id, seen, before, now)
        before_id = repo.save_manifest(conn, store_id, before_root, before, base=(previous.manifest_id, seen))
    after_root = after_root or root_hash(after)
    after_id = repo.save_manifest(conn, store_id, after_root, after, base=(before_id, before), changed=[s.path for s in steps])
    repo.add_snapshot(conn, store_id, before_id, f"{operation}-before", now, proposal_id=proposal_id)
    repo.add_snapshot(conn, store_id, after_id, f"{operation}-after", now, proposal_id=proposal_id)
    repo.close_journal(conn, store_id, journal_id, "done", now)
    state = APPLIED if operation == "apply" else REVERTED
    repo.set_state(conn, store_id, proposal_id, state, now)
    if operation == "apply":
        files, blobs = proposal or recorded.proposal_bytes(conn, store_id, proposal_id)
        for path, value in retired_values(files, blobs, index_path).items():
            repo.add_tombstone(conn, store_id, "value", value, now, proposal_id=proposal_id, note_path=path, reason="retired")
    else:
        repo.lift_value_tombstones(conn, store_id, proposal_id, now)
    payload = {"files": [s.as_dict() for s in steps], "recovered": recovered}
    repo.add_event(conn, store_id, f"proposal.{state}", app.actor, app.surface, now, payload, proposal_id=proposal_id)
    return after, after_root


def manifest_before(steps: list[journal.Step], after: Mapping[str, str]) -> dict[str, str]:
    """The store's manifest as it was before the steps: ``after`` with each step's before."""
    return _moved(after, {s.path: s.before for s in steps})


def manifest_after(steps: list[journal.Step], before: Mapping[str, str]) -> dict[str, str]:
    """The store's manifest once the steps are written: ``before`` with each step's after."""
    return _moved(before, {s.path: s.after for s in steps})


def _moved(manifest: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    out = dict(manifest)  # a copy in C; then only the changed paths
    for path, digest in changes.items():
        if digest is None:
            out.pop(path, None)
        else:
            out[path] = digest
    return out


def scan_blobs(scan: ScanResult) -> dict[str, bytes]:
    """The bytes a scan read (a file the stat cache vouched for is stored already)."""
    return {e.hash: e.data for e in {**scan.files, **scan.archived}.values() if e.read is not None}


def retired_values(files: dict[str, tuple[str | None, str | None]], blobs: dict[str, bytes], index_path: str | None = None) -> dict[str, str]:
    """Normalised-value hashes of notes an applied proposal retired (path -> value hash).

    A value that stays live in the result (the survivor of an exact-duplicate merge holds
    the same text) was not retired, so it is not tombstoned. The store's index is no note:
    its text (the largest file of a big store) is never normalised for this.
    """
    retired = retired_notes(files, blobs)
    if not retired:
        return {}
    kept = {Note(path, blobs[result], result).value_hash for path, (_, result) in files.items()
            if result is not None and path != index_path and Note(path, blobs[result], result).live}  # fmt: skip
    found = {}
    for path in retired:
        value = Note(path, blobs[files[path][0]], files[path][0]).value_hash  # type: ignore[index]
        if value not in kept:
            found[path] = value
    return found


EXTERNAL = "external:unknown"


def record_external_changes(app: App, conn: Connection, store_id: int, before: dict[str, str], after: dict[str, str], now: dt.datetime, *, pass_id: int | None = None) -> dict[str, list[str]]:
    """Record a ``store.changed`` event by ``external:unknown`` for files that differ."""
    changes = manifest_changes(before, after)
    payload = {k: v[:50] for k, v in changes.items()} | {"counts": {k: len(v) for k, v in changes.items()}}
    repo.add_event(conn, store_id, "store.changed", EXTERNAL, app.surface, now, payload, pass_id=pass_id)
    return changes
