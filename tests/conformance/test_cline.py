"""Cline conformance: after every apply and revert, the memory bank reads right.

Cline reads every ``.md`` of ``memory-bank/`` (its recursive ``list_files`` skips what is in
hidden folders); ``tasks/_index.md`` lists ``- [TASKnnn] Name - note`` lines under In
Progress / Pending / Completed / Abandoned, each joined by id to ``tasks/**/TASKnnn-*.md``
and filed under the section its ``**Status:**`` names; files refer to tasks as
``[TASKnnn]`` and to other files by markdown link (oracles.Cline has the sources). The
fixture's index lists two Pending tasks that have no file, and one finished task has a file
but no line yet.
"""

from __future__ import annotations

import pytest

from daemon.service.workspace import observe

from .fixtures import cline
from .harness import assert_clean_end, assert_right

KINDS = ["merge", "supersede", "soft-expire", "reindex", "relink", "relocate"]
CORE = ("projectbrief.md", "productContext.md", "activeContext.md", "systemPatterns.md", "techContext.md", "progress.md")


def test_dreamd_plans_over_exactly_the_files_cline_reads(session_of):
    """The notes dreamd plans over are the files Cline lists: nested folders yes, .scratch/ and the archive no."""
    s = session_of("cline")
    assert set(observe(s.store).view.notes) == s.oracle.visible_notes(s.root)


@pytest.mark.parametrize("kind", KINDS)
def test_each_proposal_applied_then_reverted_keeps_what_cline_reads(session_of, kind: str):
    """Each proposal of the kind, applied then reverted alone, leaves no retired file listed, every index line resolving to a live task filed under its status, no new dangling link or task id, nothing outside the roots changed, and the bytes restored."""
    s = session_of("cline")
    steps = s.isolate(kind)
    assert steps, f"the fixture yields no {kind} proposal"
    assert_right(steps)


def test_applying_everything_leaves_cline_reading_only_live_files(session_of):
    """Accepting every proposal pass after pass keeps each apply right for Cline, and ends with no retired file listed, every index line resolving, and no dangling reference dreamd made."""
    s = session_of("cline")
    assert_right(s.everything())
    assert_clean_end(s, dangling=s.baseline.dangling)


def test_tasks_known_only_from_the_index_get_a_file_their_line_resolves_to(session_of):
    """For the Pending lines whose task file is missing, dreamd proposes writing each task a file, one proposal a file; applied, both lines resolve to a Pending task."""
    s = session_of("cline")
    assert s.allowed_unresolved == {"TASK007", "TASK008"}
    records = [p for p in s.pending_after_pass() if p.kind == "reindex" and any(path.startswith("tasks/TASK") for path in p.result)]
    assert sorted(path.split("-")[0] for p in records for path in p.result) == ["tasks/TASK007", "tasks/TASK008"]
    for proposal in records:
        assert s.take(proposal, then_revert=False).problems == []
    found = {e.written: (e.resolves, e.section, e.status) for e in s.reading().entries}
    assert found["TASK007"] == found["TASK008"] == (True, "Pending", "Pending")


def test_an_unlisted_task_is_filed_under_the_section_of_its_status(session_of):
    """The reindex lists TASK013, whose file says **Status:** Completed, under ## Completed."""
    s = session_of("cline")
    (reindex,) = [p for p in s.pending_after_pass() if p.kind == "reindex" and "tasks/_index.md" in p.result and p.base["tasks/_index.md"] != p.result["tasks/_index.md"]]
    assert s.take(reindex, then_revert=False).problems == []
    (entry,) = [e for e in s.reading().entries if e.written == "TASK013"]
    assert (entry.resolves, entry.section, entry.status) == (True, "Completed", "Completed")


def test_tasks_readme_never_becomes_an_index_entry(session_of):
    """However much is applied, tasks/README.md is never named by tasks/_index.md."""
    s = session_of("cline")
    s.everything()
    index = (s.root / "tasks/_index.md").read_text(encoding="utf-8")
    assert "README" not in index
    assert all(e.target != "tasks/README.md" for e in s.reading().entries)


def test_the_six_core_files_are_never_retired(session_of):
    """The core files stay live where Cline reads them, even techContext.md, which a near copy (tech-stack.md) is merged into."""
    s = session_of("cline")
    s.everything()
    end = s.reading()
    assert set(CORE) <= end.live
    assert "tech-stack.md" not in end.visible
    assert "Type checking runs with mypy." in (s.root / "techContext.md").read_text(encoding="utf-8")
    assert (s.root / "projectbrief.md").read_text(encoding="utf-8") == cline().notes["projectbrief.md"]
