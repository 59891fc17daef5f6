"""Validation refuses drafts that break an invariant, with a reason."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.core.changes import build
from daemon.core.errors import ValidationError
from daemon.core.hashing import hash_bytes
from daemon.core.index import IndexSpec
from daemon.core.notes import Note
from daemon.core.proposals import Draft
from daemon.core.validate import refusal, unsafe_path_reason
from daemon.core.view import StoreView

NOW = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)


def _view(files: dict[str, bytes], **kw) -> StoreView:
    return StoreView(notes={p: Note(p, b, hash_bytes(b)) for p, b in files.items()}, **kw)


def _draft(kind: str, **kw) -> Draft:
    return Draft(kind=kind, source="detector:test@1", confidence=1.0, title="t", rationale="r", **kw)


def _refusal(draft: Draft, view: StoreView) -> str | None:
    return refusal(draft, build(draft, view, NOW), view)


@pytest.mark.parametrize("path", ["../x.md", "/etc/passwd", "a/../../b.md", "a//b.md", "./a.md", "C:/x.md", "a\\b.md", ""])
def test_unsafe_paths_are_named(path):
    """Absolute, climbing and odd paths are never acceptable."""
    assert unsafe_path_reason(path)


def test_retiring_a_pinned_note_is_refused():
    """No proposal may retire a pinned note."""
    view = _view({"a.md": b"---\npinned: true\n---\nx\n", "b.md": b"y\n"})
    assert "pinned" in _refusal(_draft("supersede", survivor="b.md", retire=("a.md",)), view)


def test_merging_into_an_unchanged_pinned_note_is_allowed():
    """A pinned survivor whose bytes do not change may absorb a duplicate."""
    view = _view({"a.md": b"---\npinned: true\n---\nx\n", "b.md": b"x\n"})
    assert _refusal(_draft("merge", survivor="a.md", retire=("b.md",)), view) is None


def test_merging_new_text_into_a_pinned_note_is_refused():
    """A merge that would change a pinned survivor is refused."""
    view = _view({"a.md": b"---\npinned: true\n---\nx\n", "b.md": b"x\ny\n"})
    draft = _draft("merge", survivor="a.md", retire=("b.md",), survivor_data=b"---\npinned: true\n---\nx\ny\n")
    assert "pinned" in _refusal(draft, view)


def test_merge_of_one_note_is_refused():
    """A merge needs two distinct notes."""
    view = _view({"a.md": b"x\n"})
    assert "at least two" in _refusal(_draft("merge", survivor="a.md", retire=("a.md",)), view)


def test_naming_a_missing_note_cannot_be_built():
    """A draft about a note the store does not have is refused at build."""
    with pytest.raises(ValidationError):
        build(_draft("soft-expire", retire=("ghost.md",)), _view({"a.md": b"x\n"}), NOW)


def test_protected_core_files_are_never_retired():
    """Structural files of a layout (Cline's core files) stay."""
    view = _view({"progress.md": b"x\n"}, protected=("progress.md",))
    assert "core file" in _refusal(_draft("soft-expire", retire=("progress.md",)), view)


def test_reindex_touching_a_note_is_refused():
    """A reindex that would write anything but the index is refused."""
    view = _view({"MEMORY.md": b"- [a](a.md)\n", "a.md": b"x\n"}, index=IndexSpec("MEMORY.md", "links"))
    draft = _draft("reindex", index_drop=("a.md",))
    change = build(draft, view, NOW)
    tampered = type(change)(base={**change.base, "a.md": view.notes["a.md"].hash}, result={**change.result, "a.md": None}, data=change.data)
    assert refusal(draft, tampered, view) == "a reindex may change the index only"


def test_archive_mode_moves_and_never_overwrites():
    """Retiring into the archive creates a new file beside an earlier archived one."""
    view = _view({"a.md": b"x\n", "b.md": b"x\n"}, retire_mode="archive", archived=frozenset({".dreamd-archive/b.md"}))
    change = build(_draft("merge", survivor="a.md", retire=("b.md",)), view, NOW)
    assert change.result["b.md"] is None and ".dreamd-archive/b.2.md" in change.result
    assert _refusal(_draft("merge", survivor="a.md", retire=("b.md",)), view) is None


def test_index_scope_uses_the_store_glob_rules():
    """A `tasks/**/*.md` scope lists a task directly under tasks/ as well as in subfolders."""
    from daemon.core.index import IndexSpec as Spec

    view = _view({"tasks/_index.md": b"# Tasks\n", "tasks/TASK006-x.md": b"x\n", "tasks/DONE/TASK001-y.md": b"y\n", "notes.md": b"z\n"},
                 index=Spec("tasks/_index.md", "cline-tasks", lists="tasks/**/*.md"))
    assert [n.path for n in view.live_notes() if view.should_list(n)] == ["tasks/DONE/TASK001-y.md", "tasks/TASK006-x.md"]


def test_a_change_creating_a_file_outside_the_archive_is_refused():
    """New files may appear only in the archive folder: a merge that also writes new.md is refused."""
    view = _view({"a.md": b"x\n", "b.md": b"x\n"}, retire_mode="archive")
    draft = _draft("merge", survivor="a.md", retire=("b.md",))
    change = build(draft, view, NOW)
    assert refusal(draft, change, view) is None
    extra = b"planted\n"
    tampered = type(change)(base={**change.base, "new.md": None}, result={**change.result, "new.md": hash_bytes(extra)}, data={**change.data, hash_bytes(extra): extra})
    assert refusal(draft, tampered, view) == "would create new.md outside the archive folder"


def test_an_index_entry_for_a_missing_note_cannot_be_built():
    """build checks index_add like the notes: a refusal, not a KeyError in a pass's thread."""
    view = _view({"MEMORY.md": b"- [a](a.md)\n", "a.md": b"x\n"}, index=IndexSpec("MEMORY.md", "links"))
    with pytest.raises(ValidationError, match="names ghost.md, which is not a note"):
        build(_draft("reindex", index_add=("ghost.md",)), view, NOW)
