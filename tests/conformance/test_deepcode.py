"""DeepCode conformance: after every apply and revert, DeepCode's memory tool reads the folder right.

DeepCode lists every regular file directly in ``.deepcode/memory`` (any extension, dot-files
too, never a subfolder) and injects the first 8,000 characters of MEMORY.md into the prompt
(oracles.DeepCode has the sources); dreamd's links in MEMORY.md are ``[x](a.md)``. The
fixture's MEMORY.md is about 7,900 characters, with two live notes not listed yet, a text
file and a dot-file beside the notes, and a subfolder DeepCode never lists.
"""

from __future__ import annotations

import pytest

from daemon.service.workspace import observe

from .fixtures import deepcode
from .harness import assert_clean_end, assert_right

KINDS = ["merge", "supersede", "soft-expire", "reindex", "relink", "relocate"]


def test_dreamd_plans_over_exactly_the_markdown_files_deepcode_lists(session_of):
    """dreamd plans over the top-level .md files DeepCode lists, never drafts/plan.md (a copy of build.md in a subfolder DeepCode cannot see)."""
    s = session_of("deepcode")
    assert set(observe(s.store).view.notes) == {p for p in s.oracle.visible_notes(s.root) if p.endswith(".md")}


@pytest.mark.parametrize("kind", KINDS)
def test_each_proposal_applied_then_reverted_keeps_what_deepcode_reads(session_of, kind: str):
    """Each proposal of the kind, applied then reverted alone, leaves no retired note among the top-level files, every MEMORY.md link landing on a live note within 8,000 characters, nothing outside the roots changed, and the bytes restored."""
    s = session_of("deepcode")
    steps = s.isolate(kind)
    assert steps, f"the fixture yields no {kind} proposal"
    assert_right(steps)


def test_applying_everything_leaves_deepcode_listing_only_live_notes(session_of):
    """Accepting every proposal pass after pass keeps each apply right for DeepCode, and ends with no retired file listed and MEMORY.md injected whole."""
    s = session_of("deepcode")
    assert_right(s.everything())
    assert_clean_end(s)


def test_new_entries_keep_memory_md_within_8000_characters(session_of):
    """Listing the two unlisted notes in a 7,890-character MEMORY.md keeps it within the 8,000 characters DeepCode injects, both entries inside."""
    s = session_of("deepcode")
    assert 7_800 < len(deepcode().notes["MEMORY.md"]) < 8_000
    (reindex,) = [p for p in s.pending_after_pass() if p.kind == "reindex"]
    s.take(reindex, then_revert=False)
    assert len((s.root / "MEMORY.md").read_text(encoding="utf-8")) <= 8_000
    assert {"queue.md", "logging.md"} <= s.reading().loaded.seen


def test_dreamd_adds_no_file_deepcode_would_list_and_leaves_its_other_files_alone(session_of):
    """After everything, the top level holds only files that were there (less the retired ones) plus the archive folder, and scratch.txt and .last-session are byte for byte."""
    s = session_of("deepcode")
    before = {p.name for p in s.root.iterdir() if p.is_file()}
    s.everything()
    files = {p.name for p in s.root.iterdir() if p.is_file()}
    assert files <= before
    assert {p.name for p in s.root.iterdir() if p.is_dir()} == {".dreamd-archive", "drafts"}
    notes = deepcode().notes
    assert (s.root / "scratch.txt").read_text() == notes["scratch.txt"] and (s.root / ".last-session").read_text() == notes[".last-session"]
    assert (s.root / "drafts/plan.md").read_text() == notes["drafts/plan.md"]
