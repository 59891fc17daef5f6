"""Empty and stub notes: no body, a title only, or placeholder text, proposed for soft-expiry."""

from __future__ import annotations

import pytest

from daemon.core.proposals import SOFT_EXPIRE
from daemon.planners.detectors.stub import StubNotes, stub_kind

from .factory import context, memory_index, note, view


def detect(*notes, protected: tuple[str, ...] = ()):
    return StubNotes().detect(context(view(*notes, protected=protected)))


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "empty"),
        ("\n\n   \n", "empty"),
        ("---\ntype: project\n---\n", "empty"),
        ("# Deploy notes\n", "title only"),
        ("---\nname: Deploy notes\n---\n\n", "title only"),
        ("# Deploy notes\n\n<!-- fill in later -->\n---\n", "title only"),
        ("# Deploy notes\n\nTODO\n", "placeholder only"),
        ("## Ideas\n- **TBD**\n", "placeholder only"),
        ("# Deploy notes\nAdd content here.\n", "placeholder only"),
        ("# Deploy\nRun make deploy from main.\n", None),
        ("TODO: rotate the staging keys before June.\n", None),
        ("---\nname: Ports\ndescription: the API listens on 8080\n---\n", None),
        ("---\nname: Ports\nport: 8080\n---\n", None),
    ],
)
def test_what_counts_as_saying_nothing(text, kind):
    """Headings, comments, rules and placeholders say nothing; any other line or frontmatter value does."""
    assert stub_kind(note("n.md", text)) == kind


def test_title_only_note_is_proposed_for_soft_expiry():
    """A note holding only its heading gets one soft-expire draft quoting that heading."""
    (draft,) = detect(note("deploy.md", "# Deploy notes\n"), note("ports.md", "The API listens on 8080.\n"))
    assert (draft.kind, draft.retire, draft.reason) == (SOFT_EXPIRE, ("deploy.md",), "title only note")
    assert (draft.source, draft.confidence, draft.title) == ("detector:stub-note@1", 0.8, "Expire deploy.md: title only")
    assert [(e.path, e.start, e.quote) for e in draft.evidence] == [("deploy.md", 1, "# Deploy notes")]


def test_frontmatter_only_note_quotes_its_name():
    """A note with only frontmatter is quoted by its first frontmatter line."""
    (draft,) = detect(note("deploy.md", "---\nname: Deploy notes\n---\n"))
    assert [(e.start, e.quote) for e in draft.evidence] == [(2, "name: Deploy notes")]


def test_pinned_protected_and_index_notes_are_never_proposed():
    """A pinned stub, a protected stub (a file the agent's convention needs) and the index are left alone."""
    index, spec = memory_index()
    store = view(note("pinned.md", "---\npinned: true\n---\n"), note("activeContext.md", "# Active context\n"), index, index=spec, protected=("activeContext.md",))
    assert StubNotes().detect(context(store)) == []


def test_retired_stub_is_not_proposed_again():
    """A stub already marked expired is not live, so nothing is proposed for it."""
    assert detect(note("old.md", "---\nstatus: expired\n---\n")) == []
