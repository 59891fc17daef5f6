"""Index-drift detector, for both index formats."""

from __future__ import annotations

import dataclasses

from daemon.core.index import IndexSpec
from daemon.core.proposals import REINDEX
from daemon.planners.detectors.index_drift import IndexDrift

from .factory import context, memory_index, note, view


def detect(store):
    return IndexDrift().detect(context(store))


def test_links_dangling_retired_and_unlisted():
    """MEMORY.md: missing and retired entries are dropped and unlisted live notes added, in one draft."""
    index, spec = memory_index(
        "- [Build](build.md) — how to build",
        "- [Gone](gone.md) and [Also gone](old/also.md)",
        "- [Old status](status.md)",
    )
    store = view(
        index,
        note("build.md", "Builds use make.\n"),
        note("status.md", "---\nstatus: superseded\nsuperseded_by: build.md\n---\nOld.\n"),
        note("deploy.md", "# Deploy\nDeploys go through the release job.\n"),
        note("zeta.md", "Zeta service owns the queue.\n"),
        index=spec,
    )
    (draft,) = detect(store)
    assert draft.kind == REINDEX and draft.confidence == 0.9 and draft.source == "detector:index-drift@4"
    assert draft.index_drop == ("gone.md", "old/also.md", "status.md")
    assert draft.index_add == ("deploy.md", "zeta.md")
    assert (
        draft.title
        == "Reindex MEMORY.md: drop 2 dangling entries, drop 1 entry for retired notes, add 2 unlisted notes"
    )
    assert draft.retire == () and draft.survivor is None


def test_title_matches_the_plain_case():
    """Only dangling and unlisted drift gives the short title form."""
    index, spec = memory_index("- [a](a.md)", "- [b](b.md)")
    store = view(index, note("c.md", "c\n"), note("d.md", "d\n"), note("e.md", "e\n"), index=spec)
    assert detect(store)[0].title == "Reindex MEMORY.md: drop 2 dangling entries, add 3 unlisted notes"


def test_clean_index_gives_nothing():
    """An index that lists exactly the live notes gives no draft."""
    index, spec = memory_index("- [a](a.md)")
    assert detect(view(index, note("a.md", "a\n"), index=spec)) == []


def test_no_index_gives_nothing():
    """A store without an index note has nothing to reindex."""
    assert detect(view(note("a.md", "a\n"))) == []
    assert detect(view(note("a.md", "a\n"), index=IndexSpec("MEMORY.md", "links"))) == []


def test_cline_tasks_index():
    """tasks/_index.md: dangling task ids and retired tasks are dropped, unlisted tasks in scope added."""
    index = note(
        "tasks/_index.md",
        "# Tasks Index\n\n## In Progress\n- [TASK001] Set up CI\n\n## Completed\n"
        "- [TASK002] Fix login redirect\n- [TASK009] Removed task\n",
    )
    store = view(
        index,
        note("tasks/TASK001-setup-ci.md", "# TASK001 - Set up CI\n"),
        note("tasks/TASK002-fix-login.md", "---\nstatus: expired\n---\n# TASK002 - Fix login\n"),
        note("tasks/TASK003-cache.md", "# TASK003 - Add a cache\n"),
        note("progress.md", "# Progress\n"),
        note("notes/loose.md", "Not a task.\n"),
        index=IndexSpec("tasks/_index.md", "cline-tasks", sections="status"),
        scope="tasks/*.md",
        protected=("progress.md",),
    )
    draft, records = detect(store)
    assert draft.index_drop == ("tasks/TASK002-fix-login.md",)  # TASK009's line is its only record: kept
    assert draft.index_add == ()  # TASK003's file has no status line to choose its section by
    assert "Not added: tasks/TASK003-cache.md, whose status cannot be read" in draft.rationale
    assert {e.quote for e in draft.evidence if e.path == "tasks/_index.md"} == {"- [TASK002] Fix login redirect"}
    assert records.title == "Give 1 task known only from tasks/_index.md a file: TASK009"
    ((path, data),) = records.create
    assert path == "tasks/TASK009-removed-task.md"
    assert data.decode().startswith("# [TASK009] - Removed task\n\n**Status:** Completed\n")
    assert not records.lossy and records.index_drop == () and records.index_add == ()


def test_existing_non_note_file_is_not_dangling():
    """An entry pointing at a file that exists but is not a note (excluded, say) is kept."""
    index, spec = memory_index("- [Big](big.md)", "- [a](a.md)")
    store = view(index, note("a.md", "a\n"), index=spec)
    store = dataclasses.replace(store, other_files={"big.md": "0" * 64})
    assert detect(store) == []


def test_notes_retired_by_earlier_detectors_are_not_added():
    """A reindex does not list a duplicate the same pass proposes to merge away."""
    import datetime as dt

    from daemon.core.hashing import hash_bytes
    from daemon.core.index import IndexSpec
    from daemon.core.notes import Note
    from daemon.core.view import StoreView
    from daemon.planners.base import PlanContext, run_detectors

    files = {"MEMORY.md": b"# M\n- [A](a.md)\n", "a.md": b"same words here\n", "b.md": b"Same  words here\n"}
    view = StoreView(notes={p: Note(p, b, hash_bytes(b)) for p, b in files.items()}, index=IndexSpec("MEMORY.md", "links"))
    drafts = run_detectors(PlanContext(view=view, now=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)))
    assert [d.kind for d in drafts] == ["merge"]


def test_an_index_of_thousands_of_dangling_links_is_quoted_in_linear_work():
    """36,000 dangling entries give one draft carrying 50 quotes, each cut from one shared split of the index."""
    from daemon.planners.evidence import MAX_EVIDENCE

    index, spec = memory_index(*(f"- [Gone {i}](gone-{i}.md) — a note that is not there" for i in range(36_000)))
    store = view(index, note("a.md", "a\n"), index=spec)
    (draft,) = detect(store)
    assert len(draft.index_drop) == 36_000 and len(draft.evidence) == MAX_EVIDENCE
    assert store.notes["MEMORY.md"].lines is store.notes["MEMORY.md"].lines  # split once, cached


def test_a_note_an_index_names_as_a_wiki_near_miss_is_not_added_again():
    """Claude Code follows ``[[name]]``: ``[[deploy_steps]]`` lists deploy-steps.md, so no
    second entry is proposed for it."""
    index, spec = memory_index("- [[deploy_steps]] — how to deploy")
    store = view(index, note("deploy-steps.md", "Run make deploy.\n"), index=spec._replace(wiki=True))
    assert detect(store) == []
    assert [d.index_add for d in detect(view(index, note("deploy-steps.md", "Run make deploy.\n"), index=spec))] == [("deploy-steps.md",)]
