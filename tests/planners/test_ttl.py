"""TTL expiry detector."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.core.proposals import SOFT_EXPIRE
from daemon.planners.base import DetectorSettings
from daemon.planners.detectors.ttl import TtlExpiry

from .factory import NOW, context, note, view


def detect(*notes, settings=None):
    return TtlExpiry().detect(context(view(*notes), settings=settings))


def test_due_via_updated_at():
    """ttl_days counted from updated_at that has run out gives a soft-expire at 0.95."""
    (draft,) = detect(note("status.md", "---\nupdated_at: 2026-04-01\nttl_days: 30\n---\nDeploy is frozen.\n"))
    assert draft.kind == SOFT_EXPIRE and draft.retire == ("status.md",) and draft.confidence == 0.95
    assert draft.reason == "ttl_days 30 elapsed on 2026-05-01"
    assert {e.quote for e in draft.evidence} == {"ttl_days: 30", "updated_at: 2026-04-01"}


def test_due_via_created_at_when_no_updated_at():
    """Without updated_at the TTL counts from created_at."""
    (draft,) = detect(note("s.md", "---\ncreated_at: 2026-05-01\nttl_days: 10\n---\nx\n"))
    assert draft.reason == "ttl_days 10 elapsed on 2026-05-11" and draft.confidence == 0.95


def test_due_via_mtime_says_so():
    """Without dates the file's mtime is used, with lower confidence and said in the rationale."""
    (draft,) = detect(note("s.md", "---\nttl_days: 7\n---\nx\n", mtime=NOW - dt.timedelta(days=8)))
    assert draft.confidence == 0.7
    assert "no updated_at; used the file's modification time" in draft.rationale


def test_mtime_fallback_can_be_turned_off():
    """With use_mtime_for_ttl off, a note with only an mtime never expires by TTL."""
    old = note("s.md", "---\nttl_days: 7\n---\nx\n", mtime=NOW - dt.timedelta(days=80))
    assert detect(old, settings=DetectorSettings(use_mtime_for_ttl=False)) == []


def test_due_via_expires():
    """An expires date in the past gives a soft-expire naming it."""
    (draft,) = detect(note("s.md", "---\nexpires: 2026-01-01\n---\nx\n"))
    assert draft.reason == "expires 2026-01-01 has passed"
    assert [e.quote for e in draft.evidence] == ["expires: 2026-01-01"]


def test_due_via_valid_to():
    """A note whose declared valid time ended is expired, naming valid_to as the reason."""
    (draft,) = detect(note("v.md", "---\nvalid_to: 2026-05-15\n---\nThe freeze holds.\n"))
    assert draft.reason == "valid_to 2026-05-15 has passed"
    assert "valid until 2026-05-15" in draft.rationale
    assert [e.quote for e in draft.evidence] == ["valid_to: 2026-05-15"]


def test_valid_to_in_the_future_is_not_due():
    """A valid_to still ahead proposes nothing yet."""
    assert detect(note("v.md", "---\nvalid_to: 2099-01-01\n---\nx\n")) == []


def test_not_yet_due():
    """A TTL or expires still in the future gives nothing."""
    assert (
        detect(
            note("a.md", "---\nupdated_at: 2026-05-20\nttl_days: 30\n---\nx\n"),
            note("b.md", "---\nexpires: 2026-07-01\n---\nx\n"),
        )
        == []
    )


@pytest.mark.parametrize(
    "frontmatter",
    [
        "ttl_days: soon\nupdated_at: 2020-01-01",
        "ttl_days: -3\nupdated_at: 2020-01-01",
        "ttl_days: true\nupdated_at: 2020-01-01",
        "ttl_days: .inf\nupdated_at: 2020-01-01",
        "ttl_days: 1e12\nupdated_at: 2020-01-01",
        "ttl_days: 3\nupdated_at: last tuesday",
        "expires: whenever",
        "expires: [2020-01-01]",
    ],
)
def test_malformed_values_are_ignored(frontmatter):
    """Unreadable ttl_days, dates or expires give no proposal and no error."""
    assert detect(note("s.md", f"---\n{frontmatter}\n---\nx\n", mtime=NOW - dt.timedelta(days=999))) == []


def test_pinned_notes_never_expire():
    """A pinned note past its TTL is left alone."""
    assert detect(note("s.md", "---\npinned: true\nexpires: 2020-01-01\n---\nx\n")) == []
