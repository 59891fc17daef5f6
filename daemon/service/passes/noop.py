"""The no-op lane: a pass over a store where nothing changed, told and recorded without the
database layer, the planners or the diff code.

cron, a timer and every daemon worker start a new process for a pass, and most passes find
nothing to do; importing SQLAlchemy alone costs more than stat-ing ten thousand notes. So
``pass_over`` looks first with ``db/quick.py`` (the standard library's sqlite3) and
the stat cache (``stores/statcache.py``), and records the skipped pass itself when it can
vouch for every condition under which the whole pass (``service/passes.run_pass``) would
skip too:

- the store is registered under its name at its folder (the same device and inode, its
  preset, the first store there), with a completed pass whose root hash, planner
  fingerprint and due time still hold, and no model work that pass left undone;
- no pass is running or died running, no lease is held or left, no apply is half-written
  (so neither recovery nor a busy report is due), and no event came since the lane looked;
- every file's stat matches a trusted stat-cache row, so no file is read at all (a file the
  scan had to read gets its row renewed by the whole pass); or, in the daemon, its watches
  saw no event since the last pass saw the root hash the store's last completed pass
  recorded (``Unchanged``, see scheduler/watch.py): then not even a stat is made;
- nothing waits that a policy or a notify command would look at again.

At anything else (a server database, a dry run, a record store, a workspace, a first pass)
it steps aside before writing anything, and the whole pass decides from scratch.

Every record this lane builds, from the config down to the scan's, is a ``typing.NamedTuple``
or a plain class, never a dataclass: importing ``dataclasses`` (with ``inspect``) and
building 28 of them was a fifth of a no-op pass (0.091 s, 1.08x b3sum, where 0.078 s, 0.88x,
at 10,000 notes, installed). A test fails if the lane imports either module again.
"""

from __future__ import annotations

import sqlite3
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from daemon import logs
from daemon.config import StoreConfig
from daemon.core.errors import DreamdError
from daemon.db import quick
from daemon.service.holders import this_holder
from daemon.service.naming import resolve
from daemon.service.passes.report import PassReport, PolicyOutcome, fingerprint_of, model_unfinished
from daemon.stores.paths import StoreRoots, identity_text, open_roots
from daemon.stores.scan import SKIP_REASONS, Glimpse, Skipped, StatWalk, glimpse, stat_walk
from daemon.stores.statcache import RACY_NS

if TYPE_CHECKING:
    from daemon.service.context import App
    from daemon.service.passes.run import Progress

log = logs.get_logger("dreamd.pass")

# What makes the lane give up: the whole pass meets it again, and says what it is in one line.
STEP_ASIDE = (sqlite3.Error, DreamdError, OSError, ValueError)
REASON = "store and due times unchanged"  # the pass.skipped event's reason, as the whole pass gives it
_INT64 = 1 << 64  # an inode above 2**63 is stored as its two's complement (see repo.stat_cache)


class Unchanged(NamedTuple):
    """What the last pass over a store saw, which the daemon's watches say still holds: its
    root hash, how many notes, and the files it skipped (path, reason)."""

    root_hash: str
    notes: int
    skipped: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, report: PassReport) -> Unchanged | None:
        """What a completed or skipped pass saw; None for a pass that saw nothing to vouch for.
        Notes a time cap left unread are not among the files a scan skips: a pass reads them again."""
        if report.status not in ("completed", "skipped") or not report.root_hash:
            return None
        return cls(report.root_hash, report.notes, tuple((s.path, s.reason) for s in report.skipped_files if s.reason in SKIP_REASONS))

    def as_json(self) -> dict[str, Any]:
        return {"root_hash": self.root_hash, "notes": self.notes, "skipped": [list(s) for s in self.skipped]}

    @classmethod
    def from_json(cls, value: Any) -> Unchanged | None:
        """The daemon's word, or None when it is not one this code wrote (then the store is walked)."""
        try:
            return cls(str(value["root_hash"]), int(value["notes"]), tuple((str(p), str(r)) for p, r in value["skipped"]))
        except (TypeError, KeyError, ValueError):
            return None


def result_line(report: PassReport) -> dict[str, Any]:
    """A pass as the daemon hears of it (a worker's result line, or its own watched skip);
    ``seen`` is what the pass saw, for the daemon to hand back while its watches see no change."""
    seen = Unchanged.of(report)
    return {"store": report.store, "status": report.status, "pass_id": report.pass_id, "stats": report.stats, "exit": 0, "seen": seen.as_json() if seen else None}


def watched_skip(app: App, store_name: str, unchanged: object) -> dict[str, Any] | None:
    """The daemon's own skip of a store its watches saw no change in: the lane alone, through
    sqlite3 (no worker started, nothing read of the store); the result line, or None when
    the lane steps aside or meets any error (a worker's whole pass then decides, and says why)."""
    word = Unchanged.from_json(unchanged)
    if word is None:
        return None
    try:
        report = skip_if_unchanged(app, app.config.store(store_name), word)
    except STEP_ASIDE as exc:
        log.debug("noop.stepped_aside", store=store_name, error=f"{exc.__class__.__name__}: {exc}")
        return None
    return None if report is None else result_line(report)


def pass_over(app: App, store: StoreConfig, *, dry_run: bool = False, adopt_root: bool = False, progress: Progress | None = None,
              unchanged: Unchanged | None = None) -> PassReport:  # fmt: skip
    """One pass over ``store``: the no-op lane when it can vouch for a skip, else the whole
    pass. ``unchanged``: what the daemon's watches say the store still is (no stat needed)."""
    if not (dry_run or adopt_root):
        report = skip_if_unchanged(app, store, unchanged)
        if report is not None:
            return report
    from daemon.service.passes.run import run_pass

    return run_pass(app, store, dry_run=dry_run, adopt_root=adopt_root, progress=progress)


def pass_named(app: App, name: str | None, path: str | None, preset: str | None, *, dry_run: bool = False, adopt_root: bool = False,
               progress: Progress | None = None) -> tuple[StoreConfig, PassReport]:  # fmt: skip
    """The store ``dreamd pass`` names (service/naming.py, as for every command) and its
    pass: the no-op lane when it can vouch for a skip, else the whole pass."""
    if not (dry_run or adopt_root):
        skipped = skip_named(app, name, path, preset)
        if skipped is not None:
            return skipped
    return _whole_pass_named(app, name, path, preset, dry_run=dry_run, adopt_root=adopt_root, progress=progress)


def skip_named(app: App, name: str | None, path: str | None, preset: str | None) -> tuple[StoreConfig, PassReport] | None:
    """The no-op lane alone over the store ``dreamd pass`` names: the store and its recorded
    skip, or None (nothing written) when the whole pass has to decide."""
    conn = quick.connect(app.db_url)
    if conn is None:
        return None
    try:
        store = app.config.completed(resolve(app.config, name, path, preset, lambda **key: quick.registered(conn, **key)))
        report = _skipped(app, store, conn)
    except STEP_ASIDE:  # a store no one can name: the whole pass says why
        return None
    finally:
        conn.close()
    return None if report is None else (store, report)


def _whole_pass_named(app: App, name: str | None, path: str | None, preset: str | None, *, dry_run: bool = False, adopt_root: bool = False,
                      progress: Progress | None = None) -> tuple[StoreConfig, PassReport]:  # fmt: skip
    """The whole pass over the store ``dreamd pass`` names, the lane not asked (again)."""
    from daemon.service.passes.run import run_pass
    from daemon.service.workspace import resolve_store

    if not dry_run:
        app.migrate_existing()  # finding the store reads the database: at this code's schema
    store = resolve_store(app, name, path, preset)
    return store, run_pass(app, store, dry_run=dry_run, adopt_root=adopt_root, progress=progress)


def skip_if_unchanged(app: App, store: StoreConfig, unchanged: Unchanged | None = None) -> PassReport | None:
    """The recorded skipped pass, or None when the whole pass has to decide (nothing written).
    The lane's connection is the App's, kept for its next pass (a worker serves many)."""
    lane = app.lane()
    conn = lane.connection(app.db_url)
    if conn is None:
        return None
    try:
        return _skipped(app, store, conn, unchanged)
    finally:
        lane.release(conn)


def _skipped(app: App, store: StoreConfig, conn: sqlite3.Connection, unchanged: Unchanged | None = None) -> PassReport | None:
    if store.workspace is not None or store.settings.preset.records:
        return None
    try:
        return _skip(app, store, conn, unchanged)
    except STEP_ASIDE as exc:
        log.debug("noop.stepped_aside", store=store.name, error=f"{exc.__class__.__name__}: {exc}")
        return None


def _skip(app: App, store: StoreConfig, conn: sqlite3.Connection, unchanged: Unchanged | None) -> PassReport | None:
    now = app.clock()
    looked = quick.look(conn, store.name)
    if looked is None or looked.busy or looked.last_completed is None or not looked.first_at_root:
        return None
    if (looked.root, looked.preset) != (str(store.root), store.preset):
        return None
    if looked.waiting and (store.policy is not None or (app.config.notify.command and not app.config.notify.only_new)):
        return None  # a policy may decide, or [notify] reminds, of what waits: the whole pass
    _, root_hash, planner, due, stats = looked.last_completed
    if (due is not None and now >= due) or model_unfinished(store, stats):
        return None
    roots = open_roots(store.root, store.settings.archive_root)
    if identity_text(roots) != looked.root_identity:
        return None
    memo = None  # the stat digest to keep, when the stat cache vouched row by row
    if unchanged is not None:  # the watches saw no change since a pass saw this root hash
        if unchanged.root_hash != root_hash:
            return None
        report = PassReport(store.name, "skipped", root_hash, skipped_files=[Skipped(p, r) for p, r in unchanged.skipped], notes=unchanged.notes, at=now)
    else:
        found = _vouched(conn, looked, roots, store)
        if found is None or found.root_hash != root_hash:
            return None
        report = PassReport(store.name, "skipped", root_hash, skipped_files=found.skipped, notes=found.notes, at=now)
        memo = found.memo
    fingerprint = fingerprint_of(app, store)
    if fingerprint != planner:
        return None
    if store.policy is not None:
        report.policy = _nothing_decided(store.policy)
    pass_id = quick.record_skip(conn, looked, surface=app.surface, actor=app.actor, runner=this_holder(), now=now,
                                root_hash=root_hash, planner=fingerprint, stats=report.stats, reason=REASON,
                                memo=memo)  # fmt: skip
    if pass_id is None:
        return None
    report.pass_id, report.waiting_after = pass_id, (looked.pending, looked.waiting)
    where = log.bind(store=store.name, pass_id=pass_id)
    for skipped in report.skipped_files:
        where.info("file.skipped", path=skipped.path, reason=skipped.reason)
    where.info("pass.skipped", **{k: v for k, v in report.stats.items() if k != "v"}, **({"watched": True} if unchanged is not None else {}))
    return report


class _Vouched(NamedTuple):
    """A store as the stat cache vouches for it, and the digest to keep for next time."""

    root_hash: str
    notes: int
    skipped: list[Skipped]
    memo: quick.Memo | None  # None: the one kept still stands, or none can be kept


def _vouched(conn: sqlite3.Connection, looked: quick.Looked, roots: StoreRoots, store: StoreConfig) -> _Vouched | None:
    """What the store is on the stat cache's word; None when a file would have to be read.

    The store's stats are compared with the digest the lane kept when it last vouched (one
    hash over 10,000 stats, where reading 10,000 rows cost a tenth of the process); only
    when that does not stand are they compared with the stat cache's rows one by one."""
    walked = stat_walk(roots, store.settings)
    if walked is None:
        return None
    memo = looked.memo
    if memo is not None and memo.digest == walked.digest:
        skips = [Skipped(path, reason) for path, reason in memo.skips]
        read = walked.files.keys() - {skip.path for skip in skips}
        notes = len(store.settings.notes_among(read))
        return _Vouched(memo.root_hash, notes, sorted([*walked.skipped, *skips], key=attrgetter("path")), None)
    rows = quick.stat_rows(conn, looked.store_id)
    seen = {row[0]: row[1:] if row[3] >= 0 else (row[1], row[2], row[3] % _INT64, *row[4:]) for row in rows}
    glimpsed = glimpse(roots, store.settings, seen)
    if glimpsed is None:
        return None
    return _Vouched(glimpsed.root_hash, glimpsed.notes, glimpsed.skipped, _memo(walked, glimpsed, seen))


def _memo(walked: StatWalk, glimpsed: Glimpse, seen: dict[str, tuple[int, int, int, int, str, int]]) -> quick.Memo | None:
    """The digest to keep of a store the stat cache vouched for row by row, or None when it
    could vouch for less than what the digest would: the glimpse (a walk of its own, a moment
    later) must have hashed exactly the walk's files but those it read and skipped; each
    hashed one must have had a trusted row with the walk's stat, and each skipped one its
    last change clearly before the walk (so a write in the same clock tick cannot hide behind
    its stat)."""
    stats = walked.files | walked.archived
    skips = {skip.path: skip.reason for skip in glimpsed.skipped if skip.path in stats}
    if glimpsed.manifest.keys() != stats.keys() - skips.keys():
        return None
    for path, key in stats.items():
        row = seen.get(path)
        if path in skips:
            if row is not None or max(key[1], key[3]) >= walked.started_ns - RACY_NS:
                return None
        elif row is None or row[:4] != key or max(key[1], key[3]) >= row[5] - RACY_NS:
            return None
    return quick.Memo(walked.digest, glimpsed.root_hash, tuple(sorted(skips.items())))


def _nothing_decided(policy_path: str) -> dict[str, object]:
    """What the store's policy makes of no proposal at all (``PolicyOutcome.stats``): the
    policy is still read, so a broken one fails this pass as it fails the whole one."""
    from daemon.policies.load import load_policy

    return PolicyOutcome(load_policy(policy_path).actor).stats()
