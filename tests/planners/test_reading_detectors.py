"""Detectors of what the agent reads wrong: retired notes it lists, dangling references, an
index past its load limit."""

from __future__ import annotations

import dataclasses

from daemon.core.index import IndexSpec, LoadLimit
from daemon.core.proposals import REINDEX, RELINK, RELOCATE
from daemon.core.reader import ARCHIVE, MEM, Listing, ReaderModel
from daemon.planners.detectors.dangling import DanglingReferences
from daemon.planners.detectors.index_limit import IndexLimit
from daemon.planners.detectors.visible_retired import VisibleRetired

from .factory import context, note, view

SERENA_LIKE = ReaderModel("Serena", Listing(recursive=True, dot_dirs=True), (MEM, "markdown"))
RETIRED = "---\nstatus: superseded\nsuperseded_by: auth/login.md\n---\n# Old login\n"


def agent_view(*notes, archive_dir: str = "memories.dreamd-archive", archive_notes=(), **kw):  # noqa: ANN002, ANN003, ANN201
    base = view(*notes, **kw)
    return dataclasses.replace(
        base, reader=SERENA_LIKE, retire_mode=ARCHIVE, archive_dir=archive_dir, archive_notes={n.path: n for n in archive_notes}
    )


def test_an_old_archive_inside_a_recursively_listed_folder_moves_out_whole():
    """Every note of .dreamd-archive/ inside Serena's folder is proposed to move into the archive root, live or not."""
    store = agent_view(
        note(".dreamd-archive/auth/old_login.md", RETIRED),
        note(".dreamd-archive/copy.md", "# A copy dreamd archived before it marked notes\n"),
        note("auth/login.md", "# Login\n"),
    )
    (draft,) = VisibleRetired().detect(context(store))
    assert (draft.kind, draft.retire) == (RELOCATE, (".dreamd-archive/auth/old_login.md", ".dreamd-archive/copy.md"))
    assert draft.title == "Move 2 retired notes out of Serena's sight"
    assert "where Serena lists them as notes" in draft.rationale


def test_a_note_retired_by_hand_where_the_agent_reads_it_is_moved():
    """A note whose frontmatter says it is retired but that sits among live notes is proposed to move; pinned ones stay."""
    store = agent_view(note("old.md", RETIRED), note("pinned-old.md", "---\nstatus: expired\npinned: true\n---\nx\n"), note("live.md", "x\n"))
    (draft,) = VisibleRetired().detect(context(store))
    assert draft.retire == ("old.md",)


def test_an_agent_that_reads_frontmatter_needs_no_move():
    """A store whose reader honours status (generic, retiring in place) has nothing to relocate."""
    store = dataclasses.replace(agent_view(note("old.md", RETIRED)), reader=SERENA_LIKE._replace(reads_status=True))
    assert VisibleRetired().detect(context(store)) == []


def test_references_to_retired_notes_follow_superseded_by_to_a_live_note():
    """A reference to a note retired in place, or moved to the archive, is repointed at the end of its superseded_by chain."""
    store = agent_view(
        note("core.md", "Read `mem:auth/old_login` and `mem:auth/older` and [x](auth/v1.md).\n"),
        note("auth/login.md", "# Login\n"),
        note("auth/v1.md", "---\nstatus: superseded\nsuperseded_by: v2.md\n---\nv1\n"),
        note("auth/v2.md", "---\nstatus: superseded\nsuperseded_by: login.md\n---\nv2\n"),
        archive_notes=(
            note("memories.dreamd-archive/auth/old_login.md", RETIRED),
            note("memories.dreamd-archive/auth/older.2.md", "---\nstatus: superseded\nsuperseded_by: auth/login.md\n---\n"),
        ),
    )
    (draft,) = DanglingReferences().detect(context(store))
    assert draft.kind == RELINK and draft.confidence == 0.9
    assert dict(draft.relink) == {"auth/old_login.md": "auth/login.md", "auth/older.md": "auth/login.md", "auth/v1.md": "auth/login.md"}


def test_references_to_notes_nothing_replaces_are_unlinked_and_held():
    """A reference to a missing note with no recorded replacement gets an unlink proposal, at low confidence."""
    store = agent_view(note("core.md", "See `mem:auth/gone` and [TASK009].\n"))
    (draft,) = DanglingReferences().detect(context(store))
    assert (draft.relink, draft.confidence) == ((("auth/gone.md", None),), 0.5)  # task ids are records: never unlinked
    assert "only a person knows where it should point" in draft.rationale


def test_references_this_pass_retires_are_left_to_their_proposal():
    """A reference to a note another detector of this pass retires is not relinked too."""
    store = agent_view(note("core.md", "See `mem:auth/gone`.\n"))
    assert DanglingReferences().detect(dataclasses.replace(context(store), retiring=frozenset({"auth/gone.md"}))) == []


def test_live_references_give_nothing():
    """A store whose references all resolve to live notes has nothing to relink."""
    assert DanglingReferences().detect(context(agent_view(note("a.md", "`mem:b`\n"), note("b.md", "b\n")))) == []


def _over_limit_index(lines: int, hook: str) -> tuple:  # noqa: ANN001
    spec = IndexSpec("MEMORY.md", "links", limit=LoadLimit(chars=2000))
    body = "".join(f"- [N{i}](n{i}.md)" + (f" — {hook}" if hook else "") + "\n" for i in range(lines))
    return spec, [note("MEMORY.md", body)] + [note(f"n{i}.md", "x\n") for i in range(lines)]


def test_an_index_past_its_limit_is_proposed_for_compaction_with_the_unseen_entries_named():
    """A DeepCode-like index over its character limit gets a lossy-by-build compaction reindex naming what the agent misses."""
    spec, notes = _over_limit_index(30, "a hook long enough to matter " * 3)
    (draft,) = IndexLimit().detect(context(view(*notes, index=spec)))
    assert draft.kind == REINDEX and draft.index_compact and draft.confidence == 0.7
    assert "11 entries (n19.md, n20.md, n21.md, n22.md, n23.md and 6 more) never reach the agent" in draft.rationale
    assert "no entry is removed" in draft.rationale


def test_an_index_shortening_cannot_save_is_left_to_a_person():
    """When even bare entries overflow the limit, no compaction is proposed."""
    spec, notes = _over_limit_index(200, "")
    assert IndexLimit().detect(context(view(*notes, index=spec))) == []


def test_an_index_within_its_limit_gives_nothing():
    spec, notes = _over_limit_index(5, "short")
    assert IndexLimit().detect(context(view(*notes, index=spec))) == []
