"""The deterministic planner: run every detector over a store view, in a fixed order.

Pure: the same view, time, tombstones and settings always give the same drafts in the
same order. ``planner_fingerprint`` names the detector versions and settings, so the
scheduler can tell that an unchanged store still needs a new pass after an upgrade, and
``earliest_due`` tells it when time alone will make a new proposal due.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import replace

from daemon.core.changes import key_of
from daemon.core.errors import ValidationError
from daemon.core.proposals import Draft
from daemon.core.view import StoreView, utc
from daemon.planners.context import Detector, DetectorSettings, PlanContext, source_of
from daemon.planners.detectors.citation_drift import CitationDrift
from daemon.planners.detectors.dangling import DanglingReferences
from daemon.planners.detectors.declared import DeclaredSupersession
from daemon.planners.detectors.exact import ExactDuplicates
from daemon.planners.detectors.index_drift import IndexDrift
from daemon.planners.detectors.index_limit import IndexLimit
from daemon.planners.detectors.near import NearDuplicates
from daemon.planners.detectors.status_chain import StatusChains
from daemon.planners.detectors.stub import StubNotes
from daemon.planners.detectors.tombstone import TombstonedValues
from daemon.planners.detectors.ttl import TtlExpiry, due_of
from daemon.planners.detectors.visible_retired import VisibleRetired
from daemon.planners.survivor import can_retire
from daemon.planners.versions import fingerprint_of

__all__ = [
    "DEFAULT_DETECTORS",
    "Detector",
    "DetectorSettings",
    "PlanContext",
    "earliest_due",
    "planner_fingerprint",
    "run_detectors",
    "source_of",
]

DEFAULT_DETECTORS: tuple[Detector, ...] = (
    ExactDuplicates(),
    NearDuplicates(),
    TtlExpiry(),
    DeclaredSupersession(),
    StatusChains(),
    StubNotes(),
    CitationDrift(),
    IndexDrift(),
    IndexLimit(),
    TombstonedValues(),
    VisibleRetired(),
    DanglingReferences(),
)

# runs one detector's work, or returns None when the pass is out of time (see run_detectors)
Guard = Callable[[Callable[[], list[Draft]], str], list[Draft] | None]


def _order(draft: Draft) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    return (draft.survivor or "", draft.retire, draft.index_drop, draft.index_add)


def run_detectors(ctx: PlanContext, detectors: Sequence[Detector] = DEFAULT_DETECTORS, guard: Guard | None = None) -> list[Draft]:
    """Every detector's drafts: detectors in the given order, each one's drafts sorted.

    ``guard(work, name)`` runs each detector's work and returns None when it ran out of
    time: the detectors after it do not run, what the earlier ones found stands.
    """
    drafts: list[Draft] = []
    for detector in detectors:
        found = detector.detect(ctx) if guard is None else guard(lambda detector=detector, ctx=ctx: detector.detect(ctx), detector.name)
        if found is None:
            break
        wrong = [d.source for d in found if d.source != source_of(detector)]
        if wrong:
            raise ValueError(f"detector {detector.name} produced drafts with source {wrong[0]!r}")
        drafts.extend(sorted(found, key=_order))
        ctx = replace(ctx, retiring=ctx.retiring | {p for d in found if not _rejected(d, ctx) for p in d.retire})
    return drafts


def _rejected(draft: Draft, ctx: PlanContext) -> bool:
    """Whether people already rejected exactly this change."""
    if not ctx.rejected_changes or not draft.retire:
        return False
    try:
        return key_of(draft, ctx.view) in ctx.rejected_changes
    except ValidationError:
        return True  # it cannot be built, so it will not happen either


def planner_fingerprint(detectors: Sequence[Detector], settings: DetectorSettings) -> str:
    """Detector versions and settings, readable: equal fingerprints plan alike."""
    return fingerprint_of(((d.name, d.version) for d in detectors), settings)


def earliest_due(view: StoreView, now: dt.datetime, settings: DetectorSettings) -> dt.datetime | None:
    """The first moment after ``now`` at which a TTL or ``expires`` falls due, if any."""
    now = utc(now)
    future = (
        due.at
        for note in view.live_notes()
        if can_retire(view, note) and (due := due_of(note, settings)) is not None and due.at > now
    )
    return min(future, default=None)
