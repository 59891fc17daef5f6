"""Drafts to proposals: build the files, validate, diff with git, prove the diff, key it.

A draft that cannot be built or breaks an invariant becomes a ``refused`` proposal with its
reason; nothing is dropped silently. A diff that does not rebuild its result is refused too.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from daemon.core.changes import build, key_of
from daemon.core.errors import DiffError, ValidationError
from daemon.core.patch import verify
from daemon.core.proposals import KINDS, MERGE, PENDING, REFUSED, Change, Draft, change_key
from daemon.core.validate import refusal
from daemon.core.view import StoreView
from daemon.diffs.git import unified_diff
from daemon.stores.records.checks import canonical_draft, result_refusal


@dataclass(frozen=True)
class Planned:
    """A draft made concrete, with the state it would enter (pending or refused)."""

    draft: Draft
    change: Change | None
    diff: str
    key: str
    state: str
    reason: str | None = None

    def slim(self) -> Planned:
        """The same proposal without file bytes (hashes and diff kept), once it is stored."""
        if self.change is None:
            return self
        return replace(self, change=Change(self.change.base, self.change.result, {}, self.change.reads))

    @property
    def paths(self) -> list[str]:
        return sorted(self.change.result) if self.change else sorted(self.draft.notes)


def make_proposal(draft: Draft, view: StoreView, now: dt.datetime) -> Planned:
    fallback_key = change_key(draft.kind, {p: view.notes[p].hash if p in view.notes else None for p in draft.notes}, {})
    draft = canonical_draft(draft, view)
    try:
        change = build(draft, view, now)
    except ValidationError as exc:
        return Planned(draft, None, "", fallback_key, REFUSED, str(exc))
    if change.reads.hooks_shortened and not draft.lossy:  # index words leave what the agent reads
        draft = replace(draft, lossy=True)
    reason = refusal(draft, change, view) or result_refusal(change, view)
    if reason:
        return Planned(draft, change, "", fallback_key, REFUSED, reason)
    try:
        diff = unified_diff(change)
        verify(diff, {p: change.before(p) for p in change.base}, {p: change.after(p) for p in change.result})
        key = key_of(draft, view)
    except (DiffError, ValidationError) as exc:
        return Planned(draft, change, "", fallback_key, REFUSED, f"diff check failed: {exc}")
    return Planned(draft, change, diff, key, PENDING)


def make_proposals(drafts: Iterable[Draft], view: StoreView, now: dt.datetime, batch: int = 50) -> Iterator[Planned]:
    """``make_proposal`` for each draft, in order, a batch at a time on a few threads.

    Most of a proposal's time is spent waiting for git in another process, so threads
    overlap that wait with the next proposal's Python work. Batches keep memory bounded:
    only ``batch`` proposals' bytes are alive at once.
    """
    _ = view.parsed_index, view.index_seen, view.incoming, view.keyed  # parse the index and links once, before threads read them
    workers = min(4, os.cpu_count() or 1)
    drafts = iter(drafts)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dreamd-propose") as pool:
        while chunk := list(itertools.islice(drafts, batch)):
            yield from pool.map(lambda draft: make_proposal(draft, view, now), chunk)


def refused_planned(refusal: Any, view: StoreView) -> Planned:
    """A model proposal refused by the planner's checks, as a refused Planned (no files, no diff)."""
    notes = tuple(p for p in refusal.notes if p in view.notes)
    draft = Draft(
        kind=refusal.kind if refusal.kind in KINDS else MERGE,
        source=refusal.source,
        confidence=0.0,
        title=f"{refusal.kind} of {', '.join(refusal.notes) or 'no notes'} (refused)",
        rationale=refusal.rationale or "",
        retire=notes,
    )
    key = change_key(draft.kind, {p: view.notes[p].hash for p in notes}, {}, tuple(refusal.notes))
    return Planned(draft, None, "", key, REFUSED, refusal.reason)
