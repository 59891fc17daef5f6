"""One consolidation pass over one store: scan, plan, validate, record. It never writes a store.

``run_pass(app, store, dry_run=True)`` does the same planning (``_propose``) and writes
nothing at all: its proposals go to a sink that keeps nothing (``sinks.Discarding``) instead
of the database (``sinks.Recording``), which is opened immutable, or not at all; no event,
blob or pass is recorded.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from daemon import logs
from daemon.config import StoreConfig
from daemon.core.errors import MissingKeyError, PlannerError
from daemon.core.heap import collector_paused
from daemon.core.proposals import OPEN, PENDING
from daemon.db import repo
from daemon.service.apply import record_external_changes, recover
from daemon.service.context import App
from daemon.service.holders import this_holder
from daemon.service.leases import PASS_LEASE_TTL, StoreBusyError, holding_store
from daemon.service.passes.coverage import Ledger
from daemon.service.passes.findings import findings
from daemon.service.passes.notify import notify_waiting
from daemon.service.passes.orphans import close_dead_passes
from daemon.service.passes.report import PassReport, fingerprint_of, model_unfinished
from daemon.service.passes.sinks import Discarding, Recording, Sink
from daemon.service.passes.timecaps import TIME_CAP, Caps, read_links, read_notes
from daemon.service.proposals import mark_stale
from daemon.service.workspace import Observed, claim_store, glance, observe, read_whole, registered_roots, remember_stats, roots_of
from daemon.stores.scan import Skipped

if TYPE_CHECKING:  # planning, proposing and deciding are imported by the passes that do them
    from daemon.service.passes.proposing import Planned


log = logs.get_logger("dreamd.pass")

STORE_BATCH = 50  # proposals per transaction: bounded memory, short write locks


# progress(stage, done, total): what a face shows while a long pass runs (see run_pass)
Progress = Callable[[str, int, int], None]


def _unwatched(stage: str, done: int, total: int) -> None:
    """No one watches the pass."""


def _caps(app: App) -> Caps:
    limits = app.config.limits
    return Caps(note_seconds=limits.note_seconds, pass_seconds=limits.pass_seconds)


def _read_within(observed: Observed, caps: Caps, report: PassReport, progress: Progress) -> Observed:
    """The notes read within their time caps; those left unread are reported, never planned on."""
    view, unread = read_notes(observed.view, caps, lambda done, total: progress("reading notes", done, total))
    report.skipped_files = [*report.skipped_files, *(Skipped(path, TIME_CAP) for path in unread)]
    return dataclasses.replace(observed, view=view)


def _plan(app: App, store: StoreConfig, observed: Observed, now: dt.datetime, remembered: tuple[dict[str, str], frozenset[str]], caps: Caps, progress: Progress = _unwatched) -> Iterator[Planned]:
    """Proposals one at a time: a pass over a large store never holds every result's bytes.
    Out of time, it stops between detectors or between proposals: what it found stands."""
    from daemon.core.heap import give_back
    from daemon.planners.base import DEFAULT_DETECTORS, PlanContext, run_detectors
    from daemon.service.passes.citations import workspace_facts
    from daemon.service.passes.proposing import make_proposals

    values, rejected = remembered
    if caps.capped_at is not None or not read_links(observed.view, caps):
        return iter(())
    cited = workspace_facts(store, observed.view)  # the workspace's git, asked before planning: detectors stay pure
    ctx = PlanContext(view=observed.view, now=now, tombstoned_values=values, rejected_changes=rejected, settings=app.config.planner, citations=cited)
    ran = itertools.count(1)
    total = len(DEFAULT_DETECTORS)
    progress("detecting", 0, total)

    def guarded(work: Any, name: str) -> Any:
        done, found = caps.within_pass(work, f"detector {name}")
        progress("detecting", next(ran), total)
        return found if done else None

    drafts = run_detectors(ctx, guard=guarded)
    for note in observed.view.notes.values():
        note.forget_normalised()
    give_back()  # what the detectors freed, before the proposals are built
    return _until_out_of_time(make_proposals(drafts, observed.view, now), caps, lambda done: progress("proposing", done, len(drafts)))


def _until_out_of_time(planned: Iterator[Planned], caps: Caps, made: Callable[[int], None]) -> Iterator[Planned]:
    """``planned`` until the pass's time is up (checked between proposals, never inside one)."""
    try:
        for number, item in enumerate(planned, 1):
            yield item
            made(number)
            if caps.expired("building proposals"):
                return
    finally:
        planned.close()  # type: ignore[attr-defined]


def run_pass(app: App, store: StoreConfig, *, dry_run: bool = False, adopt_root: bool = False, progress: Progress | None = None) -> PassReport:
    """One pass (see the module). ``progress(stage, done, total)`` hears how far it is through
    reading notes, detecting and proposing: a face draws a bar with it."""
    progress = progress or _unwatched
    now = app.clock()
    _refuse_without_key(app, store)
    if dry_run:
        return _dry_run(app, store, now, progress)
    roots_of(store)  # a missing folder is the user's typo: record nothing for it
    engine = app.engine()
    with engine.begin() as conn:
        store_id = claim_store(app, conn, store, now, adopt=adopt_root)
        pass_id = repo.start_pass(conn, store_id, app.surface, app.actor, now, runner=this_holder())
    try:
        with holding_store(app, store_id, store.name, ttl=PASS_LEASE_TTL, heartbeat=True):  # one pass per store at a time
            close_dead_passes(app, store_id)
            recover(app, store)
            report = _record_pass(app, store, store_id, pass_id, now, progress)
    except StoreBusyError as busy:
        return _busy(app, store, store_id, pass_id, now, busy)
    except Exception as exc:
        # info: the face that started the pass says why in its own one line (the CLI's error,
        # pass --all's line, the daemon's pass.finished); a warning here would say it twice
        log.info("pass.failed", store=store.name, pass_id=pass_id, error=f"{exc.__class__.__name__}: {exc}")
        with engine.begin() as conn:
            repo.finish_pass(conn, store_id, pass_id, status="failed", finished_at=app.clock(), error=f"{exc.__class__.__name__}: {exc}")
            repo.add_event(conn, store_id, "pass.failed", app.actor, app.surface, app.clock(), {"error": str(exc)}, pass_id=pass_id)
        raise
    where = log.bind(store=store.name, pass_id=pass_id)
    for skipped in report.skipped_files:
        where.info("file.skipped", path=skipped.path, reason=skipped.reason)
    where.info(f"pass.{report.status}", **{k: v for k, v in report.stats.items() if k != "v"})
    notify_waiting(app, store, report.status, report.pass_id, report.new_waiting)  # [notify]: proposals wait for a person
    return report


def _refuse_without_key(app: App, store: StoreConfig) -> None:
    """A store's model that has no key to be called with: one line before the pass starts
    (nothing read, nothing recorded), not a failed call after the detectors have run."""
    if store.llm is None:
        return
    client = app.client_for(store.llm)
    missing = getattr(client, "missing_key", None)
    why = missing(store.llm) if missing is not None else None
    if why:
        raise MissingKeyError(f"store {store.name}: model {store.llm.model}: {why}; nothing was passed over", hint="export it where dreamd runs (the units read /etc/dreamd/env)")


def _busy(app: App, store: StoreConfig, store_id: int, pass_id: int, now: dt.datetime, busy: StoreBusyError) -> PassReport:
    """Another process is passing over or writing this store: skip, and say who and why."""
    reason = f"store busy: {busy}"
    with app.engine().begin() as conn:
        repo.finish_pass(conn, store_id, pass_id, status="skipped", finished_at=app.clock(), error=reason)
        repo.add_event(conn, store_id, "pass.skipped", app.actor, app.surface, now, {"reason": reason}, pass_id=pass_id)
    log.info("pass.busy", store=store.name, pass_id=pass_id, reason=reason)
    return PassReport(store.name, "busy", "", pass_id, at=now, busy=reason)


def _record_pass(app: App, store: StoreConfig, store_id: int, pass_id: int, now: dt.datetime, progress: Progress) -> PassReport:
    caps = _caps(app)
    with caps.timing():
        return _record_timed(app, store, store_id, pass_id, now, caps, progress)


def _record_timed(app: App, store: StoreConfig, store_id: int, pass_id: int, now: dt.datetime, caps: Caps, progress: Progress) -> PassReport:
    roots = registered_roots(app, store_id, store)
    with collector_paused():  # the files read and stored live as long as the pass (core.heap)
        scan, seen = glance(app, store_id, store, roots)  # files the stat cache vouches for are not read
        fingerprint = fingerprint_of(app, store)
        with app.engine().connect() as conn:
            last = repo.last_completed_pass(conn, store_id)
        due = last.next_due_at if last else None
        unchanged = last and last.root_hash == scan.root_hash and last.planner == fingerprint and (due is None or now < due)
        skip = unchanged and not model_unfinished(store, last.stats)
        if not skip:
            observed = read_whole(store, roots, scan)
            scan = observed.scan
        report = PassReport(store.name, "completed", scan.root_hash, pass_id, skipped_files=list(scan.skipped), notes=len(scan.notes), at=now)
        with app.engine().begin() as conn:
            if skip:
                report.status = "skipped"
                repo.finish_pass(conn, store_id, pass_id, status="skipped", finished_at=now, root_hash=scan.root_hash, planner=fingerprint, next_due_at=due, stats=report.stats)
                repo.add_event(conn, store_id, "pass.skipped", app.actor, app.surface, now, {"reason": "store and due times unchanged"}, pass_id=pass_id)
            else:
                report.external_changes = _record_snapshot(app, conn, store_id, pass_id, scan, now)
                report.stale = _mark_stale(app, conn, store, store_id, scan.manifest, now)
            remember_stats(conn, store_id, scan, seen)  # with the blobs: every row's bytes are stored
    if skip:
        if store.policy is not None:  # a spent budget may have renewed since: decide what was held
            _decide(app, store, store_id, report)
            with app.engine().begin() as conn:
                repo.finish_pass(conn, store_id, pass_id, stats=report.stats)
        return report
    sink = Recording(app, store_id, pass_id, now, store.settings.index_path)
    try:
        observed = _propose(app, store, observed, now, sink, caps, progress, report)
    except PlannerError:
        if report.llm and report.llm.get("error"):
            with app.engine().begin() as conn:  # kept on the failed pass: what was sent counts next time
                repo.finish_pass(conn, store_id, pass_id, root_hash=scan.root_hash, planner=fingerprint, stats=report.stats)
        raise
    if store.policy is not None:
        _decide(app, store, store_id, report)
        _final_states(app, store_id, report)
    report.capped = caps.capped_at
    report.status = "partial" if report.capped else "completed"
    from daemon.planners.base import earliest_due

    with app.engine().begin() as conn:
        next_due = earliest_due(observed.view, now, app.config.planner)
        repo.finish_pass(conn, store_id, pass_id, status=report.status, finished_at=app.clock(), root_hash=scan.root_hash, planner=fingerprint, next_due_at=next_due, stats=report.stats, error=report.model_failure)
        repo.add_event(conn, store_id, f"pass.{report.status}", app.actor, app.surface, now, report.stats, pass_id=pass_id)
    return report


def _final_states(app: App, store_id: int, report: PassReport) -> None:
    """What the policy made of each new proposal (accepted, applied, rejected), so a pass
    reports the states they are in, not the ones they were created in."""
    with app.engine().connect() as conn:
        now = repo.states_of(conn, store_id, [o.id for o in report.outcomes if o.id is not None and o.state == PENDING])
    report.outcomes = [o._replace(state=now[o.id][0], note=now[o.id][1] or o.note) if o.id in now else o for o in report.outcomes]


def _decide(app: App, store: StoreConfig, store_id: int, report: PassReport) -> None:
    """The policy decides every pending proposal, oldest first: this pass's new ones and
    those it held before (a per-pass or daily budget spent then, or a policy changed since)."""
    from daemon.service.passes.deciding import decide_by_policy

    with app.engine().connect() as conn:
        pending = [row.id for row in repo.list_proposals(conn, store_id, [PENDING])]
    report.policy = decide_by_policy(app, store, store_id, pending).stats()


def _propose(app: App, store: StoreConfig, observed: Observed, now: dt.datetime, sink: Sink, caps: Caps, progress: Progress, report: PassReport) -> Observed:
    """The planning every pass does, recorded or dry: the notes read within their caps, the
    findings, the detectors' proposals, then the model's, each batch handed to ``sink``."""
    from daemon.service.passes.llm_pass import plan_with_model
    from daemon.service.passes.proposing import make_proposals, refused_planned

    with collector_paused():  # what reading and planning make lives as long as the pass (core.heap)
        observed = _read_within(observed, caps, report, progress)
        report.findings = findings(store, observed.view)
        _keep_all(sink, _plan(app, store, observed, now, sink.remembered(), caps, progress), report)
    if store.llm is None or caps.expired("asking the model"):
        return observed
    ledger = sink.ledger()
    llm = plan_with_model(app, store, observed.view, now, ledger.due(observed.view), ledger)
    report.llm = llm.stats()
    report.outcomes += sink.model_answered(ledger, observed.view, llm, [refused_planned(r, observed.view) for r in llm.refusals])
    if llm.error:
        raise PlannerError(f"the model part of the pass failed: {llm.error}")
    _keep_all(sink, make_proposals(llm.drafts, observed.view, now), report)
    return observed


def _keep_all(sink: Sink, planned: Iterator[Planned], report: PassReport) -> None:
    """``planned`` into ``sink`` a batch at a time: bounded memory, short write locks."""
    while batch := list(itertools.islice(planned, STORE_BATCH)):
        report.outcomes += sink.keep(batch)


def _record_snapshot(app: App, conn: Connection, store_id: int, pass_id: int, scan, now: dt.datetime) -> dict[str, list[str]]:  # noqa: ANN001
    """Store new blobs and the manifest; report what changed since dreamd last looked."""
    previous = repo.latest_snapshot(conn, store_id)
    changed = previous is not None and previous.root_hash != scan.root_hash
    before = repo.manifest_entries(conn, store_id, previous.manifest_id) if changed else {}
    all_files = {**scan.files, **scan.archived}
    # a file's new bytes are stored as a delta of what the last snapshot held at its path
    repo.put_blobs(conn, {e.hash: e.data for e in all_files.values()}, bases={e.hash: before.get(path) for path, e in all_files.items()})
    manifest_id = repo.save_manifest(conn, store_id, scan.root_hash, scan.manifest, base=(previous.manifest_id, before) if changed else None)
    repo.add_snapshot(conn, store_id, manifest_id, "pass", now, pass_id=pass_id)
    if not changed:
        return {}
    return record_external_changes(app, conn, store_id, before, scan.manifest, now, pass_id=pass_id)


def _mark_stale(app: App, conn: Connection, store: StoreConfig, store_id: int, manifest: dict[str, str], now: dt.datetime) -> list[int]:
    """Open proposals whose files changed under them can no longer be applied.

    Files that only dreamd's own applies changed, and that the proposal edits in a small way
    (the index, a note whose links it rewrites), do not count: apply places the edit again
    on them (see apply/rebasing.py). Those the store holds applied already (a merged review
    branch) are recorded as applied instead (see merged.py).
    """
    from daemon.service.apply import Written, found_in_store, record_found_applied, still_applies

    stale = []
    rows = repo.list_proposals(conn, store_id, OPEN)
    written: Written | None = None
    found = found_in_store(conn, store_id, store.settings.index, rows, manifest)
    for item in found:
        record_found_applied(app, conn, store_id, item, manifest, now)
    applied = {item.proposal_id for item in found}
    for row in rows:
        if row.id in applied:
            continue
        files = repo.proposal_files(conn, store_id, row.id)
        changed = [p for p, (base, _) in files.items() if manifest.get(p) != base]
        if not changed:
            continue
        written = written or Written.load(conn, store_id)
        if not still_applies(conn, store_id, row.id, files, manifest, store.settings, written):
            reason = f"changed since proposed: {', '.join(changed[:5])}"
            mark_stale(app, conn, store_id, row.id, reason, now)
            stale.append(row.id)
    return stale


def _dry_run(app: App, store: StoreConfig, now: dt.datetime, progress: Progress) -> PassReport:
    """Everything a pass would propose, through the same planning with a sink that keeps
    nothing (``sinks.Discarding``), reading the database immutable when there is one.

    With a model configured the model is called too (a dry run shows everything), but
    nothing is recorded: not the proposals, not the calls.
    """
    observed = observe(store)
    report = PassReport(store.name, "dry-run", observed.scan.root_hash, skipped_files=list(observed.scan.skipped), notes=len(observed.scan.notes), at=now)
    engine = app.read_only_engine()
    caps = _caps(app)
    try:
        store_id = None
        if engine is not None:
            with engine.connect() as conn:
                row = repo.find_store(conn, store.name)
                store_id = row.id if row else None
        carried = app.ledgers.setdefault(store.name, Ledger()) if app.ledgers is not None else None
        with caps.timing():
            _propose(app, store, observed, now, Discarding(engine.connect if engine else None, store_id, carried), caps, progress, report)
    finally:
        if engine is not None:
            engine.dispose()
    report.capped = caps.capped_at
    return report
