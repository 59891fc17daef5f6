"""No destructive relinks: a link whose note exists under another name is repointed, an
ambiguous one is left for a person with its candidates, and only a target that exists
nowhere is unlinked, saying where dreamd looked; one proposal per referring note."""

from __future__ import annotations

import dataclasses

import pytest

from daemon.core.changes import build
from daemon.core.index import IndexSpec
from daemon.core.links import find
from daemon.core.notes import Note
from daemon.core.proposals import REINDEX, RELINK
from daemon.core.reader import ARCHIVE
from daemon.planners.detectors.dangling import MAX_FILES, DanglingReferences, ambiguous
from daemon.planners.detectors.index_drift import IndexDrift, ambiguous_entries
from daemon.stores import readers

from .factory import NOW, context, memory_index, note, view


def agent(*notes: Note, reader=readers.CLAUDE_CODE, index: IndexSpec | None = None):  # noqa: ANN001, ANN201
    return dataclasses.replace(view(*notes, index=index), reader=reader, retire_mode=ARCHIVE, archive_dir="memory.dreamd-archive")


def relinks(store) -> list:  # noqa: ANN001
    return DanglingReferences().detect(context(store))


def lands_on(store, draft, source: str) -> list[str | None]:  # noqa: ANN001
    """Where the source note's references land once the draft is applied, by dreamd's model of the agent's rule."""
    change = build(draft, store, NOW)
    data = change.after(source)
    assert data is not None
    start = len(Note(source, data, "").parts.header.decode())
    return [r.target for r in find(source, data.decode(), start, store.reader.links, store.names)]


NAMED = "---\nname: {name}\ndescription: d\n---\n"

# (reader, the linking note's text, the notes that exist, the note the link must land on, the link as rewritten)
VARIANTS = {
    "wiki, _ for -": (readers.CLAUDE_CODE, "Fields: [[project-bga-player-metadata]].\n", {"project_bga_player_metadata.md": "Elo, games.\n"}, "project_bga_player_metadata.md", "[[project_bga_player_metadata]]"),
    "wiki, case": (readers.CLAUDE_CODE, "See [[Deploy-Steps]].\n", {"deploy_steps.md": NAMED.format(name="deploy-steps") + "Promote.\n"}, "deploy_steps.md", "[[deploy-steps]]"),
    "wiki, with .md": (readers.CLAUDE_CODE, "See [[deploy-steps.md]].\n", {"deploy_steps.md": NAMED.format(name="deploy-steps") + "Promote.\n"}, "deploy_steps.md", "[[deploy-steps]]"),
    "wiki, spaces": (readers.CLAUDE_CODE, "See [[release plan]].\n", {"release_plan.md": "Dates.\n"}, "release_plan.md", "[[release_plan]]"),
    "markdown, another folder": (readers.CLAUDE_CODE, "See [login](login.md).\n", {"auth/login.md": "Login.\n"}, "auth/login.md", "[login](auth/login.md)"),
    "markdown, case": (readers.CLAUDE_CODE, "See [ports](Ports.md).\n", {"ports.md": "Ports.\n"}, "ports.md", "[ports](ports.md)"),
    "markdown, - for _": (readers.DEEPCODE, "See [ports](api-ports.md).\n", {"api_ports.md": "Ports.\n"}, "api_ports.md", "[ports](api_ports.md)"),
    "markdown, a folder DeepCode never lists": (readers.DEEPCODE, "See [ports](old/ports.md).\n", {"ports.md": "Ports.\n"}, "ports.md", "[ports](ports.md)"),
    "mem, _ for -": (readers.SERENA, "Read `mem:auth-login` first.\n", {"auth_login.md": "Login.\n"}, "auth_login.md", "`mem:auth_login`"),
    "mem, another folder": (readers.SERENA, "Read `mem:login` first.\n", {"auth/login.md": "Login.\n"}, "auth/login.md", "`mem:auth/login`"),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_a_link_to_a_note_under_another_name_is_repointed_at_it(name: str):
    """A link whose note exists in another folder, case, _/-/space spelling or without .md becomes a repoint to that note, which the agent's rule then resolves."""
    reader, text, others, target, written = VARIANTS[name]
    store = agent(note("notes.md", "# Notes\n" + text), *(note(p, t) for p, t in others.items()), reader=reader)
    (draft,) = relinks(store)
    assert (draft.kind, draft.relink_in, [new for _, new in draft.relink]) == (RELINK, ("notes.md",), [target])
    assert draft.confidence == 0.8 and "Repoint 1 reference in notes.md" == draft.title
    assert lands_on(store, draft, "notes.md") == [target]
    assert written in build(draft, store, NOW).after("notes.md").decode()
    assert "unlink" not in draft.title.lower() and "exists nowhere" not in draft.rationale


def test_a_repoints_rationale_quotes_the_lines_around_the_link():
    """The rationale and the evidence quote the line of the link with the lines before and after it."""
    text = "# BGA\nWe scrape the player pages.\nFields are in [[project-bga-player-metadata]].\nRefresh weekly.\n"
    store = agent(note("scraper.md", text), note("project_bga_player_metadata.md", "Elo.\n"))
    (draft,) = relinks(store)
    assert "line 3 (“We scrape the player pages. / Fields are in [[project-bga-player-metadata]]. / Refresh weekly.”)" in draft.rationale
    assert "'project-bga-player-metadata' becomes 'project_bga_player_metadata'" in draft.rationale
    assert "(with _, - or spaces for one another)" in draft.rationale
    (evidence,) = draft.evidence
    assert (evidence.start, evidence.end) == (2, 4) and "[[project-bga-player-metadata]]" in evidence.quote


def test_a_link_that_could_mean_several_notes_is_not_repointed_and_is_listed_with_them():
    """[x](login.md) with auth/login.md and web/login.md gives no relink (neither repoint nor unlink); ambiguous() names both candidates."""
    store = agent(note("a.md", "See [login](login.md) and [[Login-Flow]].\n"), note("auth/login.md", "A.\n"), note("web/login.md", "W.\n"), note("x/login_flow.md", "F.\n"), note("y/login-flow.md", "G.\n"))
    assert relinks(store) == []
    found = {ref.written: candidates for ref, candidates in ambiguous(store)}
    assert found == {"login.md": ("auth/login.md", "web/login.md"), "Login-Flow": ("x/login_flow.md", "y/login-flow.md")}


def test_only_a_target_that_exists_nowhere_is_unlinked_and_the_rationale_says_where_dreamd_looked():
    """A link to a name no note has in any folder, case or spelling is unlinked, held, and says it exists nowhere (looked for: …)."""
    store = agent(note("a.md", "Old notes: [[glossary]] and [the plan](plans/q1.md).\n"), note("b.md", "b\n"))
    (draft,) = relinks(store)
    assert dict(draft.relink) == {"plans/q1.md": None, "wiki:glossary": None}
    assert draft.title == "Unlink 2 references in a.md to notes that are gone" and draft.confidence == 0.5
    assert "glossary exists nowhere in the store (looked for: a note named or titled 'glossary', in any folder or case" in draft.rationale
    assert "plans/q1.md exists nowhere in the store (looked for: plans/q1.md, and q1.md in any folder, in any case" in draft.rationale
    assert build(draft, store, NOW).reads.holds == ("unlinks 2 references whose target is unknown",)


def test_a_target_retired_with_no_successor_is_unlinked_saying_so_not_that_it_is_missing():
    """A link to a note expired in place names its status, not 'exists nowhere'."""
    store = agent(note("a.md", "See [old](old.md).\n"), note("old.md", "---\nstatus: expired\n---\nold\n"))
    (draft,) = relinks(store)
    assert dict(draft.relink) == {"old.md": None}
    assert "old.md is expired and names no note that replaced it" in draft.rationale and "exists nowhere" not in draft.rationale


def test_a_note_with_a_repoint_and_an_unlink_gets_one_proposal_for_both():
    """Both references of one note are in one proposal (one diff of that note), held because of the unlink."""
    store = agent(note("a.md", "[[project-bga]] and [[nowhere]]\n"), note("project_bga.md", "x\n"))
    (draft,) = relinks(store)
    assert dict(draft.relink) == {"wiki:project-bga": "project_bga.md", "wiki:nowhere": None}
    assert draft.title == "Repoint 1 reference and unlink 1 reference in a.md" and draft.confidence == 0.5
    assert build(draft, store, NOW).written == ["a.md"]


def test_a_relink_over_forty_referring_notes_is_one_proposal_per_note():
    """Forty notes linking to a moved note give forty proposals, each rewriting one note (MAX_FILES), together covering all forty."""
    referrers = [note(f"topic_{i:02d}.md", f"# Topic {i}\nDeploys: [steps](deploy_steps.md).\n") for i in range(40)]
    store = agent(*referrers, note("ops/deploy_steps.md", "Promote.\n"))
    drafts = relinks(store)
    assert MAX_FILES == 1 and len(drafts) == 40
    written = [build(d, store, NOW).written for d in drafts]
    assert all(len(w) <= MAX_FILES for w in written)
    assert sorted(p for w in written for p in w) == sorted(n.path for n in referrers)
    assert len({d.relink_in for d in drafts}) == 40


def test_references_in_pinned_notes_notes_retiring_and_instruction_notes_are_left_alone():
    """A pinned referrer, one this pass retires, and Serena's memory_maintenance (whose names are examples) get no re-spelling."""
    store = agent(
        note("pinned.md", "---\npinned: true\n---\n`mem:auth-login`\n"),
        note("going.md", "`mem:auth-login`\n"),
        note("memory_maintenance.md", "Write `mem:auth-login` style names.\n"),
        note("auth_login.md", "Login.\n"),
        reader=readers.SERENA,
    )
    assert DanglingReferences().detect(dataclasses.replace(context(store), retiring=frozenset({"going.md"}))) == []


def test_a_repoint_to_a_note_this_pass_retires_waits_for_that_proposal():
    """When the one note found is being retired by this pass, the link is left for the next pass."""
    store = agent(note("a.md", "[[project-bga]]\n"), note("project_bga.md", "x\n"))
    assert DanglingReferences().detect(dataclasses.replace(context(store), retiring=frozenset({"project_bga.md"}))) == []


def test_the_index_repoints_an_entry_whose_note_is_spelled_otherwise_and_keeps_its_words():
    """MEMORY.md's `project-bga.md` entry, the note being project_bga.md, is repointed (hook kept, not lossy), not dropped and re-added."""
    index, spec = memory_index("- [BGA](project-bga.md) — the player fields we scrape", "- [Gone](gone.md) — said more")
    store = agent(index, note("project_bga.md", "Elo.\n"), index=spec)
    (draft,) = IndexDrift().detect(context(store))
    assert (draft.kind, draft.index_repoint, draft.index_add, draft.index_drop) == (REINDEX, (("project-bga.md", "project_bga.md"),), (), ("gone.md",))
    assert "gone.md, which exists nowhere in the store (looked for: gone.md" in draft.rationale
    text = build(draft, store, NOW).after("MEMORY.md").decode()
    assert "- [BGA](project_bga.md) — the player fields we scrape\n" in text and "gone.md" not in text
    assert draft.title == "Reindex MEMORY.md: repoint 1 entry, drop 1 dangling entry"


def test_the_index_leaves_an_entry_that_could_mean_several_notes():
    """An entry for login.md with auth/login.md and web/login.md unlisted is neither dropped nor repointed, and is named with its candidates."""
    index, spec = memory_index("- [Login](login.md) — where login lives")
    store = agent(index, note("auth/login.md", "A.\n"), note("web/login.md", "W.\n"), index=spec)
    (draft,) = IndexDrift().detect(context(store))
    assert draft.index_drop == () and draft.index_repoint == ()
    assert ambiguous_entries(store) == [("login.md", ("auth/login.md", "web/login.md"))]


def test_an_entry_whose_note_is_listed_under_its_own_name_is_dropped_saying_so():
    """A stale spelling of a note that has its own entry is dropped, and the rationale does not say it exists nowhere."""
    index, spec = memory_index("- [BGA](project-bga.md)", "- [BGA](project_bga.md)")
    store = agent(index, note("project_bga.md", "Elo.\n"), index=spec)
    (draft,) = IndexDrift().detect(context(store))
    assert draft.index_drop == ("project-bga.md",) and draft.index_repoint == ()
    assert "project-bga.md (the note is project_bga.md, listed under its own name)" in draft.rationale and "nowhere" not in draft.rationale


def test_tasks_known_only_from_the_index_get_one_proposal_each():
    """Three Cline task lines with no file give three reindex proposals, each writing one task file."""
    text = "# Tasks\n\n## Pending\n- [TASK007] Export - csv\n- [TASK008] Import - xlsx\n- [TASK009] Sync - nightly\n"
    store = agent(note("tasks/_index.md", text), reader=readers.CLINE, index=IndexSpec("tasks/_index.md", "cline-tasks"))
    drafts = IndexDrift().detect(context(store))
    assert [[p for p, _ in d.create] for d in drafts] == [["tasks/TASK007-export.md"], ["tasks/TASK008-import.md"], ["tasks/TASK009-sync.md"]]
    assert all(len(build(d, store, NOW).written) <= MAX_FILES for d in drafts)


def test_a_link_to_a_note_expired_into_the_archive_is_not_guessed_onto_a_namesake():
    """A link to an archived, expired login.md is unlinked (held), naming auth/login.md as a note of its name rather than repointing to it."""
    store = dataclasses.replace(
        agent(note("a.md", "See [login](login.md).\n"), note("auth/login.md", "Login.\n")),
        archive_notes={"memory.dreamd-archive/login.md": note("memory.dreamd-archive/login.md", "---\nstatus: expired\n---\nOld login.\n")},
    )
    (draft,) = relinks(store)
    assert dict(draft.relink) == {"login.md": None}
    assert "login.md was retired into the archive and names no note that replaced it; auth/login.md has its name, if that is what was meant" in draft.rationale


def test_an_entry_whose_note_the_index_should_not_list_is_dropped_saying_so():
    """An entry re-spelling a note outside what the index lists is dropped, naming the note and why it is not repointed."""
    index, spec = memory_index("- [Other](Other.md)")
    store = dataclasses.replace(view(index, note("other.md", "x\n"), note("notes/a.md", "a\n"), index=spec, scope="notes/*.md"), reader=readers.CLAUDE_CODE)
    (draft,) = IndexDrift().detect(context(store))
    assert draft.index_drop == ("Other.md",) and draft.index_repoint == ()
    assert "Other.md (the note is other.md, which the index does not list)" in draft.rationale
