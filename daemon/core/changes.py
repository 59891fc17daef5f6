"""Turn a Draft into concrete files: retire marks, archive moves, merged text, index edits.

Pure: the same (draft, view, now) always gives the same bytes. The change key is built
from a second run at a fixed time, so stamps like ``valid_to`` do not make a rejected
change look new the next day.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import Any

from daemon.core import frontmatter, index
from daemon.core.errors import ValidationError
from daemon.core.hashing import hash_bytes
from daemon.core.notes import EXPIRED, SUPERSEDED
from daemon.core.proposals import MERGE, REINDEX, SOFT_EXPIRE, Change, Draft, change_key
from daemon.core.view import ARCHIVE, StoreView

KEY_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)


def retire_marks(draft: Draft, now: dt.datetime) -> dict[str, Any]:
    """The frontmatter keys a retired note gets."""
    if draft.kind == SOFT_EXPIRE:
        marks: dict[str, Any] = {"status": EXPIRED, "expired_at": now, "valid_to": now}
        if draft.reason:
            marks["expired_reason"] = draft.reason
        return marks
    assert draft.survivor is not None
    return {"status": SUPERSEDED, "superseded_by": draft.survivor, "valid_to": now}


def archive_path(view: StoreView, path: str, taken: set[str]) -> str:
    """Where a retired note goes in the archive; never overwrites an earlier one."""
    candidate = posixpath.join(view.archive_dir, path)
    stem, ext = posixpath.splitext(candidate)
    n = 1
    while candidate in view.archived or candidate in taken or candidate in view.notes:
        n += 1
        candidate = f"{stem}.{n}{ext}"
    return candidate


def build(draft: Draft, view: StoreView, now: dt.datetime, *, with_index: bool = True) -> Change:
    """Files before and after the draft; raises ValidationError when it cannot be built.

    ``with_index=False`` leaves the index edit out (the change key does not need it).
    """
    after: dict[str, bytes | None] = {}
    read: set[str] = set(draft.notes)
    for path in (*draft.notes, *draft.index_add):  # before anything reads them
        if path not in view.notes:
            raise ValidationError(f"names {path}, which is not a note of this store")

    if draft.kind == MERGE and draft.survivor_data is not None:
        assert draft.survivor is not None
        after[draft.survivor] = draft.survivor_data

    if draft.kind != REINDEX:
        marks = retire_marks(draft, now)
        moved: set[str] = set()
        for path in draft.retire:
            note = view.notes[path]
            if note.frontmatter_error:
                raise ValidationError(f"{path} has {note.frontmatter_error}; it cannot be marked")
            marked = frontmatter.set_keys(note.data, marks)
            if view.retire_mode == ARCHIVE:
                target = archive_path(view, path, moved)
                moved.add(target)
                after[path] = None
                after[target] = marked
            else:
                after[path] = marked

    new_index = _edit_index(draft, view) if with_index else None
    if new_index is not None and view.index is not None:
        read.add(view.index.path)
        after[view.index.path] = new_index
    return _as_change(view, read, after)


def _edit_index(draft: Draft, view: StoreView) -> bytes | None:
    note = view.index_note
    if note is None or view.index is None:
        return None
    drop = set(draft.retire) | set(draft.index_drop)
    parsed = view.parsed_index
    lines = index.drop_lines(view.index, parsed, drop) if drop else parsed.lines
    adds = [(p, view.notes[p].title, view.notes[p].description) for p in draft.index_add]
    if lines is parsed.lines and not adds:
        return None
    edited = index.add(view.index, "".join(lines), adds)
    return edited.encode("utf-8")


def _as_change(view: StoreView, read: set[str], after: dict[str, bytes | None]) -> Change:
    data: dict[str, bytes] = {}
    base: dict[str, str | None] = {}
    result: dict[str, str | None] = {}
    for path in sorted(read | set(after)):
        note = view.notes.get(path)
        base[path] = note.hash if note else view.other_files.get(path)
        if note:
            data[note.hash] = note.data
        if path in after:
            new = after[path]
            result[path] = None if new is None else hash_bytes(new)
            if new is not None:
                data[result[path]] = new  # type: ignore[index]
        else:
            result[path] = base[path]
    return Change(base=base, result=result, data=data)


def key_of(draft: Draft, view: StoreView) -> str:
    """The draft's change key: content at a fixed time, the index left out.

    The index is left out because unrelated index edits must not resurrect a rejected
    merge; reindex drafts are keyed on the entries they add and drop instead.
    """
    canonical = build(draft, view, KEY_EPOCH, with_index=False)
    skip = {view.index.path} if view.index else set()
    base = {p: h for p, h in canonical.base.items() if p not in skip}
    result = {p: h for p, h in canonical.result.items() if p not in skip}
    extra = tuple(f"-{p}" for p in sorted(draft.index_drop)) + tuple(f"+{p}" for p in sorted(draft.index_add))
    return change_key(draft.kind, base, result, extra)
