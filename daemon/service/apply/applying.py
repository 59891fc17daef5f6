"""Apply accepted proposals and revert applied ones, through compare-and-swap and the journal.

Apply writes only when every file the proposal read is byte-for-byte what it saw and
none it changes is pinned now (otherwise the proposal becomes ``stale`` and nothing is
written); a path outside the store is refused with an error. Revert writes only
when every file it would restore still holds what the apply wrote (otherwise it refuses
and names the files that changed since). A write the disk refuses midway is rolled back at
once (``recovery.roll_back``); a store whose journal is left in conflict is held: neither
runs on it until ``dreamd resolve``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from sqlalchemy import Connection

from daemon import logs
from daemon.config import StoreConfig
from daemon.core.errors import ApplyError, ConflictError, DreamdError, ProposalError, StaleError
from daemon.core.notes import Note
from daemon.core.proposals import ACCEPTED, APPLIED, PENDING, REJECTED, REVERTED, STALE, check_transition
from daemon.db import repo
from daemon.service import recorded
from daemon.service.apply import journal
from daemon.core.hashing import RunningRoot, hash_bytes, root_hash
from daemon.service.context import App
from daemon.service.apply.interrupt import shielded
from daemon.service.apply.later import revert_order
from daemon.service.leases import holding_store
from daemon.service.apply.rebasing import Written, in_order, rebased
from daemon.service.apply.merged import Found, exact_steps, holds_result, record_found_applied
from daemon.service.apply.recovery import close_rolled_back, fail_journal, finish_journal, keeper, manifest_after, manifest_before, recover, record_external_changes, refuse_if_held, remove_reverted_folders, roll_back, rolls_back, scan_blobs
from daemon.service.proposals import locate, mark_stale
from daemon.service.workspace import glance, registered_roots, remember_stats, store_config_for_id, store_name as store_name_of
from daemon.stores import port
from daemon.stores.paths import StoreRoots


log = logs.get_logger("dreamd.apply")


@dataclass(frozen=True)
class ApplyResult:
    proposal_id: int
    store: str
    state: str  # applied | stale | reverted
    detail: str = ""


def apply(app: App, ids: list[int] | None = None, store_name: str | None = None, progress: Callable[[int, int], None] | None = None) -> list[ApplyResult]:
    """Apply the given proposals (each must be accepted), or every accepted one.

    The proposals of one store are applied in one run under one lease (see ``Run``), each
    still compare-and-swapped and journaled on its own, in the order given, but that a
    proposal whose small edit touches a note another of them merges goes after it
    (``rebasing.in_order``).
    ``progress(done, total)``, if given, is called once the targets are known (done 0) and
    after each proposal: a face shows a bar with it."""
    targets = [locate(app, i) for i in ids] if ids else _accepted(app, store_name)
    results: list[ApplyResult] = []
    if progress is not None:
        progress(0, len(targets))
    for store_id, pids in _by_store(targets):
        with app.engine().connect() as conn:
            store = store_config_for_id(app, conn, store_id)
        with holding_store(app, store_id, store.name, heartbeat=True):
            run = Run(app, store, store_id)
            for pid in run.ordered(pids):
                with shielded():  # a worker told to stop finishes this proposal, then stops
                    results.append(_apply_held(app, store, store_id, pid, run))
                if progress is not None:
                    progress(len(results), len(targets))
    return results


def _by_store(targets: list[tuple[int, int]]) -> list[tuple[int, list[int]]]:
    """The proposal ids grouped by store, stores in the order they first appear."""
    groups: dict[int, list[int]] = {}
    for store_id, pid in targets:
        groups.setdefault(store_id, []).append(pid)
    return list(groups.items())


class Run:
    """Applies of one store under one lease: recovery once, the store looked at once (a
    glance: the stat cache spares files unchanged since dreamd read them), then each apply
    records the state it leaves as the one before it moved by its own steps, so applying N
    proposals re-hashes the files they touch, not the whole store N times.

    Each apply still reads and compares the bytes of every file it touches (compare-and-swap
    never trusts this state). A file someone else changes while the run goes on, and that no
    proposal of the run touches, is recorded by the next pass (as an external change)."""

    def __init__(self, app: App, store: StoreConfig, store_id: int) -> None:
        self.app, self.store, self.store_id = app, store, store_id
        recover(app, store)
        refuse_if_held(app, store_id, store.name)  # nothing is applied on top of a journal left half-written
        self.roots = registered_roots(app, store_id, store)
        self._recorded: tuple[dict[str, str], RunningRoot] | None = None
        self._written: Written | None = None
        self.blobs: dict[str, bytes] = {}  # large base bytes (the index) the run's proposals share

    def recorded(self) -> tuple[dict[str, str], RunningRoot]:
        """The store's manifest now and its root: looked at on first use, then kept by each apply."""
        if self._recorded is None:
            scan, seen = glance(self.app, self.store_id, self.store, self.roots)
            with self.app.engine().begin() as conn:
                repo.put_blobs(conn, scan_blobs(scan))
                remember_stats(conn, self.store_id, scan, seen)
            self._recorded = scan.manifest, RunningRoot(scan.manifest)
        return self._recorded

    def ordered(self, ids: list[int]) -> list[int]:
        """The proposals to apply, a small edit of a note after the proposal that merges it."""
        if port.is_records(self.roots):
            return ids
        with self.app.engine().connect() as conn:
            return in_order(conn, self.store_id, ids, self.store.settings, self.blobs)

    def written(self) -> Written:
        """What dreamd's finished writes did to the store's files: read once, then kept by each apply."""
        if self._written is None:
            with self.app.engine().connect() as conn:
                self._written = Written.load(conn, self.store_id)
        return self._written

    def wrote(self, proposal_id: int, steps: list[journal.Step]) -> None:
        """An apply of this run is done: its writes are dreamd's too."""
        if self._written is not None:
            self._written.add(proposal_id, [s.as_dict() for s in steps])

    def moved(self, after: tuple[dict[str, str], RunningRoot] | None) -> None:
        """What the last write left (None: unknown, look again before the next)."""
        self._recorded = after


def _accepted(app: App, store_name: str | None) -> list[tuple[int, int]]:
    """Accepted proposals, listed after recovery (a crashed apply is applied, not accepted)."""
    store_name = store_name_of(app, store_name)
    with app.engine().connect() as conn:
        stores = [(row.id, store_config_for_id(app, conn, row.id)) for row in repo.all_stores(conn) if not store_name or row.name == store_name]
    found = []
    for store_id, store in stores:
        recover(app, store)
        with app.engine().connect() as conn:
            found += [(store_id, p.id) for p in repo.list_proposals(conn, store_id, [ACCEPTED])]
    return found


def _under_lease(app: App, store_id: int, work: Callable[[StoreConfig], ApplyResult]) -> ApplyResult:
    """Run ``work`` on the store while holding its lease (one writer per store).

    Shielded: a worker told to stop finishes this write first (see interrupt.py).
    """
    with app.engine().connect() as conn:
        store = store_config_for_id(app, conn, store_id)
    with shielded(), holding_store(app, store_id, store.name):
        return work(store)


def _apply_held(app: App, store: StoreConfig, store_id: int, proposal_id: int, run: Run) -> ApplyResult:
    engine = app.engine()
    with engine.connect() as conn:  # the run recovered first: it may have finished this very proposal's crashed apply
        row = repo.get_proposal(conn, store_id, proposal_id)
        if row.state != ACCEPTED:
            raise ProposalError(f"proposal {proposal_id} is {row.state}; only accepted proposals are applied", hint=_next_step(proposal_id, row.state))
        files, blobs = recorded.proposal_bytes(conn, store_id, proposal_id, run.blobs, diff=row.diff)
    now = app.clock()
    roots = run.roots
    read: dict[str, bytes] = {}
    current = journal.on_disk(roots, files, read)  # one reading of the proposal's files for every question
    if holds_result(files, current):
        run.moved(None)
        return _found_applied(app, store, roots, store_id, proposal_id, files, blobs)
    pinned = _pinned_changes(store, files, blobs)
    changed = sorted(p for p, (base, _) in files.items() if current[p] != base)
    held = set(port.held_paths(roots, files))
    steps = [journal.Step(p, b, r) for p, (b, r) in files.items() if b != r and p in held]
    reason = f"pinned, so no proposal may change it: {', '.join(pinned)}" if pinned else ""
    placed: dict[str, bytes] = {}
    if changed and not pinned:
        try:
            if port.is_records(roots):  # a record is never reworded in place by another proposal
                raise StaleError(f"changed since proposed: {', '.join(changed)}")
            placed = rebased(row.diff, files, blobs, current, read, store.settings, run.written())
        except StaleError as exc:
            reason = str(exc)
        for path, data in placed.items():
            step = journal.Step(path, current[path], hash_bytes(data))
            steps = [step if s.path == path else s for s in steps]
            blobs[step.after], blobs[step.before] = data, read[path]  # type: ignore[index]
    if reason:
        with engine.begin() as conn:
            mark_stale(app, conn, store_id, proposal_id, reason, now)
        log.info("proposal.stale", store=store.name, proposal_id=proposal_id, reason=reason)
        return ApplyResult(proposal_id, store.name, STALE, reason)

    def prepare(conn: Connection) -> None:
        check_transition(repo.get_proposal(conn, store_id, proposal_id).state, APPLIED, proposal_id)
        # what will be written is stored first: recovery and revert read it from here
        repo.put_blobs(conn, {s.after: blobs[s.after] for s in steps if s.after}, bases=journal.blob_bases(steps), known=blobs)

    try:
        _journaled(app, store, store_id, proposal_id, "apply", steps, blobs, prepare, proposal=(files, blobs), run=run)
    except StaleError as exc:  # a record store's transaction rolled back whole: nothing was written
        with engine.begin() as conn:
            mark_stale(app, conn, store_id, proposal_id, str(exc), app.clock())
        log.info("proposal.stale", store=store.name, proposal_id=proposal_id, reason=str(exc))
        return ApplyResult(proposal_id, store.name, STALE, str(exc))
    log.info("proposal.applied", store=store.name, proposal_id=proposal_id, files=len(steps), placed=sorted(placed))
    return ApplyResult(proposal_id, store.name, APPLIED, f"placed on {', '.join(sorted(placed))} as earlier applies left {'it' if len(placed) == 1 else 'them'}" if placed else "")


def _found_applied(app: App, store: StoreConfig, roots: StoreRoots, store_id: int, proposal_id: int, files: recorded.Files, blobs: dict[str, bytes]) -> ApplyResult:
    """An accepted proposal whose result the store holds already (a merged review branch):
    recorded as applied, nothing written; what else changed since dreamd looked is recorded
    as such first, as after any apply."""
    scan = port.scan(roots, store.settings)
    now = app.clock()
    with app.engine().begin() as conn:
        check_transition(repo.get_proposal(conn, store_id, proposal_id).state, APPLIED, proposal_id)
        repo.put_blobs(conn, {**{e.hash: e.data for e in {**scan.files, **scan.archived}.values()}, **blobs})
        found = Found(proposal_id, files, exact_steps(files), {})
        before = manifest_before(found.steps, scan.manifest)
        previous = repo.latest_snapshot(conn, store_id)
        if previous is not None and previous.root_hash != root_hash(before):
            record_external_changes(app, conn, store_id, repo.manifest_entries(conn, store_id, previous.manifest_id), before, now)
        record_found_applied(app, conn, store_id, found, scan.manifest, now)
    log.info("proposal.found_applied", store=store.name, proposal_id=proposal_id)
    return ApplyResult(proposal_id, store.name, APPLIED, "its result was in the store already; nothing written")


def _next_step(proposal_id: int, state: str) -> str:
    """Advice that can work from ``state``: accept only what may still be accepted."""
    if state == PENDING:
        return f"dreamd accept {proposal_id}"
    if state == APPLIED:
        return f"it is applied already; dreamd revert {proposal_id} undoes it"
    if state == REJECTED:
        return f"dreamd unreject {proposal_id}, then dreamd accept {proposal_id}"
    return "it cannot be applied any more; a later pass proposes the change again if it is still wanted"


def _journaled(app: App, store: StoreConfig, store_id: int, proposal_id: int, operation: str, steps: list[journal.Step], blobs: dict[str, bytes], prepare: Callable[[Connection], None] | None = None, *, proposal: tuple[recorded.Files, dict[str, bytes]] | None = None, run: Run | None = None) -> None:
    """Open the journal (after ``prepare``, in the same transaction), write, record the
    outcome: the state ``run`` recorded moved by the steps, or (no run) a scan of the store."""
    roots = run.roots if run is not None else registered_roots(app, store_id, store)
    before = run.recorded() if run is not None else None  # looked at before anything is written
    temp_dir = journal.temp_dir_for(store.settings, roots)
    made = journal.new_folders(roots, steps, temp_dir) if operation == "apply" else []
    with app.engine().begin() as conn:
        if prepare is not None:
            prepare(conn)
        journal_id = repo.open_journal(conn, store_id, proposal_id, operation, [s.as_dict() for s in steps], app.clock(), made)
    try:
        keep = keeper(app, store_id, journal_id, proposal_id)
        journal.write(roots, steps, blobs, temp_dir=temp_dir, journal_id=journal_id, keep=keep)
    except ConflictError:
        if run is not None:
            run.moved(None)
        recover(app, store)  # closes this journal as conflict, recorded, for verify and resolve
        raise
    except DreamdError as exc:  # any other failure mid-write: closed, never left "writing"
        if run is not None:
            run.moved(None)
        if port.is_records(roots):  # one database transaction, rolled back: nothing to resolve
            close_rolled_back(app, store_id, journal_id, proposal_id, exc)
            raise
        _failed(app, store, roots, store_id, proposal_id, operation, journal_id, steps, blobs, exc)
    known_root = after_root = None
    if before is not None:
        manifest, root = before
        after = manifest_after(steps, manifest)
        # the running root stands for the state before only if every step started from what was recorded
        if all(manifest.get(s.path) == s.before for s in steps):
            known_root = root.digest()
            for s in steps:
                root.set(s.path, s.after)
            after_root = root.digest()
    else:
        scan = port.scan(roots, store.settings)
        after = scan.manifest
    with app.engine().begin() as conn:
        if before is None:
            repo.put_blobs(conn, scan_blobs(scan))
        recorded, recorded_root = finish_journal(app, conn, store_id, proposal_id, journal_id, operation, steps, after, proposal=proposal,
                                                 index_path=store.settings.index_path, before_root=known_root, after_root=after_root)  # fmt: skip
    if run is not None:
        run.moved((recorded, root) if after_root is not None else (recorded, RunningRoot(recorded)))
        run.wrote(proposal_id, steps)


def _failed(app: App, store: StoreConfig, roots: port.Roots, store_id: int, proposal_id: int, operation: str, journal_id: int, steps: list[journal.Step], blobs: dict[str, bytes], exc: DreamdError) -> NoReturn:
    """A write failed mid-journal: rolled back at once when the file system refused it (a full
    disk, an I/O error, a quota), so the store is as it was; else, or if the rollback fails
    too, the journal is left in conflict and the store held until ``dreamd resolve``."""
    failed = f"{operation} of proposal {proposal_id} failed while writing: {exc}"
    if not rolls_back(exc):  # a person's bytes are in play (a caught file, a blob): resolve places them
        fail_journal(app, store_id, journal_id, proposal_id, exc)
        raise ApplyError(failed, hint=f"dreamd verify names journal {journal_id}; no apply or revert of this store runs until dreamd resolve {journal_id} ends it") from exc
    stopped = roll_back(app, store, roots, store_id, journal_id, proposal_id, steps, blobs, exc)
    if stopped is None:
        state = "accepted" if operation == "apply" else "applied"
        raise ApplyError(f"{failed}; what it wrote was rolled back, the store is as it was and proposal {proposal_id} is still {state}",
                         hint=f"free space or mend the disk, then dreamd {operation} {proposal_id} again") from exc  # fmt: skip
    raise ApplyError(f"{failed}, and rolling it back failed too: {stopped}",
                     hint=f"the store is held: no apply or revert of it runs until dreamd resolve {journal_id} ends journal {journal_id}, once the disk takes writes again") from exc  # fmt: skip


def _pinned_changes(store: StoreConfig, files: dict[str, tuple[str | None, str | None]], blobs: dict[str, bytes]) -> list[str]:
    """Files the proposal would change that are pinned now (by setting or by frontmatter).

    Validation refused these when the proposal was made; a note pinned since (a new
    ``pinned`` glob in the config) must stay untouched too, whoever accepted the change.
    """
    found = []
    for path, (base, result) in files.items():
        if base == result or base is None:
            continue
        if store.settings.is_pinned(path) or (store.settings.is_note(path) and Note(path, blobs[base], base).pinned):
            found.append(path)
    return found


def revert_pass(app: App, pass_id: int) -> list[ApplyResult]:
    """Revert every applied proposal a pass made, newest first (a later apply may build on an
    earlier one's bytes); stops at the first that cannot be reverted, saying which."""
    with app.engine().connect() as conn:
        found = [(row.id, row.state) for store in repo.all_stores(conn) for row in repo.list_proposals(conn, store.id) if row.pass_id == pass_id]
    if not found:
        raise ProposalError(f"no pass #{pass_id} with proposals", hint="dreamd history lists passes")
    applied = sorted((pid for pid, state in found if state == APPLIED), reverse=True)
    if not applied:
        raise ProposalError(f"pass #{pass_id} has no applied proposal to revert")
    return [revert(app, pid) for pid in applied]


def revert(app: App, proposal_id: int) -> ApplyResult:
    """Restore the files an applied proposal changed to their exact before-bytes, and take
    away the folders applies created that are empty now (the tree as it was before them)."""
    store_id, _ = locate(app, proposal_id)
    return _under_lease(app, store_id, lambda store: _revert_held(app, store, store_id, proposal_id))


def _revert_held(app: App, store: StoreConfig, store_id: int, proposal_id: int) -> ApplyResult:
    engine = app.engine()
    recover(app, store)  # first: it may finish this very proposal's crashed apply or revert
    refuse_if_held(app, store_id, store.name)
    with engine.connect() as conn:
        row = repo.get_proposal(conn, store_id, proposal_id)
    check_transition(row.state, REVERTED, proposal_id)
    with engine.connect() as conn:
        (written, *_) = repo.finished_steps(conn, store_id, proposal_id, "apply") or [[]]
        steps = [journal.Step(s["path"], s["after"], s["before"]) for s in written]
        blobs = repo.get_blobs(conn, [s.after for s in steps if s.after])
    roots = registered_roots(app, store_id, store)
    changed = journal.mismatches(roots, {s.path: s.before for s in steps})
    if changed:
        with engine.connect() as conn:
            order = revert_order(conn, store_id, proposal_id, journal.on_disk(roots, changed))
        raise ConflictError(
            f"proposal {proposal_id} cannot be reverted: changed since it was applied: {', '.join(changed)}",
            hint=order or f"they hold edits made after the apply; to take it back by hand, dreamd show {proposal_id} shows exactly what it changed",
        )
    _journaled(app, store, store_id, proposal_id, "revert", steps, blobs)
    removed = remove_reverted_folders(app, store, store_id, proposal_id)
    log.info("proposal.reverted", store=store.name, proposal_id=proposal_id, files=len(steps), folders_removed=removed)
    return ApplyResult(proposal_id, store.name, REVERTED)
