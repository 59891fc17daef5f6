"""The planner as a whole: order, determinism, evidence, fingerprint, schedule."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from daemon.core.changes import build
from daemon.core.validate import refusal
from daemon.planners.base import (
    DEFAULT_DETECTORS,
    DetectorSettings,
    PlanContext,
    earliest_due,
    planner_fingerprint,
    run_detectors,
    source_of,
)
from daemon.planners.detectors.exact import ExactDuplicates

from .factory import BUILD_NOTES, NOW, context, memory_index, note, view


def mixed_store():
    """One store where every detector has something to say."""
    index, spec = memory_index("- [Build](build.md)", "- [Gone](gone.md)", "- [Old](old.md)")
    notes = [
        index,
        note("build.md", "---\nname: Build\nupdated_at: 2026-05-01\n---\n" + BUILD_NOTES),
        note("build-copy.md", BUILD_NOTES.replace("\n", "  \n")),
        note("build-more.md", BUILD_NOTES + "Wheels for arm are built on the spare runner.\n"),
        note("status.md", "---\nupdated_at: 2026-04-01\nttl_days: 14\n---\nRelease 2.3 is frozen.\n"),
        note("later.md", "---\nttl_days: 30\n---\nThe office moves in autumn.\n", mtime=NOW - dt.timedelta(days=3)),
        note("new.md", "---\nsupersedes:\n  - old.md\n---\nLogin uses SSO now.\n"),
        note("old.md", "Login uses passwords.\n"),
        note("back.md", "Port 8080 is free for testing.\n"),
        note("pinned.md", "---\npinned: true\nexpires: 2026-09-01\n---\nNever delete the audit log.\n"),
    ]
    tombstoned = {notes[8].value_hash: "archive/port.md"}
    return view(*notes, index=spec), tombstoned


def test_every_detector_contributes_in_order():
    """Drafts come grouped by detector, in the DEFAULT_DETECTORS order; the mixed store gives every detector of notes and index something."""
    store, tombstoned = mixed_store()
    drafts = run_detectors(context(store, tombstoned=tombstoned))
    sources = list(dict.fromkeys(d.source for d in drafts))
    assert sources == [source_of(d) for d in DEFAULT_DETECTORS if source_of(d) in sources]
    assert set(sources) >= {source_of(d) for d in DEFAULT_DETECTORS[:4]} | {"detector:index-drift@4", "detector:tombstoned-value@1"}


def test_deterministic():
    """Running twice on equal input gives equal drafts in equal order."""
    store, tombstoned = mixed_store()
    again = dataclasses.replace(store, notes=dict(reversed(list(store.notes.items()))))
    assert run_detectors(context(store, tombstoned=tombstoned)) == run_detectors(context(again, tombstoned=tombstoned))


def test_evidence_quotes_are_verbatim():
    """Every evidence quote is a non-empty substring of its note, at the lines it cites."""
    store, tombstoned = mixed_store()
    drafts = run_detectors(context(store, tombstoned=tombstoned))
    assert all(d.evidence for d in drafts)
    for draft in drafts:
        for ev in draft.evidence:
            text = store.notes[ev.path].data.decode()
            cited = "\n".join(text.split("\n")[ev.start - 1 : ev.end])
            assert ev.quote and ev.quote in text and ev.quote in cited


def test_every_draft_builds_and_validates():
    """Each draft turns into files and passes validation on its own."""
    store, tombstoned = mixed_store()
    for draft in run_detectors(context(store, tombstoned=tombstoned)):
        assert refusal(draft, build(draft, store, NOW), store) is None, draft.title


def test_wrong_source_is_rejected():
    """A detector whose drafts carry another source is a programming error."""

    class Liar(ExactDuplicates):
        version = 9

        def detect(self, ctx):
            return [dataclasses.replace(d, source="detector:exact-duplicate@1") for d in super().detect(ctx)]

    store = view(note("a.md", "same\n"), note("b.md", "same\n"))
    with pytest.raises(ValueError):
        run_detectors(context(store), [Liar()])


def test_naive_now_is_refused():
    """PlanContext needs an aware time, so no detector guesses a timezone."""
    with pytest.raises(ValueError):
        PlanContext(view(), dt.datetime(2026, 1, 1))


def test_fingerprint_changes_with_version_and_settings():
    """Bumping a detector version or changing a setting changes the fingerprint."""

    class ExactNext(ExactDuplicates):
        version = ExactDuplicates.version + 1

    settings = DetectorSettings()
    base = planner_fingerprint(DEFAULT_DETECTORS, settings)
    assert base.startswith("exact-duplicate@5,near-duplicate@6,ttl@2,")
    assert planner_fingerprint((ExactNext(), *DEFAULT_DETECTORS[1:]), settings) != base
    assert planner_fingerprint(DEFAULT_DETECTORS, DetectorSettings(near_threshold=0.9)) != base
    assert planner_fingerprint(DEFAULT_DETECTORS, DetectorSettings()) == base


def test_earliest_due_is_the_next_future_deadline():
    """earliest_due skips past deadlines and pinned notes and returns the nearest future one."""
    store, _ = mixed_store()
    # later.md: mtime 3 days ago + 30 days; pinned.md's expires is ignored; status.md is already due
    assert earliest_due(store, NOW, DetectorSettings()) == (NOW - dt.timedelta(days=3) + dt.timedelta(days=30))
    assert earliest_due(store, NOW, DetectorSettings(use_mtime_for_ttl=False)) is None
