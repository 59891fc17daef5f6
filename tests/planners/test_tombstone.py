"""Tombstoned-value detector."""

from __future__ import annotations

from daemon.core.proposals import SOFT_EXPIRE
from daemon.planners.detectors.tombstone import TombstonedValues

from .factory import context, note, view

TEXT = "The search service runs on port 9200.\n"


def detect(*notes, tombstoned):
    return TombstonedValues().detect(context(view(*notes), tombstoned=tombstoned))


def test_value_coming_back_is_expired_again():
    """A live note with the value of a retired note is proposed for soft-expiry."""
    returned = note("search.md", "---\ntags: [infra]\n---\n  the SEARCH service runs on port 9200.\n")
    (draft,) = detect(returned, tombstoned={returned.value_hash: "old/search.md"})
    assert draft.kind == SOFT_EXPIRE and draft.retire == ("search.md",) and draft.confidence == 0.8
    assert draft.reason == "same content as old/search.md, retired earlier"
    assert draft.source == "detector:tombstoned-value@1"


def test_other_values_are_left_alone():
    """A note whose value was never retired gives nothing."""
    assert detect(note("a.md", TEXT), tombstoned={"0" * 64: "x.md"}) == []


def test_pinned_note_is_left_alone():
    """A pinned note is never expired, even with a tombstoned value."""
    pinned = note("a.md", "---\npinned: true\n---\n" + TEXT)
    assert detect(pinned, tombstoned={pinned.value_hash: "x.md"}) == []
