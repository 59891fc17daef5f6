"""Exact-duplicate detector."""

from __future__ import annotations

import datetime as dt

from daemon.core.proposals import MERGE
from daemon.planners.detectors.exact import ExactDuplicates

from .factory import NOW, context, memory_index, note, view

FACT = "The staging database is reset every Monday at 06:00 UTC.\n"


def detect(*notes, **kw):
    return ExactDuplicates().detect(context(view(*notes, **kw)))


def test_groups_identical_bodies_into_one_merge():
    """Three notes with the same body give one merge retiring two into one survivor."""
    drafts = detect(note("a.md", FACT), note("b.md", FACT), note("c.md", FACT), note("d.md", "Something else.\n"))
    assert len(drafts) == 1
    (draft,) = drafts
    assert draft.kind == MERGE and draft.confidence == 1.0 and draft.survivor_data is None
    assert draft.survivor == "a.md" and draft.retire == ("b.md", "c.md")
    assert draft.title == "Merge 2 exact duplicates into a.md"
    assert draft.source == "detector:exact-duplicate@5"


def test_equality_ignores_case_whitespace_and_frontmatter():
    """Bodies that differ only in case, spacing and frontmatter count as the same."""
    a = note("a.md", "---\ntags: [db]\n---\nThe staging  database is reset\nevery Monday.\n")
    b = note("b.md", "---\nupdated_at: 2026-01-01\n---\n  the STAGING database is reset every monday.  \n")
    assert len(detect(a, b)) == 1


def test_empty_bodies_are_not_duplicates():
    """Notes with nothing in their body are not merged with each other."""
    assert detect(note("a.md", "---\ntags: [x]\n---\n"), note("b.md", "\n\n")) == []


def test_pinned_note_survives():
    """A pinned note is kept even when another copy is newer and listed."""
    index, spec = memory_index("- [b](b.md)")
    pinned = note("z.md", "---\npinned: true\n---\n" + FACT)
    newer = note("b.md", "---\nupdated_at: 2026-05-01\n---\n" + FACT)
    (draft,) = detect(index, pinned, newer, index=spec)
    assert draft.survivor == "z.md" and draft.retire == ("b.md",)
    assert "pinned" in draft.rationale


def test_index_listed_note_survives():
    """Without pins, the note the index lists is kept over a newer unlisted copy."""
    index, spec = memory_index("- [Staging](notes/staging.md)")
    listed = note("notes/staging.md", FACT, mtime=NOW - dt.timedelta(days=30))
    newer = note("a.md", FACT, mtime=NOW)
    (draft,) = detect(index, listed, newer, index=spec)
    assert draft.survivor == "notes/staging.md" and draft.retire == ("a.md",)


def test_newest_then_shortest_path_survives():
    """Among equals the newest updated_at wins, and with equal times the shortest path."""
    old = note("a.md", "---\nupdated_at: 2026-01-01\n---\n" + FACT)
    new = note("long/name.md", "---\nupdated_at: 2026-03-01\n---\n" + FACT)
    assert detect(old, new)[0].survivor == "long/name.md"
    assert detect(note("long/name.md", FACT), note("b.md", FACT))[0].survivor == "b.md"


def test_two_pinned_both_stay():
    """With two pinned copies both stay and only the unpinned copy is retired into the first."""
    p1 = note("p1.md", "---\npinned: true\n---\n" + FACT)
    p2 = note("p2.md", "---\npinned: true\n---\n" + FACT)
    (draft,) = detect(p1, p2, note("x.md", FACT))
    assert draft.survivor == "p1.md" and draft.retire == ("x.md",)


def test_only_pinned_copies_give_nothing():
    """A group made only of pinned notes has nothing that may be retired."""
    p1 = note("p1.md", "---\npinned: true\n---\n" + FACT)
    p2 = note("p2.md", "---\npinned: true\n---\n" + FACT)
    assert detect(p1, p2) == []


def test_protected_note_is_never_retired():
    """A protected core file stays; the ordinary copy is retired into it."""
    (draft,) = detect(note("progress.md", FACT), note("tasks/TASK001-x.md", FACT), protected=("progress.md",))
    assert draft.survivor == "progress.md" and draft.retire == ("tasks/TASK001-x.md",)


def test_only_protected_candidates_give_nothing():
    """When every copy is protected there is nothing to propose."""
    assert detect(note("a.md", FACT), note("b.md", FACT), protected=("*.md",)) == []


def test_retired_notes_are_ignored():
    """A superseded copy is not live, so it is not a duplicate of the live one."""
    assert detect(note("a.md", FACT), note("b.md", "---\nstatus: superseded\n---\n" + FACT)) == []
