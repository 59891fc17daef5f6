"""Declared-supersession detector."""

from __future__ import annotations

from daemon.core.proposals import SUPERSEDE
from daemon.planners.detectors.declared import DeclaredSupersession

from .factory import context, note, view

OLD = "Use the v1 upload endpoint.\n"
NEW = "Use the v2 upload endpoint; v1 is gone.\n"


def detect(*notes):
    return DeclaredSupersession().detect(context(view(*notes)))


def test_supersedes_on_the_new_note():
    """A live note declaring supersedes of a live note gives a supersede draft."""
    (draft,) = detect(note("api/new.md", f"---\nsupersedes: api/old.md\n---\n{NEW}"), note("api/old.md", OLD))
    assert draft.kind == SUPERSEDE and draft.survivor == "api/new.md" and draft.retire == ("api/old.md",)
    assert draft.confidence == 0.95 and draft.source == "detector:declared-supersession@1"
    assert [(e.path, e.start, e.quote) for e in draft.evidence] == [("api/new.md", 2, "supersedes: api/old.md")]


def test_superseded_by_on_the_old_note():
    """An active note naming its replacement in superseded_by gives the same draft."""
    (draft,) = detect(note("new.md", NEW), note("old.md", f"---\nsuperseded_by: new.md\n---\n{OLD}"))
    assert draft.survivor == "new.md" and draft.retire == ("old.md",)
    assert draft.evidence[0].quote == "superseded_by: new.md"


def test_both_sides_declaring_give_one_draft():
    """When both notes declare the link there is one draft citing both lines."""
    (draft,) = detect(
        note("new.md", f"---\nsupersedes: old.md\n---\n{NEW}"),
        note("old.md", f"---\nsuperseded_by: new.md\n---\n{OLD}"),
    )
    assert {e.path for e in draft.evidence} == {"new.md", "old.md"}


def test_relative_and_bare_names_resolve():
    """Names relative to the declaring folder, and unique bare file names, are understood."""
    drafts = detect(
        note("api/new.md", f"---\nsupersedes: [old.md, legacy.md]\n---\n{NEW}"),
        note("api/old.md", OLD),
        note("archive/2024/legacy.md", OLD),
    )
    assert [(d.survivor, d.retire) for d in drafts] == [("api/new.md", ("api/old.md", "archive/2024/legacy.md"))]


def test_ambiguous_bare_name_is_ignored():
    """A bare file name shared by two notes names neither."""
    assert detect(note("new.md", f"---\nsupersedes: x.md\n---\n{NEW}"), note("a/x.md", OLD), note("b/x.md", OLD)) == []


def test_dangling_names_give_nothing():
    """Names that match no note give no proposal and no error."""
    assert (
        detect(
            note("new.md", f"---\nsupersedes: [gone.md, ../outside.md, /etc/passwd]\n---\n{NEW}"),
            note("old.md", f"---\nsuperseded_by: missing.md\n---\n{OLD}"),
        )
        == []
    )


def test_already_retired_target_gives_nothing():
    """A note that is already superseded is not superseded again."""
    assert (
        detect(
            note("new.md", f"---\nsupersedes: old.md\n---\n{NEW}"),
            note("old.md", f"---\nstatus: superseded\n---\n{OLD}"),
        )
        == []
    )


def test_chain_goes_tail_first_without_overlap():
    """In a chain a > b > c only c is retired now, so no two drafts share a note."""
    drafts = detect(
        note("a.md", "---\nsupersedes: b.md\n---\nthird\n"),
        note("b.md", "---\nsupersedes: c.md\n---\nsecond\n"),
        note("c.md", "first\n"),
    )
    assert [(d.survivor, d.retire) for d in drafts] == [("b.md", ("c.md",))]


def test_two_claimants_newest_wins():
    """When two notes supersede the same note, the newest claimant gets it."""
    drafts = detect(
        note("x.md", "---\nupdated_at: 2026-01-01\nsupersedes: old.md\n---\nx\n"),
        note("y.md", "---\nupdated_at: 2026-03-01\nsupersedes: old.md\n---\ny\n"),
        note("old.md", OLD),
    )
    assert [(d.survivor, d.retire) for d in drafts] == [("y.md", ("old.md",))]
