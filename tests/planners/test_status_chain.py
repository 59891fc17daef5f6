"""Status chains: numbered or dated progress notes of one series, superseded by the newest."""

from __future__ import annotations

import dataclasses

import pytest

from daemon.core.notes import Note
from daemon.core.proposals import SUPERSEDE
from daemon.planners.detectors.status_chain import StatusChains, series_of

from .factory import context, note, view


def checkpoint(path: str, body: str, updated: str | None = None) -> Note:
    head = f"---\nupdated_at: {updated}\n---\n" if updated else ""
    return note(path, head + body)


def detect(*notes, retiring: frozenset[str] = frozenset()):
    return StatusChains().detect(dataclasses.replace(context(view(*notes)), retiring=retiring))


def test_weekly_checkpoints_are_superseded_by_the_highest_week():
    """Weeks 7, 8 and 10 of one checkpoint series: 7 and 8 are superseded by 10, in order of their numbers."""
    (draft,) = detect(
        checkpoint("checkpoint_week10_complete.md", "Week 10 complete: SSO live.\n"),
        checkpoint("checkpoint_week7_complete.md", "Week 7 complete: login page.\n"),
        checkpoint("checkpoint_week8_complete.md", "Week 8 complete: settings page.\n"),
    )
    assert (draft.kind, draft.survivor, draft.retire) == (SUPERSEDE, "checkpoint_week10_complete.md", ("checkpoint_week7_complete.md", "checkpoint_week8_complete.md"))
    assert draft.source == "detector:status-chain@1" and draft.confidence == 0.6
    assert draft.title == "Supersede 2 older notes of the status series checkpoint_week# with checkpoint_week10_complete.md"


def test_rationale_names_the_series_and_evidence_quotes_each_note():
    """The rationale names the series in order; the evidence is the first line of every note of it."""
    (draft,) = detect(checkpoint("status-0312.md", "r41: 118 tests.\n"), checkpoint("status-0319.md", "r47: 126 tests.\n"))
    assert draft.rationale.startswith("status-0312.md < status-0319.md are one series of progress notes (status#), in the order of their numbers.")
    assert [(e.path, e.start, e.quote) for e in draft.evidence] == [("status-0312.md", 1, "r41: 118 tests."), ("status-0319.md", 1, "r47: 126 tests.")]


def test_same_number_is_decided_by_the_frontmatter_date():
    """'week10 next' and 'week10 done' share a number: the later updated_at is the newest."""
    (draft,) = detect(
        checkpoint("project_week10_next.md", "Week 10 (next): SSO.\n", "2026-03-09"),
        checkpoint("project_week10_done.md", "Week 10 complete.\n", "2026-03-16"),
    )
    assert (draft.survivor, draft.retire) == ("project_week10_done.md", ("project_week10_next.md",))


def test_a_tie_nobody_can_break_gives_nothing():
    """Two notes with the same number and no dates: which is newest cannot be told, so nothing is proposed."""
    assert detect(checkpoint("week3_plan.md", "Plan.\n"), checkpoint("week3_done.md", "Done.\n")) == []


def test_an_older_note_dated_after_the_newest_stops_the_chain():
    """When numbers and dates disagree about the newest, nothing is proposed."""
    notes = (checkpoint("phase1_complete.md", "Phase 1 done.\n", "2026-04-01"), checkpoint("phase2_complete.md", "Phase 2 done.\n", "2026-03-01"))
    assert detect(*notes) == []


def test_topic_notes_of_a_period_are_not_status_notes():
    """phase1_architecture and phase2_architecture describe designs, not progress: no proposal ever retires one."""
    assert detect(checkpoint("phase1_architecture.md", "Monolith.\n"), checkpoint("phase2_architecture.md", "Services.\n")) == []


def test_series_in_other_folders_are_apart():
    """status-1 in one folder and status-2 in another are two series of one note each."""
    assert detect(checkpoint("a/status-1.md", "A.\n"), checkpoint("b/status-2.md", "B.\n")) == []


def test_pinned_older_note_is_left_out():
    """A pinned older checkpoint is never retired; the others still are."""
    (draft,) = detect(
        note("sprint1_done.md", "---\npinned: true\n---\nSprint 1.\n"),
        checkpoint("sprint2_done.md", "Sprint 2.\n"),
        checkpoint("sprint3_done.md", "Sprint 3.\n"),
    )
    assert draft.retire == ("sprint2_done.md",)


def test_newest_retired_by_an_earlier_detector_gives_nothing():
    """When this pass already retires the newest note, the chain waits for the next pass."""
    assert detect(checkpoint("status-1.md", "A.\n"), checkpoint("status-2.md", "B.\n"), retiring=frozenset({"status-2.md"})) == []


@pytest.mark.parametrize(
    ("path", "series"),
    [
        ("checkpoint_week7_complete.md", ("", ("checkpoint", "week", "#"), (7,))),
        ("notes/progress-2026-03-02.md", ("notes", ("progress", "#", "#", "#"), (2026, 3, 2))),
        ("week8.md", ("", ("week", "#"), (8,))),
        ("phase2_in_progress.md", ("", ("phase", "#", "progress"), (2,))),
        ("sprintReview3.md", ("", ("sprint", "#"), (3,))),
        ("current_status.md", None),
        ("phase2_architecture.md", None),
        ("release-2.md", None),
    ],
)
def test_which_names_are_status_notes(path, series):
    """A status note's name has a number and a status word, or a period word with only outcome words beside it."""
    assert series_of(path) == series
