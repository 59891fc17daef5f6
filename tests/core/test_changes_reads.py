"""What a change does to what the agent reads: references rewritten or held as dangling, index
entries in their section and within the agent's load limit."""

from __future__ import annotations

import datetime as dt

from daemon.core.changes import build, key_of
from daemon.core.hashing import hash_bytes
from daemon.core.index import BY_STATUS, BY_TYPE, IndexSpec, LoadLimit
from daemon.core.notes import Note
from daemon.core.proposals import MERGE, REINDEX, RELINK, RELOCATE, SOFT_EXPIRE, SUPERSEDE, Draft
from daemon.core.reader import ARCHIVE, MARKDOWN, MEM, WIKI, Listing, ReaderModel
from daemon.core.view import StoreView

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
AGENT = ReaderModel("agent", Listing(recursive=True, dot_dirs=True), (MARKDOWN, MEM, WIKI))


def store(files: dict[str, str], *, index: IndexSpec | None = None, reader: ReaderModel = AGENT) -> StoreView:
    notes = {p: Note(p, t.encode(), hash_bytes(t.encode())) for p, t in files.items()}
    return StoreView(notes=notes, index=index, retire_mode=ARCHIVE, archive_dir="memories.dreamd-archive", reader=reader)


def draft(kind: str, **kw) -> Draft:  # noqa: ANN003
    return Draft(kind=kind, source="detector:test@1", confidence=0.9, title="t", rationale="r", **kw)


def text_after(change, path: str) -> str:  # noqa: ANN001
    return change.after(path).decode()


SERENA = {
    "auth/login.md": "# Login\nPosts to /api/session.\n",
    "auth/login_copy.md": "# Login\nPosts to /api/session.\n",
    "core.md": "# Core\nRead `mem:auth/login_copy`, then [the flow](auth/login_copy.md#steps).\n",
    "auth/notes.md": "Same as [copy](login_copy.md) and [[login_copy]].\n",
}


def test_references_to_a_merged_away_note_point_at_the_survivor_in_their_own_syntax():
    """Every live note citing the retired copy cites the survivor after the merge; only the target characters change."""
    change = build(draft(MERGE, retire=("auth/login_copy.md",), survivor="auth/login.md"), store(SERENA), NOW)
    assert text_after(change, "core.md") == "# Core\nRead `mem:auth/login`, then [the flow](auth/login.md#steps).\n"
    assert text_after(change, "auth/notes.md") == "Same as [copy](login.md) and [[login]].\n"
    assert change.reads.rewritten == 4 and change.reads.dangling == () and change.reads.holds == ()


def test_a_reference_in_a_pinned_note_is_left_and_said_to_dangle():
    """A pinned note is never rewritten: its reference to the retired note is recorded as dangling, which holds the proposal."""
    files = {**SERENA, "core.md": "---\npinned: true\n---\nRead `mem:auth/login_copy`.\n"}
    change = build(draft(MERGE, retire=("auth/login_copy.md",), survivor="auth/login.md"), store(files), NOW)
    assert "core.md" not in change.written
    (d,) = [d for d in change.reads.dangling if d.source == "core.md"]
    assert (d.line, d.syntax, d.written, d.why) == (4, "mem", "auth/login_copy", "it sits in core.md, which is pinned")
    assert change.reads.holds[0].startswith("leaves 1 dangling reference")


def test_an_expired_note_that_others_cite_leaves_dangling_references():
    """Nothing replaces an expired note: references to it are held as dangling, not rewritten or dropped."""
    change = build(draft(SOFT_EXPIRE, retire=("auth/login_copy.md",), reason="old"), store(SERENA), NOW)
    assert {d.source for d in change.reads.dangling} == {"core.md", "auth/notes.md"}
    assert all(d.why == "nothing replaces auth/login_copy.md" for d in change.reads.dangling)
    assert change.written == ["auth/login_copy.md", "memories.dreamd-archive/auth/login_copy.md"]


def test_a_supersession_repoints_references_at_the_newer_note():
    """The older note's citers now cite the newer one."""
    files = {"old.md": "Old plan.\n", "new.md": "New plan.\n", "index-of-plans.md": "See [plan](old.md).\n"}
    change = build(draft(SUPERSEDE, retire=("old.md",), survivor="new.md"), store(files), NOW)
    assert text_after(change, "index-of-plans.md") == "See [plan](new.md).\n"


def test_lines_a_merge_moves_keep_their_links_right_from_the_survivors_folder():
    """A relative link moved from a note in another folder is rewritten to mean, from the survivor, what it meant where it was written."""
    files = {"a/x.md": "Alpha.\nSee [y](y.md).\n", "a/y.md": "Why.\n", "b/x.md": "Alpha.\n"}
    merged = b"Alpha.\n\n<!-- merged from a/x.md by dreamd -->\nSee [y](y.md).\n"
    change = build(draft(MERGE, retire=("a/x.md",), survivor="b/x.md", survivor_data=merged), store(files), NOW)
    assert text_after(change, "b/x.md") == "Alpha.\n\n<!-- merged from a/x.md by dreamd -->\nSee [y](../a/y.md).\n"
    assert change.reads.dangling == ()


def test_a_merged_copy_naming_itself_keeps_its_id_as_words_after_the_merge():
    """A line moved into the survivor that cites the merged-away note (its own title id) keeps the id as words: citing the survivor would be a link to itself."""
    reader = AGENT._replace(links=(MARKDOWN, "task-id"))
    files = {"tasks/TASK012-cache.md": "# [TASK012] - Cache\nCache images.\n", "tasks/TASK021-cache.md": "# [TASK021] - Cache images\nCache images.\n"}
    merged = b"# [TASK012] - Cache\nCache images.\n\n<!-- merged from tasks/TASK021-cache.md by dreamd -->\n# [TASK021] - Cache images\n"
    change = build(draft(MERGE, retire=("tasks/TASK021-cache.md",), survivor="tasks/TASK012-cache.md", survivor_data=merged), store(files, reader=reader), NOW)
    assert text_after(change, "tasks/TASK012-cache.md").endswith("# TASK021 - Cache images\n")
    assert change.reads.dangling == ()


def test_a_link_that_already_dangled_in_the_merged_away_note_is_not_new():
    """Moving a line whose link pointed at nothing before the merge leaves no new dangling reference to hold the merge for."""
    files = {"a.md": "Alpha.\nSee [gone](gone.md).\n", "b.md": "Alpha.\n"}
    merged = b"Alpha.\n\n<!-- merged from a.md by dreamd -->\nSee [gone](gone.md).\n"
    change = build(draft(MERGE, retire=("a.md",), survivor="b.md", survivor_data=merged), store(files), NOW)
    assert change.reads.dangling == () and change.reads.holds == ()


def test_relink_respells_or_unlinks_by_what_the_references_point_at():
    """A relink maps a gone target to its replacement, or to None to keep only the words."""
    files = {"a.md": "See [old](old.md) and [gone](gone.md).\n", "new.md": "New.\n"}
    change = build(draft(RELINK, relink=(("old.md", "new.md"), ("gone.md", None))), store(files), NOW)
    assert text_after(change, "a.md") == "See [old](new.md) and gone.\n"
    assert (change.reads.rewritten, change.reads.unlinked) == (1, 1)
    assert change.reads.holds == ("unlinks 1 reference whose target is unknown",)


def test_relocate_moves_bytes_unchanged_and_an_old_archive_keeps_its_layout():
    """A relocate writes each note into the archive root byte for byte; an old .dreamd-archive/ path loses only its prefix."""
    files = {".dreamd-archive/auth/old.md": "---\nstatus: superseded\n---\nOld.\n", "live.md": "Live.\n"}
    view = store(files)
    change = build(draft(RELOCATE, retire=(".dreamd-archive/auth/old.md",)), view, NOW)
    assert change.result[".dreamd-archive/auth/old.md"] is None
    assert change.result["memories.dreamd-archive/auth/old.md"] == view.notes[".dreamd-archive/auth/old.md"].hash


def test_reference_rewrites_do_not_enter_the_change_key():
    """An edit to a citing note does not make a rejected merge look new: the key is the merged notes'."""
    one = key_of(draft(MERGE, retire=("auth/login_copy.md",), survivor="auth/login.md"), store(SERENA))
    edited = {**SERENA, "core.md": SERENA["core.md"] + "More.\n"}
    assert key_of(draft(MERGE, retire=("auth/login_copy.md",), survivor="auth/login.md"), store(edited)) == one


# indexes --------------------------------------------------------------------------------

CLAUDE_INDEX = IndexSpec("MEMORY.md", "links", limit=LoadLimit(lines=200, chars=25_000, trimmed=True, cut_at_line=True), line_chars=150, sections=BY_TYPE)


def _memory(lines: int) -> str:
    """A MEMORY.md of ``lines`` lines: a User section first, then Project with the rest."""
    head = "# Memory\n\n## User\n- [Me](me.md) — who I am\n\n## Project\n"
    return head + "".join(f"- [Note {i}](n{i}.md) — what note {i} says\n" for i in range(lines - 6))


def _notes(count: int) -> dict[str, str]:
    return {f"n{i}.md": f"---\nname: Note {i}\ntype: project\n---\nNote {i}.\n" for i in range(count)}


def test_a_reindex_that_would_push_entries_past_the_load_limit_is_held():
    """A 198-line MEMORY.md given three entries in its first section would push its last entry past line 200: the proposal says so and is held."""
    files = {"MEMORY.md": _memory(198), **_notes(192), "me.md": "Me.\n"}
    files.update({f"new{i}.md": f"---\nname: New {i}\ntype: user\n---\nNew {i}.\n" for i in range(3)})
    change = build(draft(REINDEX, index_add=("new0.md", "new1.md", "new2.md")), store(files, index=CLAUDE_INDEX), NOW)
    edited = text_after(change, "MEMORY.md")
    assert edited.count("\n") == 201
    assert change.reads.index_limit == "200 lines or 25,000 characters"
    assert (change.reads.unloaded_before, change.reads.unloaded_after) == (0, 1)
    assert edited.split("\n")[3:7] == ["- [Me](me.md) — who I am", "- [New 0](new0.md)", "- [New 1](new1.md)", "- [New 2](new2.md)"]
    assert change.reads.pushed_out == ("n191.md",)
    assert change.reads.holds == ("pushes 1 index entry past what the agent loads (200 lines or 25,000 characters)",)


def test_an_entry_that_fits_only_without_its_hook_is_added_without_it():
    """Near a character limit, a new entry first loses its hook, at no cost to the others."""
    spec = IndexSpec("MEMORY.md", "links", limit=LoadLimit(chars=120))
    files = {"MEMORY.md": "- [A](a.md) — alpha notes\n", "a.md": "A.\n", "b.md": "---\ndescription: " + "long words " * 20 + "\n---\nB.\n"}
    change = build(draft(REINDEX, index_add=("b.md",)), store(files, index=spec), NOW)
    assert text_after(change, "MEMORY.md") == "- [A](a.md) — alpha notes\n- [b](b.md)\n"
    assert change.reads.holds == () and change.reads.hooks_shortened == 0  # no words the agent read were cut


def test_new_entries_go_into_the_section_of_their_type_and_are_never_cut_mid_word():
    """A feedback note is filed under Feedback, its hook shortened at a word boundary to the agent's line length."""
    files = {
        "MEMORY.md": "# Memory\n\n## Feedback\n- [Tests](t.md) — use real databases\n\n## Project\n- [Plan](p.md) — the plan\n",
        "t.md": "T.\n", "p.md": "P.\n",
        "f.md": "---\nname: No mocks\nmetadata:\n  type: feedback\ndescription: " + "never mock the database in integration tests because " * 4 + "\n---\nF.\n",
    }  # fmt: skip
    change = build(draft(REINDEX, index_add=("f.md",)), store(files, index=CLAUDE_INDEX), NOW)
    lines = text_after(change, "MEMORY.md").split("\n")
    assert lines[4].startswith("- [No mocks](f.md) — never mock the database") and lines[4].endswith("…")
    assert len(lines[4]) <= 150 and lines[5] == "" and lines[6] == "## Project"
    hook = lines[4].split(" — ", 1)[1].removesuffix("…")
    assert ("never mock the database in integration tests because " * 4).startswith(hook)


def test_cline_tasks_go_under_their_status_without_repeating_the_id():
    """A Pending task is filed under Pending as `- [TASKnnn] Name`, not appended under the last section."""
    spec = IndexSpec("tasks/_index.md", "cline-tasks", sections=BY_STATUS)
    files = {
        "tasks/_index.md": "# Tasks Index\n\n## In Progress\n- [TASK001] Setup\n\n## Pending\n- [TASK002] Search\n\n## Completed\n\n## Abandoned\n- [TASK004] Old idea\n",
        "tasks/TASK001-setup.md": "# [TASK001] - Setup\n**Status:** In Progress\n", "tasks/TASK002-search.md": "# [TASK002] - Search\n**Status:** Pending\n",
        "tasks/TASK004-old.md": "# TASK004: Old idea\n**Status:** Abandoned\n",
        "tasks/TASK005-cache.md": "# [TASK005] - Add a cache\n\n**Status:** Pending  \n**Added:** 2026-05-01\n\n## Original Request\nCache the search results for an hour.\n",
    }  # fmt: skip
    change = build(draft(REINDEX, index_add=("tasks/TASK005-cache.md",)), store(files, index=spec), NOW)
    assert text_after(change, "tasks/_index.md").split("## Completed")[0].endswith(
        "## Pending\n- [TASK002] Search\n- [TASK005] Add a cache - Cache the search results for an hour.\n\n"
    )


def test_a_merge_keeps_the_survivor_listed_when_only_the_copy_was():
    """When the index listed only the note that retires, the survivor takes its place in the index."""
    spec = IndexSpec("MEMORY.md", "links")
    files = {"MEMORY.md": "- [Copy](copy.md) — ports\n", "copy.md": "Ports.\n", "main.md": "---\nname: Ports\n---\nPorts.\n"}
    change = build(draft(MERGE, retire=("copy.md",), survivor="main.md"), store(files, index=spec), NOW)
    assert text_after(change, "MEMORY.md") == "- [Ports](main.md)\n"  # its only line repeats its title: no hook


def test_an_index_over_its_limit_is_compacted_without_losing_an_entry():
    """index_compact shortens the longest entry lines at word boundaries until every entry is loaded."""
    spec = IndexSpec("MEMORY.md", "links", limit=LoadLimit(chars=8000))
    body = "".join(f"- [Note {i}](n{i}.md) — " + "a rather long hook that goes on " * 4 + "\n" for i in range(60))
    files = {"MEMORY.md": body, **{f"n{i}.md": "x\n" for i in range(60)}}
    view = store(files, index=spec)
    assert view.index.limit is not None and not view.index.limit.fits(body)
    change = build(draft(REINDEX, index_compact=True), view, NOW)
    edited = text_after(change, "MEMORY.md")
    assert spec.limit.fits(edited) and all(f"](n{i}.md)" in edited for i in range(60))
    assert change.reads.unloaded_before > 0 and change.reads.unloaded_after == 0 and change.reads.hooks_shortened == 60


def test_a_view_with_another_reader_checks_nothing_it_does_not_declare():
    """A reader without a syntax finds no reference in it: mem: is plain text to Claude Code."""
    reader = AGENT._replace(links=(MARKDOWN, WIKI))
    change = build(draft(MERGE, retire=("auth/login_copy.md",), survivor="auth/login.md"), store(SERENA, reader=reader), NOW)
    assert "mem:auth/login_copy" in text_after(change, "core.md")
