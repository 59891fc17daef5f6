"""Votes, not copies: a merge's survivor records in ``merged_from`` which notes said the same thing."""

from __future__ import annotations

import dataclasses

from daemon.planners.detectors.exact import ExactDuplicates
from daemon.planners.detectors.near import NearDuplicates
from daemon.stores.readers import CLAUDE_CODE, CLINE, DEEPCODE, SERENA

from .factory import BUILD_NOTES, context, note, view

FACT = "The staging database is reset every Monday.\n"


def exact(*notes, reader=None):
    store = view(*notes)
    return ExactDuplicates().detect(context(dataclasses.replace(store, reader=reader) if reader else store))


def test_exact_duplicates_are_counted_on_the_survivor():
    """The survivor keeps its text and lists the copies folded into it; nothing else of it changes."""
    (draft,) = exact(note("a.md", f"---\nname: Staging\n---\n{FACT}"), note("b.md", FACT), note("c.md", FACT))
    assert draft.survivor == "a.md"
    assert draft.survivor_data == f"---\nname: Staging\nmerged_from: [b.md, c.md]\n---\n{FACT}".encode()
    assert "a.md keeps its text and lists them in merged_from because" in draft.rationale


def test_votes_accumulate_over_merges():
    """Earlier merges of the survivor and of the retired notes are kept: repeated learning adds up."""
    survivor = note("a.md", f"---\nmerged_from: [x.md]\n---\n{FACT}")
    retired = note("b.md", f"---\nmerged_from: [y.md, x.md]\n---\n{FACT}")
    (draft,) = exact(survivor, retired)
    assert draft.survivor_data == f"---\nmerged_from: [x.md, y.md, b.md]\n---\n{FACT}".encode()


def test_a_survivor_without_frontmatter_gets_no_block_it_never_had():
    """With no frontmatter block on the survivor, the exact merge leaves it byte for byte."""
    (draft,) = exact(note("a.md", FACT), note("b.md", FACT))
    assert draft.survivor_data is None and "a.md stays unchanged because" in draft.rationale


def test_a_pinned_survivor_gets_no_votes():
    """A pinned survivor stays byte for byte."""
    (draft,) = exact(note("a.md", f"---\npinned: true\n---\n{FACT}"), note("b.md", FACT))
    assert draft.survivor == "a.md" and draft.survivor_data is None


def test_agents_that_show_frontmatter_as_text_get_no_votes():
    """DeepCode, Serena and Cline read notes raw, with no frontmatter of their own: no key is added there."""
    survivor = note("a.md", f"---\nname: Staging\n---\n{FACT}")
    for reader in (DEEPCODE, SERENA, CLINE):
        (draft,) = exact(survivor, note("b.md", FACT), reader=reader)
        assert draft.survivor_data is None, reader.agent


def test_claude_code_notes_get_votes_in_their_frontmatter():
    """Claude Code notes carry frontmatter its client reads: the survivor records its merges there."""
    (draft,) = exact(note("a.md", f"---\nname: Staging\ntype: project\n---\n{FACT}"), note("b.md", FACT), reader=CLAUDE_CODE)
    assert draft.survivor_data == f"---\nname: Staging\ntype: project\nmerged_from: [b.md]\n---\n{FACT}".encode()


def test_near_duplicate_merge_votes_and_keeps_every_line():
    """A near-duplicate merge records the votes and still appends the lines the others add."""
    (draft,) = NearDuplicates().detect(context(view(note("a.md", "---\nname: Build\n---\n" + BUILD_NOTES), note("b.md", BUILD_NOTES + "Windows wheels are built by hand.\n"))))
    assert draft.survivor == "a.md"
    merged = draft.survivor_data.decode()
    assert merged.startswith("---\nname: Build\nmerged_from: [b.md]\n---\n" + BUILD_NOTES)
    assert merged.endswith("<!-- merged from b.md by dreamd -->\nWindows wheels are built by hand.\n")
    assert "and its merged_from lists the notes folded into it" in draft.rationale


def test_applied_merge_writes_the_votes_and_retires_the_copy(tmp_path, make_store, cli):
    """Through pass, accept and apply, the survivor on disk gains merged_from and the copy is marked superseded."""
    store = make_store({"a.md": f"---\nname: Staging\n---\n{FACT}", "b.md": FACT})
    db = f"sqlite:///{tmp_path / 'state.db'}"
    assert cli("--db", db, "pass", "--store", str(store), "--preset", "generic").code == 0
    assert cli("--db", db, "accept", "1").code == 0
    assert cli("--db", db, "apply", "1").code == 0
    assert (store / "a.md").read_text() == f"---\nname: Staging\nmerged_from: [b.md]\n---\n{FACT}"
    assert "superseded_by: a.md" in (store / "b.md").read_text()
