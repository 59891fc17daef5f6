"""Serena conformance: after every apply and revert, Serena reads its memories right.

Serena v1.7.0 lists every ``*.md`` under ``.serena/memories`` at any depth, dot-folders
included, less the names its ``ignored_memory_patterns`` match, and follows `` `mem:NAME` ``
to ``NAME.md`` (oracles.Serena has the sources). So a retired memory must leave that folder
(or sit where an ignored pattern hides it), and a ``mem:`` reference to it must be rewritten.
Two setups: the default archive beside the memories folder, and an archive inside it that
the store's settings say Serena ignores.
"""

from __future__ import annotations

import pytest

from daemon.service.workspace import observe

from .fixtures import serena
from .harness import assert_clean_end, assert_right

SETUPS = ["serena", "serena-ignoring-archive"]
KINDS = ["merge", "supersede", "soft-expire", "relink", "relocate"]


@pytest.mark.parametrize("setup", SETUPS)
def test_dreamd_plans_over_exactly_the_memories_serena_lists(session_of, setup: str):
    """The notes dreamd plans over are the memories Serena lists: nested, in dot-folders, less the ignored ones."""
    s = session_of(setup)
    assert set(observe(s.store).view.notes) == s.oracle.visible_notes(s.root)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("setup", SETUPS)
def test_each_proposal_applied_then_reverted_keeps_what_serena_reads(session_of, setup: str, kind: str):
    """Each proposal of the kind, applied then reverted alone, leaves no retired memory listed, no new dangling mem: reference, nothing outside the roots changed, and the bytes restored."""
    s = session_of(setup)
    steps = s.isolate(kind)
    assert steps, f"the fixture yields no {kind} proposal"
    assert_right(steps)


@pytest.mark.parametrize("setup", SETUPS)
def test_applying_everything_leaves_serena_listing_only_live_memories(session_of, setup: str):
    """Accepting every proposal pass after pass keeps each apply right for Serena, and ends with no retired memory listed and every mem: reference landing."""
    s = session_of(setup)
    assert_right(s.everything())
    examples = frozenset(d for d in s.baseline.dangling if d[0] == "memory_maintenance.md")  # the syntax's own examples
    assert_clean_end(s, dangling=examples)
    assert s.reading().dangling == examples  # left alone: never unlinked


def test_the_old_archive_inside_memories_moves_beside_it_byte_for_byte(session_of):
    """The .dreamd-archive/ an earlier dreamd left inside memories/ (which Serena lists) moves to memories.dreamd-archive/ beside it, each file unchanged."""
    s = session_of("serena")
    (relocate,) = [p for p in s.pending_after_pass() if p.kind == "relocate" and ".dreamd-archive/2024/old_setup.md" in p.result]
    assert s.take(relocate, then_revert=False).problems == []
    archive = s.oracle.archive_root(s.root)
    old = {path: text.encode() for path, text in serena().notes.items() if path.startswith(".dreamd-archive/")}
    assert {path: (archive / path.removeprefix(".dreamd-archive/")).read_bytes() for path in old} == old
    assert not [p for p in (s.root / ".dreamd-archive").rglob("*") if p.is_file()]
    assert not any(p.startswith(".dreamd-archive/") for p in s.oracle.visible_notes(s.root))


def test_a_mem_reference_to_a_merged_copy_is_rewritten_to_the_survivor(session_of):
    """Merging auth/login_copy into auth/login rewrites core's `mem:auth/login_copy` to `mem:auth/login`, and nothing else in core."""
    s = session_of("serena")
    before = (s.root / "core.md").read_text()
    (merge,) = [p for p in s.pending_after_pass() if p.kind == "merge" and "exact" in p.title]
    assert s.take(merge, then_revert=False).problems == []
    assert (s.root / "core.md").read_text() == before.replace("`mem:auth/login_copy`", "`mem:auth/login`")


def test_core_and_memory_maintenance_are_never_retired(session_of):
    """Serena's onboarding memories (core, the graph root; memory_maintenance) stay live memories whatever is applied."""
    s = session_of("serena")
    s.everything()
    assert {"core.md", "memory_maintenance.md"} <= s.reading().live
