"""Citation drift, given the workspace facts: which citations are found, and which have drifted."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from daemon.core.proposals import SOFT_EXPIRE
from daemon.planners.citations import CitedFile, Commit, citations
from daemon.planners.detectors.citation_drift import CitationDrift

from .factory import context, note, view

NOTE = "---\nupdated_at: 2026-03-02\n---\nThe retry loop is in `src/net/retry.py:88-95`.\nSee also docs/retry.md for the backoff.\n"
BEFORE = Commit("a" * 40, dt.datetime(2026, 2, 20, tzinfo=dt.timezone.utc), "add retry loop")
AFTER = Commit("b" * 40, dt.datetime(2026, 3, 10, tzinfo=dt.timezone.utc), "rewrite retry with jitter")


def detect(*notes, facts: dict[str, CitedFile]):
    return CitationDrift().detect(dataclasses.replace(context(view(*notes)), citations=facts))


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("The loop is in `src/net/retry.py:88`.", [("src/net/retry.py", "src/net/retry.py:88")]),
        ("Lines retry.py:88-95 hold it.", [("retry.py", "retry.py:88-95")]),
        ("[the config](./config/app.toml) and src/a.py", [("config/app.toml", "./config/app.toml"), ("src/a.py", "src/a.py")]),
        ("A bare name like retry.py is not a citation.", []),
        ("See https://example.org/src/a.py and www.example.org/x/y.py", []),
        ("Absolute /etc/app/conf.toml and ../up/there.py and ~/home/x.py", []),
        ("Version 1.2.3 of e.g. node.js", []),
    ],
)
def test_what_is_a_citation(line, found):
    """Paths with a folder, or any file name with a line number, are citations; URLs, absolute and climbing paths are not."""
    assert [(c.path, c.written) for c in citations(note("n.md", line + "\n"))] == found


def test_the_store_own_notes_are_references_not_citations():
    """A path naming one of the store's notes is left to the reference checks."""
    assert list(citations(note("n.md", "See topics/db.md.\n"), {"topics/db.md"})) == []


def test_a_file_changed_after_the_note_gives_a_soft_expire_quoting_citation_and_commit():
    """A cited file committed after the note's updated_at: one soft-expire, the citation line as evidence, the commit in the rationale."""
    (draft,) = detect(note("retry.md", NOTE), facts={"src/net/retry.py": CitedFile("src/net/retry.py", True, AFTER), "docs/retry.md": CitedFile("docs/retry.md", True, BEFORE)})
    assert (draft.kind, draft.retire, draft.source, draft.confidence) == (SOFT_EXPIRE, ("retry.md",), "detector:citation-drift@1", 0.5)
    assert draft.reason == "cites src/net/retry.py, changed since the note"
    assert [(e.start, e.quote) for e in draft.evidence] == [(4, "The retry loop is in `src/net/retry.py:88-95`.")]
    assert 'src/net/retry.py changed in commit bbbbbbbbbbbb, 2026-03-10, "rewrite retry with jitter"' in draft.rationale
    assert "after its updated_at 2026-03-02" in draft.rationale


def test_a_deleted_file_is_told_as_gone():
    """A cited file git knows but the work tree no longer has is reported gone, with the last commit that touched it."""
    (draft,) = detect(note("retry.md", NOTE), facts={"src/net/retry.py": CitedFile("src/net/retry.py", False, AFTER)})
    assert draft.reason == "cites src/net/retry.py, gone from the workspace"
    assert 'src/net/retry.py no longer exists (last in commit bbbbbbbbbbbb, 2026-03-10, "rewrite retry with jitter")' in draft.rationale


def test_files_unchanged_since_the_note_give_nothing():
    """Citations whose newest commit precedes the note's date hold: no proposal."""
    assert detect(note("retry.md", NOTE), facts={"src/net/retry.py": CitedFile("src/net/retry.py", True, BEFORE)}) == []


def test_a_file_git_never_tracked_is_left_alone():
    """A missing file with no history may be a path relative to elsewhere: never proposed."""
    assert detect(note("retry.md", NOTE), facts={"src/net/retry.py": CitedFile("src/net/retry.py", False, None)}) == []


def test_a_file_removed_before_the_note_was_written_is_left_alone():
    """A note written after its cited file was deleted may be saying so: no proposal."""
    assert detect(note("retry.md", NOTE), facts={"src/net/retry.py": CitedFile("src/net/retry.py", False, BEFORE)}) == []


def test_an_undated_note_is_checked_for_gone_files_only():
    """Without a frontmatter date a change cannot be dated against the note, but a deleted file still drifts."""
    undated = NOTE.split("---\n", 2)[2]
    changed = {"src/net/retry.py": CitedFile("src/net/retry.py", True, AFTER)}
    assert detect(note("retry.md", undated), facts=changed) == []
    (draft,) = detect(note("retry.md", undated), facts={"src/net/retry.py": CitedFile("src/net/retry.py", False, AFTER)})
    assert "after it was written (it has no date)" in draft.rationale


def test_pinned_note_is_never_proposed():
    """A pinned note citing a drifted file is left alone."""
    pinned = NOTE.replace("updated_at", "pinned: true\nupdated_at")
    assert detect(note("retry.md", pinned), facts={"src/net/retry.py": CitedFile("src/net/retry.py", False, AFTER)}) == []


def test_no_workspace_facts_no_proposal():
    """A store without a workspace gives the detector nothing to check."""
    assert detect(note("retry.md", NOTE), facts={}) == []
