"""The change builder's side of repoints: a relink limited to one note, an index entry repointed
in place, and the keys that tell split proposals apart."""

from __future__ import annotations

import datetime as dt

from daemon.core.changes import build, key_of
from daemon.core.hashing import hash_bytes
from daemon.core.index import IndexSpec, Parsed, repoint_lines
from daemon.core.links import Names, fold
from daemon.core.notes import Note
from daemon.core.proposals import REINDEX, RELINK, Draft, ReadFacts
from daemon.core.reader import ARCHIVE, MARKDOWN, Listing, ReaderModel
from daemon.core.view import StoreView

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
SPEC = IndexSpec("MEMORY.md", "links")
AGENT = ReaderModel("agent", Listing(recursive=True, dot_dirs=False), (MARKDOWN,))


def store(files: dict[str, str], *, index: IndexSpec | None = None) -> StoreView:
    notes = {p: Note(p, t.encode(), hash_bytes(t.encode())) for p, t in files.items()}
    return StoreView(notes=notes, index=index, retire_mode=ARCHIVE, archive_dir="notes.dreamd-archive", reader=AGENT)


def draft(kind: str, **kw) -> Draft:  # noqa: ANN003
    return Draft(kind=kind, source="detector:test@1", confidence=0.9, title="t", rationale="r", **kw)


def text_after(change, path: str) -> str:  # noqa: ANN001
    return change.after(path).decode()


def test_a_relink_limited_to_one_note_rewrites_only_that_note():
    """relink_in names the referring note: the same dangling target in another note is left for that note's own proposal."""
    files = {"a.md": "[x](old.md)\n", "b.md": "[y](old.md)\n", "new/old.md": "N.\n"}
    change = build(draft(RELINK, relink=(("old.md", "new/old.md"),), relink_in=("b.md",)), store(files), NOW)
    assert change.written == ["b.md"] and text_after(change, "b.md") == "[y](new/old.md)\n"


def test_an_index_entry_is_repointed_keeping_its_words_and_the_other_links_of_its_line():
    """Only the link's target changes: the title, the hook and another link on the line stay byte for byte."""
    text = "# Memory\n- [BGA](project-bga.md) — player fields; see [Elo](elo.md)\n- [Other](other.md)\n"
    lines = repoint_lines(SPEC, Parsed.of(SPEC, text, []), {"project-bga.md": "notes/project_bga.md"})
    assert "".join(lines) == "# Memory\n- [BGA](notes/project_bga.md) — player fields; see [Elo](elo.md)\n- [Other](other.md)\n"


def test_a_reindex_repoints_and_drops_in_one_edit():
    """A repoint and a drop of another line of the same index apply together."""
    files = {"MEMORY.md": "# Memory\n- [A](a-note.md) — hook a\n- [Gone](gone.md)\n", "a_note.md": "A.\n"}
    change = build(draft(REINDEX, index_repoint=(("a-note.md", "a_note.md"),), index_drop=("gone.md",)), store(files, index=SPEC), NOW)
    assert text_after(change, "MEMORY.md") == "# Memory\n- [A](a_note.md) — hook a\n"


def test_split_proposals_have_keys_of_their_own():
    """Two relinks of one target in two notes, and two reindexes writing two task files, key apart; the same draft keys alike."""
    files = {"a.md": "[x](old.md)\n", "b.md": "[y](old.md)\n", "new/old.md": "N.\n"}
    view = store(files)
    one, two = (draft(RELINK, relink=(("old.md", "new/old.md"),), relink_in=(p,)) for p in ("a.md", "b.md"))
    assert key_of(one, view) != key_of(two, view) and key_of(one, view) == key_of(draft(RELINK, relink=(("old.md", "new/old.md"),), relink_in=("a.md",)), view)
    tasks = store({"tasks/_index.md": "- [TASK1] a\n- [TASK2] b\n"}, index=IndexSpec("tasks/_index.md", "cline-tasks"))
    first, second = (draft(REINDEX, create=((f"tasks/TASK{i}-x.md", b"# x\n"),)) for i in (1, 2))
    assert key_of(first, tasks) != key_of(second, tasks)


def test_a_held_merge_says_so_in_its_facts_and_keeps_it_through_storage():
    """Draft.held becomes a `holds` reason, and survives the facts' JSON round trip."""
    facts = ReadFacts(held=("merges distinct records: a and b",))
    again = ReadFacts.from_dict(facts.as_dict())
    assert again.holds == ("merges distinct records: a and b",) and facts.as_dict()["held"] == ["merges distinct records: a and b"]


def test_a_wiki_spelling_close_to_what_was_written_is_preferred():
    """Of the names that mean a note (frontmatter name, stem), the one spelled like the written name wins."""
    names = Names(frozenset({"deploy_steps.md"}), {"deploy_steps.md": "Release checklist"})
    assert names.wiki_name("deploy_steps.md") == "Release checklist"
    assert names.wiki_name("deploy_steps.md", like="Deploy-Steps") == "deploy_steps"
    assert fold(" Deploy__Steps-x ") == fold("deploy steps x") == "deploy-steps-x"
