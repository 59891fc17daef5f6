"""A note that replaces another never ends up linking to itself: the reference it made to the
note it replaces is left as its words, in every link syntax the presets know."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.core.changes import build
from daemon.core.hashing import hash_bytes
from daemon.core.index import IndexSpec
from daemon.core.links import find
from daemon.core.notes import Note
from daemon.core.proposals import MERGE, SUPERSEDE, Draft
from daemon.core.reader import ARCHIVE, ReaderModel
from daemon.core.view import StoreView
from daemon.stores import readers

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)

# syntax -> (reader, the older note, the newer note, how the newer one names the older, as words after)
CASES = {
    "markdown": (readers.DEEPCODE, "plan-v1.md", "plan-v2.md", "Earlier plan: [the first plan](plan-v1.md).", "Earlier plan: the first plan."),
    "mem": (readers.SERENA, "deploy/steps.md", "deploy/steps_v2.md", "Replaces `mem:deploy/steps`.", "Replaces `deploy/steps`."),
    "wiki": (readers.CLAUDE_CODE, "release-plan.md", "release-plan-v2.md", "Replaces [[release-plan]].", "Replaces release-plan."),
    "task-id": (readers.CLINE, "tasks/TASK004-search.md", "tasks/TASK009-search-again.md", "Picks up [TASK004] again.", "Picks up TASK004 again."),
}


def _view(files: dict[str, str], reader: ReaderModel) -> StoreView:
    notes = {p: Note(p, t.encode(), hash_bytes(t.encode())) for p, t in files.items()}
    return StoreView(notes=notes, retire_mode=ARCHIVE, archive_dir=".dreamd-archive", reader=reader)


def _draft(kind: str, **kw) -> Draft:  # noqa: ANN003
    return Draft(kind=kind, source="detector:test@1", confidence=0.9, title="t", rationale="r", **kw)


@pytest.mark.parametrize("syntax", sorted(CASES))
def test_a_supersedes_reference_to_the_note_it_replaces_becomes_its_words(syntax: str):
    """The newer note's reference to the older one is left as its words, not turned into a link to itself; the rest of the note is byte for byte."""
    reader, older, newer, line, words = CASES[syntax]
    files = {older: "# Old\n\nThe old way.\n", newer: f"# New\n\nThe new way.\n{line}\n"}
    change = build(_draft(SUPERSEDE, retire=(older,), survivor=newer), _view(files, reader), NOW)
    assert change.after(newer) == f"# New\n\nThe new way.\n{words}\n".encode()
    assert change.reads.dangling == () and change.reads.holds == ()


@pytest.mark.parametrize("syntax", sorted(CASES))
def test_other_notes_still_point_at_the_newer_note(syntax: str):
    """Only the newer note's own reference becomes words: a third note's reference to the older one is repointed at the newer, as before."""
    reader, older, newer, line, _ = CASES[syntax]
    files = {older: "# Old\n\nThe old way.\n", newer: f"# New\n\n{line}\n", "other.md": f"# Other\n\n{line}\n"}
    change = build(_draft(SUPERSEDE, retire=(older,), survivor=newer), _view(files, reader), NOW)
    other = change.after("other.md")
    refs = find("other.md", other.decode(), 0, reader.links, _view(files, reader).names.without({older}))
    assert [r.target for r in refs] == [newer]


def test_a_merged_line_naming_the_survivor_is_left_as_words():
    """A line a merge moves into the survivor that linked to the survivor itself keeps its words and stops being a link."""
    files = {"a.md": "Alpha.\n", "b.md": "Alpha.\nSee [alpha](a.md) for more.\n"}
    merged = b"Alpha.\n\n<!-- merged from b.md by dreamd -->\nSee [alpha](a.md) for more.\n"
    change = build(_draft(MERGE, retire=("b.md",), survivor="a.md", survivor_data=merged), _view(files, readers.DEEPCODE), NOW)
    assert change.after("a.md") == b"Alpha.\n\n<!-- merged from b.md by dreamd -->\nSee alpha for more.\n"
    assert change.reads.unlinked == 0 and change.reads.holds == ()


def test_a_task_files_own_id_in_its_heading_stays():
    """A reference a note made to itself before the change (a Cline task's heading) is left as it was."""
    older, newer = "tasks/TASK004-search.md", "tasks/TASK009-search-again.md"
    files = {older: "# [TASK004] - Search\n", newer: "# [TASK009] - Search again\n\nPicks up [TASK004].\n"}
    view = StoreView(
        notes={p: Note(p, t.encode(), hash_bytes(t.encode())) for p, t in files.items()},
        index=IndexSpec("tasks/_index.md", "cline-tasks"), retire_mode=ARCHIVE, archive_dir=".dreamd-archive", reader=readers.CLINE,
    )  # fmt: skip
    change = build(_draft(SUPERSEDE, retire=(older,), survivor=newer), view, NOW)
    assert change.after(newer) == b"# [TASK009] - Search again\n\nPicks up TASK004.\n"


def test_a_pinned_newer_note_is_not_rewritten_and_its_reference_is_said_to_dangle():
    """A pinned note is never rewritten, not even to words: its reference to the retired note is held as dangling, as any pinned reference is."""
    files = {"plan-v1.md": "Old.\n", "plan-v2.md": "---\npinned: true\n---\nNew. Earlier: [v1](plan-v1.md).\n"}
    change = build(_draft(SUPERSEDE, retire=("plan-v1.md",), survivor="plan-v2.md"), _view(files, readers.DEEPCODE), NOW)
    assert "plan-v2.md" not in change.written
    assert [d.why for d in change.reads.dangling] == ["it sits in plan-v2.md, which is pinned"]
