"""Claude Code conformance: after every apply and revert, auto memory reads its folder right.

Claude Code recalls every ``*.md`` under ``memory/`` at any depth, hidden folders too, except
files named MEMORY.md; it loads the first 200 lines or 25,000 characters of the trimmed
MEMORY.md, whose entries ``- [Title](path.md) — hook`` name notes from the memory folder
(team notes as ``team/x.md``); notes link each other as ``[[name]]`` (oracles.ClaudeCode has
the sources). The fixture's MEMORY.md is 198 lines, and three live notes are not listed yet.
"""

from __future__ import annotations

import re

import pytest

from daemon.service.workspace import observe

from .harness import assert_clean_end, assert_right

KINDS = ["merge", "supersede", "soft-expire", "reindex", "relink", "relocate"]


def test_dreamd_plans_over_exactly_the_notes_claude_code_recalls(session_of):
    """The notes dreamd plans over are the files recall lists (team/ and hidden folders included, no MEMORY.md), plus the index itself."""
    s = session_of("claude-code")
    assert set(observe(s.store).view.notes) == s.oracle.visible_notes(s.root) | {"MEMORY.md"}


@pytest.mark.parametrize("kind", KINDS)
def test_each_proposal_applied_then_reverted_keeps_what_claude_code_reads(session_of, kind: str):
    """Each proposal of the kind, applied then reverted alone, leaves no retired note recalled, every MEMORY.md entry landing on a live note within 200 lines, no new dangling [[name]], nothing outside the roots changed, and the bytes restored."""
    s = session_of("claude-code")
    steps = s.isolate(kind)
    assert steps, f"the fixture yields no {kind} proposal"
    assert_right(steps)


def test_applying_everything_leaves_claude_code_recalling_only_live_notes(session_of):
    """Accepting every proposal pass after pass keeps each apply right for Claude Code, and ends with no retired note recalled, every [[name]] landing and MEMORY.md loaded whole."""
    s = session_of("claude-code")
    assert_right(s.everything())
    assert_clean_end(s)


def test_adding_entries_to_a_198_line_memory_md_keeps_it_within_200_lines(session_of):
    """The reindex of a 198-line MEMORY.md adds the two entries that fit in the 200 lines Claude Code loads, and names the one it leaves out."""
    s = session_of("claude-code")
    (reindex,) = [p for p in s.pending_after_pass() if p.kind == "reindex"]
    assert reindex.reads["holds"] == [] and "Not added: reference_dashboards.md: Claude Code would not load its entry" in reindex.rationale
    assert s.take(reindex, then_revert=False).problems == []
    lines = len((s.root / "MEMORY.md").read_text(encoding="utf-8").strip().split("\n"))
    assert lines == 200
    assert {"project_cache_policy.md", "feedback_commit_style.md"} <= s.reading().loaded.seen
    assert s.reading().loaded.within_limit


def test_a_wiki_link_to_a_merged_copy_is_rewritten_to_the_survivors_name(session_of):
    """Merging deploy_steps_copy.md into deploy_steps.md turns [[deploy-steps-copy]] into [[deploy-steps]], the survivor's frontmatter name."""
    s = session_of("claude-code")
    (merge,) = [p for p in s.pending_after_pass() if p.kind == "merge" and "exact" in p.title]
    assert s.take(merge, then_revert=False).problems == []
    text = (s.root / "feedback_testing.md").read_text()
    assert "[[deploy-steps-copy]]" not in text and text.count("[[deploy-steps]]") == 2


def test_team_notes_stay_indexed_as_team_paths(session_of):
    """After everything is applied, every live team note is still listed in MEMORY.md as team/x.md and resolves there."""
    s = session_of("claude-code")
    s.everything()
    end = s.reading()
    team = {p for p in end.live if p.startswith("team/")}
    listed = {e.target for e in end.entries if e.resolves}
    assert team and team <= listed
    assert re.search(r"\]\(team/code_review\.md\)", (s.root / "MEMORY.md").read_text())


def test_retired_notes_end_up_beside_the_memory_folder(session_of):
    """Every note dreamd retires lands in memory.dreamd-archive/ beside memory/, and memory/ keeps no retired note at any depth."""
    s = session_of("claude-code")
    s.everything()
    archive = s.oracle.archive_root(s.root)
    assert archive == s.root.parent / "memory.dreamd-archive"
    assert {"deploy_steps_copy.md", "project_sprint_status.md", "project_release_plan.md", "project_legacy_ci.md"} <= {
        p.relative_to(archive).as_posix() for p in archive.rglob("*.md")
    }
    assert s.reading().retired_visible == frozenset()
