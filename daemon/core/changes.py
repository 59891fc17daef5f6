"""Turn a Draft into concrete files: retire marks, archive moves, merged text, references
rewritten to the surviving note, index edits within the agent's load limit.

A Cline task line is a person's words: when a merge or supersede folds the task it names
into another file, the line is kept for the survivor (its id respelled, filed under the
survivor's status) rather than dropped and written anew. Retiring a task file whose id
another live file has is held for a person (``ReadFacts.held``).

Pure: the same (draft, view, now) always gives the same bytes. The change key is built
from a second run at a fixed time, so stamps like ``valid_to`` do not make a rejected
change look new the next day.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import posixpath
from typing import Any

from daemon.core import frontmatter, index, references
from daemon.core.errors import ValidationError
from daemon.core.hashing import hash_bytes
from daemon.core.index import task_id
from daemon.core.notes import EXPIRED, SUPERSEDED, Note
from daemon.core.proposals import MERGE, RELINK, RELOCATE, RETIRING, SOFT_EXPIRE, Change, Draft, ReadFacts, change_key
from daemon.core.reader import ARCHIVE
from daemon.core.view import DEFAULT_ARCHIVE_DIR, StoreView

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
    """Where a retired note goes in the archive; never overwrites an earlier one. A note of
    an old archive inside the notes folder keeps its place within the archive."""
    legacy = f"{DEFAULT_ARCHIVE_DIR}/"
    inner = path[len(legacy) :] if path.startswith(legacy) and view.archive_dir != DEFAULT_ARCHIVE_DIR else path
    candidate = posixpath.join(view.archive_dir, inner)
    stem, ext = posixpath.splitext(candidate)
    n = 1
    while candidate in view.archived or candidate in taken or candidate in view.notes:
        n += 1
        candidate = _fitting_name(stem, f".{n}{ext}")
    return candidate


NAME_MAX = 255  # bytes in one file name, on every file system a store lives on


def _fitting_name(stem: str, tail: str) -> str:
    """``stem + tail``, the last component cut (at a character) so it stays a legal file name."""
    folder, _, name = stem.rpartition("/")
    room = NAME_MAX - len(tail.encode("utf-8"))
    name = name.encode("utf-8")[:room].decode("utf-8", "ignore")
    return f"{folder}/{name}{tail}" if folder else f"{name}{tail}"


def build(draft: Draft, view: StoreView, now: dt.datetime, *, with_index: bool = True) -> Change:
    """Files before and after the draft; raises ValidationError when it cannot be built.

    A retired note's references in other live notes are rewritten to its replacement, and
    the index keeps within what its agent loads; ``Change.reads`` says what could not be
    kept. ``with_index=False`` leaves the index edit out (the change key does not need it).
    """
    after: dict[str, bytes | None] = {}
    read: set[str] = set(draft.notes)
    created = {path for path, _ in draft.create}
    for path in (*draft.notes, *draft.index_add):  # before anything reads them
        if path not in view.notes and path not in created:
            raise ValidationError(f"names {path}, which is not a note of this store")

    if draft.kind == MERGE and draft.survivor_data is not None:
        assert draft.survivor is not None
        after[draft.survivor] = draft.survivor_data
    for path, data in draft.create:
        if path in view.notes or path in view.other_files:
            raise ValidationError(f"would create {path}, which exists already")
        after[path] = data

    gone: set[str] = set()
    if draft.kind in RETIRING or draft.kind == RELOCATE:
        gone = set(draft.retire)
        _retire(draft, view, now, after)

    moved = tuple(draft.retire) if draft.kind == MERGE and draft.survivor_data is not None else ()
    if draft.kind == RELINK:
        kept = references.keep(view, after, gone, dict(draft.relink), by_key=True, only=frozenset(draft.relink_in) or None)
    else:
        replaced = {p: draft.survivor for p in gone} if draft.kind in RETIRING else {}
        kept = references.keep(view, after, gone, replaced, moved_from=moved)
    after.update(kept.written)
    read |= set(kept.written)
    dangling = kept.dangling + references.newly_dangling(view, after, gone, moved)

    index_facts: dict[str, Any] = {}
    if with_index and view.index is not None and view.index_note is not None:
        edited, index_facts = _edit_index(draft, view, gone)
        if edited is not None:
            read.add(view.index.path)
            after[view.index.path] = edited
    held = draft.held + _shared_task_ids(view, gone)
    reads = ReadFacts(rewritten=kept.rewritten, unlinked=kept.unlinked, dangling=tuple(dangling), held=held, **index_facts)
    return _as_change(view, read, after, reads)


def _shared_task_ids(view: StoreView, gone: set[str]) -> tuple[str, ...]:
    """Why only a person may retire a Cline task file whose id another live file has: which
    file the index line and every ``[TASKnnn]`` meant, and whether the files are one task,
    are not in the files (the pass names them as a finding, ``duplicate-task-id``)."""
    found = []
    for ident, paths in sorted(view.shared_task_ids.items()):
        retired = [p for p in paths if p in gone]
        if retired:
            found.append(
                f"retires {', '.join(retired)} of the task files that share the id {ident} ({', '.join(paths)}): "
                f"whether they are one task, and which one [{ident}] meant, is for a person to say"
            )
    return tuple(found)


def _retire(draft: Draft, view: StoreView, now: dt.datetime, after: dict[str, bytes | None]) -> None:
    """Mark each retired note (a relocated one is already marked) and move it to the archive."""
    marks = retire_marks(draft, now) if draft.kind != RELOCATE else {}
    moved: set[str] = set()
    for path in draft.retire:
        note = view.notes[path]
        if marks and note.frontmatter_error:
            raise ValidationError(f"{path} has {note.frontmatter_error}; it cannot be marked")
        marked = frontmatter.set_keys(note.data, marks) if marks else note.data
        if view.retire_mode == ARCHIVE or draft.kind == RELOCATE:
            target = archive_path(view, path, moved)
            moved.add(target)
            after[path] = None
            after[target] = marked
        else:
            after[path] = marked


def _edit_index(draft: Draft, view: StoreView, gone: set[str]) -> tuple[bytes | None, dict[str, Any]]:
    """The index without the retired notes' entries and with the added ones, each in its
    section, kept within the agent's load limit as far as shortening hooks can keep it.

    The edit is made on the index's lines, and its bytes are the index's own bytes but for
    the lines it changed (``Parsed.encode``): every proposal of a pass edits the same index.
    """
    spec, note = view.index, view.index_note
    assert spec is not None and note is not None
    parsed = view.parsed_index
    taken = _taken_over(draft, view, gone)
    drop = (gone - taken) | set(draft.index_drop)
    moves = dict(draft.index_repoint)
    lines = index.repoint_lines(spec, parsed, moves) if moves else parsed.lines
    lines = index.drop_lines(spec, parsed, drop, lines) if drop else lines
    lines = _take_over(draft, view, taken, lines) if taken else lines
    adds = [new_entry(view, p, _note_of(draft, view, p)) for p in dict.fromkeys((*draft.index_add, *(() if taken else _survivor_entry(draft, view, gone))))]
    if lines is parsed.lines and not adds and not draft.index_compact:
        return None, {}
    shortened, head = 0, ""
    limit = spec.limit
    widths = index.COMPACT_WIDTHS if draft.index_compact else ()
    dropped = (parsed if lines is parsed.lines else index.Parsed.of(spec, "".join(lines), view.notes)) if widths else None
    for width in (None, *widths):
        if width is not None:
            assert dropped is not None
            compacted, shortened = index.compact(spec, dropped.text, view.notes, width, dropped)
            trial = compacted.splitlines(keepends=True)
        else:
            trial = lines
        edited = index.add_lines(spec, trial, adds)
        if limit is None:
            break
        head = limit.head(edited)  # what the agent loads of it: the rest of the text is not joined
        if limit.fits(head):
            break
        bare = index.add_lines(spec, trial, adds, hooks=False)  # new entries without their hooks: nothing lost
        if adds and limit.fits(bare_head := limit.head(bare)):
            edited, head = bare, bare_head
            break
    data = parsed.encode(edited)
    if data == note.data or (parsed.data is None and "".join(edited) == parsed.text):  # not UTF-8: its text is what is kept
        return None, {}
    return data, _index_facts(spec, view, head, drop | set(moves), adds, shortened, set(moves.values()))


def _index_facts(spec: index.IndexSpec, view: StoreView, after: str, dropped: set[str], added: list[index.NewEntry], shortened: int, repointed: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:  # noqa: PLR0913
    """The index against its load limit before and after the change. Only the loaded part of
    the new text is parsed, and not even that when it is the old loaded part (the edit was
    below it); the old index's figures come from the view: an index can be far longer than
    what the agent loads, and every proposal of a pass edits it. A repointed entry counts
    as its old path dropped and its new one (``repointed``) added."""
    limit = spec.limit
    if limit is None:
        return {"hooks_shortened": shortened}
    facts: dict[str, Any] = {"index_limit": limit.describe(), "hooks_shortened": shortened}
    if limit.fits(after) and view.index_fits:
        return facts
    listed, seen_before = view.listed_paths, view.index_seen
    part = index.loaded(spec, after)
    seen_after = seen_before if part == view.index_loaded else {e.path for e in index.entries(spec, part, view.notes)}
    # the entries kept are every listed one but those dropped: counted from the few dropped
    # and the few loaded, never a copy of the listed ones (10,000 of them, per proposal)
    kept, kept_seen = len(listed) - len(listed & dropped), len((seen_after & listed) - dropped)
    new = ({e.path for e in added} | repointed) - listed
    unloaded_after = kept - kept_seen + len(new - seen_after)
    pushed = sorted((seen_before & listed) - seen_after - dropped)
    return {**facts, "unloaded_before": len(listed) - len(listed & seen_before), "unloaded_after": unloaded_after, "pushed_out": tuple(pushed)}


def _taken_over(draft: Draft, view: StoreView, gone: set[str]) -> set[str]:
    """Cline: the retired task files whose index lines the survivor takes over, their words
    kept: a retired file with the survivor's own id (the line means the survivor once the
    other file is gone), else, when the survivor has no line, the first retired file that has one."""
    spec, survivor = view.index, draft.survivor
    ident = task_id(survivor) if survivor else None
    if spec is None or spec.format != index.CLINE_TASKS or draft.kind not in RETIRING or ident is None or survivor in gone:
        return set()
    listed = view.parsed_index.by_path
    same = {p for p in gone if p in listed and task_id(p) == ident}
    if same or survivor in listed:
        return same
    first = next((p for p in draft.retire if p in listed), None)
    return {first} if first else set()


def _take_over(draft: Draft, view: StoreView, taken: set[str], lines: list[str]) -> list[str]:
    """``lines`` with the lines of ``taken`` naming the survivor's id, in its status's section."""
    assert view.index is not None and draft.survivor is not None
    survivor = draft.survivor
    note = Note(survivor, draft.survivor_data, "") if draft.survivor_data is not None else _note_of(draft, view, survivor)
    section, ident = index.task_status(note.body), task_id(survivor)
    assert ident is not None
    parsed = view.parsed_index
    for line in sorted({e.line for p in taken for e in parsed.by_path[p]}):
        original = parsed.lines[line - 1]
        at = next((i for i, x in enumerate(lines) if x is original), None)
        if at is not None:  # else it went with another task it named
            lines = index.take_over(view.index, lines, at, ident, section)
    return lines


def _survivor_entry(draft: Draft, view: StoreView, gone: set[str]) -> tuple[str, ...]:
    """The survivor of a merge or supersession, when it takes over a retired note's entry
    (a merge's new note included)."""
    survivor = draft.survivor
    if draft.kind not in RETIRING or survivor is None or survivor in gone:
        return ()
    listed = view.parsed_index.by_path
    if survivor in listed or not any(p in listed for p in gone):
        return ()
    return (survivor,) if view.should_list(_note_of(draft, view, survivor)) else ()


def _note_of(draft: Draft, view: StoreView, path: str) -> Note:
    """The note at ``path`` as the change leaves it: a note the draft creates, or the store's."""
    made = dict(draft.create).get(path)
    return Note(path, made, hash_bytes(made)) if made is not None else view.notes[path]


def new_entry(view: StoreView, path: str, note: Note | None = None) -> index.NewEntry:
    """The index entry a note gets: its title, description and the section it belongs in."""
    note = note if note is not None else view.notes[path]
    spec = view.index
    section = None
    if spec is not None and spec.sections == index.BY_STATUS:
        section = index.task_status(note.body)
    elif spec is not None and spec.sections == index.BY_TYPE:
        section = note.type
    return index.NewEntry(path, note.title, note.description, section)


def _as_change(view: StoreView, read: set[str], after: dict[str, bytes | None], reads: ReadFacts) -> Change:
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
    return Change(base=base, result=result, data=data, reads=reads)


def key_of(draft: Draft, view: StoreView) -> str:
    """The draft's change key: content only, at a fixed time, the index and reference rewrites left out.

    Nothing derived from file times enters it (an expiry's reason names the date its TTL ran
    out, which a checkout moves; a merge's survivor can turn on file times), so a rejected
    change stays rejected after a ``touch``: a merge is keyed on the notes it merges and their
    bytes, other kinds on what they write without their reason. The index and notes that only
    have a reference rewritten are left out because unrelated edits to them must not
    resurrect a rejected merge; reindex drafts are keyed on the entries they add, drop and
    repoint and the files they create instead, relink drafts on what they repoint.
    """
    if draft.kind == MERGE:  # which notes merge, whichever survives (a new note too): a rejection must not come back reversed
        return change_key(MERGE, {p: view.notes[p].hash for p in sorted(draft.notes) if p in view.notes}, {}, ("group",))
    canonical = build(dataclasses.replace(draft, reason=""), view, KEY_EPOCH, with_index=False)  # reasons cite dates from file times
    own = set(draft.notes) | {p for p in canonical.result if p.startswith(view.archive_dir + "/")}
    keep = (lambda p: True) if draft.kind == RELINK else own.__contains__
    base = {p: h for p, h in canonical.base.items() if keep(p) and not view.is_index(p)}
    result = {p: h for p, h in canonical.result.items() if keep(p) and not view.is_index(p)}
    extra = tuple(f"-{p}" for p in sorted(draft.index_drop)) + tuple(f"+{p}" for p in sorted(draft.index_add))
    extra += tuple(f">{a}={b}" for a, b in sorted(draft.index_repoint)) + tuple(f"*{p}={hash_bytes(d)}" for p, d in sorted(draft.create))
    extra += tuple(f"~{a}>{b}" for a, b in sorted(draft.relink, key=str)) + (("compact",) if draft.index_compact else ())
    return change_key(draft.kind, base, result, extra)
