"""Validation: the invariants a proposal must keep before it may be stored as pending.

Each check returns a reason string when the proposal must be refused. A refused proposal
is recorded with its reason (a planner's error rate), never silently dropped.
"""

from __future__ import annotations

import posixpath
import re

from daemon.core.index import task_id
from daemon.core.proposals import MERGE, REINDEX, RELINK, RELOCATE, Change, Draft
from daemon.core.view import DEFAULT_ARCHIVE_DIR, StoreView

_DRIVE = re.compile(r"^[A-Za-z]:")


def unsafe_path_reason(path: str) -> str | None:
    """Why a store-relative path is not acceptable, or None when it is."""
    if not path or "\0" in path or "\\" in path:
        return f"path {path!r} is empty or holds a NUL or backslash"
    if path.startswith("/") or _DRIVE.match(path):
        return f"path {path!r} is absolute"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts) or posixpath.normpath(path) != path:
        return f"path {path!r} is not a plain path inside the store"
    return None


def refusal(draft: Draft, change: Change, view: StoreView) -> str | None:
    """The first invariant the change breaks, or None when it may be proposed."""
    for check in (_paths_safe, _merge_size, _pinned_untouched, _protected_kept, _retire_live, _reindex_only_index, _relink_edits_only, _relocate_moves_only, _writes_in_scope, _unread_kept_whole):
        reason = check(draft, change, view)
        if reason:
            return reason
    return None


def _paths_safe(draft: Draft, change: Change, view: StoreView) -> str | None:
    for path in (*draft.notes, *draft.index_add, *draft.index_drop, *change.result):
        reason = unsafe_path_reason(path)
        if reason:
            return reason
    return None


def _merge_size(draft: Draft, change: Change, view: StoreView) -> str | None:
    if draft.kind == MERGE and len(set(draft.notes)) < 2:
        return "a merge needs at least two notes"
    return None


def _pinned_untouched(draft: Draft, change: Change, view: StoreView) -> str | None:
    """A pinned note may be read (a merge into it) but never changed, moved or retired."""
    for path in change.result:
        note = view.notes.get(path)
        if note is not None and note.pinned and change.result[path] != change.base[path]:
            return f"{path} is pinned; no proposal may change it"
    for path in draft.retire:
        if path in view.notes and view.notes[path].pinned:
            return f"{path} is pinned; no proposal may retire it"
    return None


def _protected_kept(draft: Draft, change: Change, view: StoreView) -> str | None:
    for path in draft.retire:
        if view.is_protected(path):
            return f"{path} is a core file of this store's layout; it cannot be retired"
    return None


def _retire_live(draft: Draft, change: Change, view: StoreView) -> str | None:
    for path in draft.retire:
        if draft.kind == RELOCATE:
            in_old_archive = path.startswith(f"{DEFAULT_ARCHIVE_DIR}/") and view.archive_dir != DEFAULT_ARCHIVE_DIR
            if path in view.notes and view.notes[path].live and not in_old_archive:
                return f"{path} is live; only a retired note, or one of an old archive, may be relocated"
            continue
        if path in view.notes and not view.notes[path].live:
            return f"{path} is already {view.notes[path].status}"
        if view.is_index(path):
            return f"{path} is the store's index; it cannot be retired"
    return None


def _reindex_only_index(draft: Draft, change: Change, view: StoreView) -> str | None:
    """A reindex changes the index, and may only create notes the index names as entries."""
    if draft.kind == REINDEX:
        touched = set(change.written) - {path for path, _ in draft.create}
        if view.index is None or touched - {view.index.path}:
            return "a reindex may change the index only"
    elif draft.create and not _merge_into_new(draft):
        return f"only a reindex, or a merge into a new note, may create notes, not this {draft.kind}"
    return None


def _merge_into_new(draft: Draft) -> bool:
    """A merge whose survivor is the one note it creates (a topical merge into a new note)."""
    return draft.kind == MERGE and len(draft.create) == 1 and draft.create[0][0] == draft.survivor


def _relink_edits_only(draft: Draft, change: Change, view: StoreView) -> str | None:
    """A relink rewrites references in live notes that stay: it creates, removes or retires nothing."""
    if draft.kind != RELINK:
        return None
    for path in change.written:
        if change.base.get(path) is None or change.result.get(path) is None or view.is_index(path) or not view.is_live(path):
            return f"a relink may only rewrite references in live notes, not change {path}"
    return None


def _relocate_moves_only(draft: Draft, change: Change, view: StoreView) -> str | None:
    """A relocate moves retired notes into the archive byte for byte, and writes nothing else."""
    if draft.kind != RELOCATE:
        return None
    removed = sorted(change.base[p] or "" for p in change.written if change.result[p] is None)
    created = sorted(change.result[p] or "" for p in change.written if change.base.get(p) is None)
    others = [p for p in change.written if change.base.get(p) is not None and change.result[p] is not None and not view.is_index(p)]
    if removed != created or others:
        return "a relocate may only move notes into the archive unchanged"
    return None


def _writes_in_scope(draft: Draft, change: Change, view: StoreView) -> str | None:
    """New files may appear only in the archive folder, or as notes the agent lists and the
    index names (a reindex's records), or as the note a merge folds its notes into, which the
    agent sees and which takes over their index entries."""
    created = {path for path, _ in draft.create}
    for path in change.written:
        if change.base.get(path) is None and not path.startswith(view.archive_dir + "/"):
            if path not in created:
                return f"would create {path} outside the archive folder"
            if _merge_into_new(draft):
                if not view.reader.sees(path) or view.is_protected(path) or view.is_index(path):
                    return f"would create {path}, which the agent would not read as a note"
                continue
            if not view.reader.sees(path) or (view.index is not None and path not in view.parsed_index.by_path and not _names_it(view, path)):
                return f"would create {path}, which the agent would not list or the index does not name"
    return None


def _names_it(view: StoreView, path: str) -> bool:
    """Whether a dangling index entry names what ``path`` would be (Cline: its task id)."""
    ident = task_id(path)
    return ident is not None and any(p.rsplit("/", 1)[-1] == f"{ident}.md" for p in view.parsed_index.by_path)


def _unread_kept_whole(draft: Draft, change: Change, view: StoreView) -> str | None:
    """A note left unread may link to anything, by any name: nothing it could name is
    retired, and no reference is repointed while its names are unknown."""
    if not view.unread:
        return None
    if draft.kind == RELINK:
        return f"{len(view.unread)} note(s) could not be read in time (e.g. {min(view.unread)}); no reference is repointed until they are"
    for path in draft.retire:
        stem = path.rsplit("/", 1)[-1].removesuffix(".md").encode("utf-8")
        naming = next((p for p, note in sorted(view.unread.items()) if stem in note.data), None)
        if naming is not None:
            return f"{naming} could not be read in time and may link to {path}"
    return None
