"""Drafts to proposals: build the files, validate, diff with git (a batch per process), prove the diff, key it.

A draft that cannot be built or breaks an invariant becomes a ``refused`` proposal with its
reason; nothing is dropped silently. A diff that does not rebuild its result is refused too.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from daemon.core.changes import build, key_of
from daemon.core.errors import DiffError, ValidationError
from daemon.core.patch import verify
from daemon.core.proposals import KINDS, MERGE, PENDING, REFUSED, Change, Draft, change_key
from daemon.core.validate import refusal
from daemon.core.view import StoreView
from daemon.diffs.git import Layout, lay_out, unified_diff
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
    prepared = _prepare(draft, view, now)
    return prepared if isinstance(prepared, Planned) else _diffed_alone(prepared, view)


@dataclass(frozen=True)
class _Built:
    """A draft whose files are built and checked, waiting for its diff."""

    draft: Draft
    change: Change
    fallback_key: str


def _prepare(draft: Draft, view: StoreView, now: dt.datetime) -> Planned | _Built:
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
    return _Built(draft, change, fallback_key)


def _finish(built: _Built, diff: str, view: StoreView) -> Planned:
    """The proposal, once its diff is proven to rebuild every file it writes."""
    change = built.change
    try:
        verify(diff, {p: change.before(p) for p in change.base}, {p: change.after(p) for p in change.result})
        key = key_of(built.draft, view)
    except (DiffError, ValidationError) as exc:
        return _refused(built, exc)
    return Planned(built.draft, change, diff, key, PENDING)


def _diffed_alone(built: _Built, view: StoreView) -> Planned:
    """The proposal, its diff from a git process of its own."""
    try:
        diff = unified_diff(built.change)
    except DiffError as exc:
        return _refused(built, exc)
    return _finish(built, diff, view)


def _refused(built: _Built, exc: Exception) -> Planned:
    return Planned(built.draft, built.change, "", built.fallback_key, REFUSED, f"diff check failed: {exc}")


def make_proposals(drafts: Iterable[Draft], view: StoreView, now: dt.datetime, batch: int = 25) -> Iterator[Planned]:
    """``make_proposal`` for each draft, in order, a batch at a time, each as a sink stores it
    (``Planned.slim``: hashes and diff, no file bytes): the diffs of a batch come from one git
    process (diffs/git.py unified_diffs), not one each, made on a thread while the next batch
    is built (git works while Python builds); a batch git refuses is diffed again proposal by
    proposal, so one bad change refuses only itself. Batches keep memory bounded: only two
    batches' bytes are alive at once, and a proposal's go as soon as it is finished (on a
    store whose index is 1 MB, every proposal's result holds a new 1 MB index).
    """
    drafts = iter(drafts)
    waiting: tuple[list[Planned | _Built], Future[dict[int, str]]] | None = None
    laid: list[Layout] = []  # the batches' files, removed here once git has read them
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dreamd-diff") as git:
            while chunk := list(itertools.islice(drafts, batch)):
                prepared = [_prepare(draft, view, now) for draft in chunk]
                built = [p for p in prepared if isinstance(p, _Built)]
                laid.append(lay_out([b.change for b in built]))  # written here, not on git's thread (see Layout)
                diffs = git.submit(_diffs, built, laid[-1])
                if waiting is not None:
                    yield from _finished(*waiting, view, laid[0])
                    laid.pop(0)
                waiting = prepared, diffs
            if waiting is not None:
                yield from _finished(*waiting, view, laid[0])
                laid.pop(0)
    finally:
        for layout in laid:
            layout.close()


def _diffs(built: list[_Built], laid: Layout) -> dict[int, str]:
    """The batch's diffs by item id; empty when git refused the batch as a whole."""
    try:
        return dict(zip(map(id, built), laid.diffs(), strict=True))
    except DiffError:
        return {}


def _finished(prepared: list[Planned | _Built], diffs: Future[dict[int, str]], view: StoreView, laid: Layout) -> Iterator[Planned]:
    """The batch's proposals in order, slim; each one's bytes are let go (taken out of
    ``prepared``) once it is finished, not when the whole batch is. Its files go once git
    has read them."""
    try:
        made = diffs.result()
    finally:
        laid.close()
    prepared.reverse()
    while prepared:
        item = prepared.pop()
        if isinstance(item, Planned):
            yield item.slim()
        elif id(item) in made:
            yield _finish(item, made.pop(id(item)), view).slim()
        else:
            yield _diffed_alone(item, view).slim()


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
