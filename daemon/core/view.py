"""A read-only view of one store at one moment, as planners and the change builder need it.

Built by the service from a scan; holds no file handles and does no I/O, so detectors
and the builder are pure functions of (view, now).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from daemon.core.globs import matches
from daemon.core.index import CLINE_TASKS, LINKS, IndexSpec, Parsed, loaded, seen, task_id
from daemon.core.links import Names, Reference, find
from daemon.core.notes import Note
from daemon.core.reader import IN_PLACE, MARKDOWN, PLAIN, TASK_ID, ReaderModel

DEFAULT_ARCHIVE_DIR = ".dreamd-archive"


@dataclass(frozen=True)
class StoreView:
    """Every live file of a store (notes parsed), how the store retires notes, and how its
    agent reads them (``reader``)."""

    notes: dict[str, Note]
    other_files: dict[str, str] = field(default_factory=dict)  # non-note files: path -> hash
    archived: frozenset[str] = frozenset()
    index: IndexSpec | None = None
    retire_mode: str = IN_PLACE
    archive_dir: str = DEFAULT_ARCHIVE_DIR  # the store-path prefix of the archive root
    protected: tuple[str, ...] = ()
    reader: ReaderModel = PLAIN
    archive_notes: dict[str, Note] = field(default_factory=dict)  # notes in the archive root, by store path

    def is_index(self, path: str) -> bool:
        return self.index is not None and path == self.index.path

    def is_protected(self, path: str) -> bool:
        return matches(path, self.protected)

    def live_notes(self) -> Iterator[Note]:
        """Notes an agent reads as current (active status, not the index) whose content
        dreamd knows: a note left unread is the agent's but no detector's business."""
        for path in sorted(self.notes):
            note = self.notes[path]
            if note.live and note.unread is None and not self.is_index(path):
                yield note

    @cached_property
    def unread(self) -> dict[str, Note]:
        """Notes whose content planning could not read (see Note.left_unread), by path."""
        return {path: note for path, note in self.notes.items() if note.unread is not None}

    @property
    def index_note(self) -> Note | None:
        return self.notes.get(self.index.path) if self.index else None

    def should_list(self, note: Note) -> bool:
        """Whether the index ought to list this note."""
        if not note.live or self.is_index(note.path) or self.is_protected(note.path):
            return False
        return self.index is None or self.index.lists is None or matches(note.path, (self.index.lists,))

    @cached_property
    def parsed_index(self) -> Parsed:
        """The index split and parsed once per view: every proposal edits the same index."""
        note = self.index_note
        if self.index is None or note is None:
            return Parsed([], {}, {})
        try:
            return Parsed.of(self.index, note.data.decode("utf-8"), self.notes, note.data)
        except UnicodeDecodeError:
            return Parsed.of(self.index, note.data.decode("utf-8", errors="replace"), self.notes)

    @cached_property
    def listed_paths(self) -> frozenset[str]:
        """Notes the index has an entry for."""
        return frozenset(self.parsed_index.by_path)

    @cached_property
    def index_fits(self) -> bool:
        """Whether the agent loads the whole index (True when it has no limit)."""
        limit = self.index.limit if self.index else None
        return limit is None or limit.fits(self.parsed_index.text)

    @cached_property
    def index_seen(self) -> frozenset[str]:
        """Notes whose index entry the agent loads (every listed one when it has no limit)."""
        if self.index is None or self.index.limit is None or self.index_fits:
            return self.listed_paths
        return frozenset(seen(self.index, self.parsed_index.text, self.notes))

    @cached_property
    def index_loaded(self) -> str:
        """The lines of the index its agent loads whole (all of it when it has no limit)."""
        if self.index is None or self.index.limit is None:
            return self.parsed_index.text
        return loaded(self.index, self.parsed_index.text)

    def listed(self) -> dict[str, list[int]]:
        """Index entries: note path -> index line numbers."""
        return {path: [e.line for e in found] for path, found in self.parsed_index.by_path.items()}

    def is_live(self, path: str) -> bool:
        """Whether ``path`` is a note the agent reads as current."""
        note = self.notes.get(path)
        return note is not None and note.live

    @cached_property
    def names(self) -> Names:
        """What references resolve against: the notes, and their frontmatter names."""
        titles = {p: n.meta["name"].strip() for p, n in self.notes.items() if isinstance(n.meta.get("name"), str)}
        folder = self.index.path.rsplit("/", 1)[0] if self.index and "/" in self.index.path else ""
        return Names(frozenset(self.notes), titles, folder)

    def syntaxes_in(self, path: str) -> tuple[str, ...]:
        """Link syntaxes searched in a note; an index's own entries are its format's business."""
        own = {LINKS: MARKDOWN, CLINE_TASKS: TASK_ID}.get(self.index.format) if self.index and self.is_index(path) else None
        return tuple(s for s in self.reader.links if s != own)

    def references_in(self, note: Note) -> list[Reference]:
        """The references of ``note`` (its own bytes, or bytes a change gives it); none
        known for a note left unread."""
        if note.unread is not None:
            return []
        text = note.data.decode("utf-8", errors="replace")
        start = len(note.parts.header.decode("utf-8", errors="replace"))
        return find(note.path, text, start, self.syntaxes_in(note.path), self.names)

    @cached_property
    def references(self) -> dict[str, list[Reference]]:
        """Every live note's references to other notes: the store's reference graph."""
        return {n.path: refs for n in self.notes.values() if n.live and (refs := self.references_in(n))}

    @cached_property
    def incoming(self) -> dict[str, list[Reference]]:
        """Target path -> the references that resolve to it."""
        found: dict[str, list[Reference]] = {}
        for refs in self.references.values():
            for ref in refs:
                if ref.target is not None and ref.target != ref.source:
                    found.setdefault(ref.target, []).append(ref)
        return found

    @cached_property
    def keyed(self) -> dict[str, list[Reference]]:
        """What references point at, as written (a path, or a name) -> the references."""
        found: dict[str, list[Reference]] = {}
        for refs in self.references.values():
            for ref in refs:
                found.setdefault(ref.key, []).append(ref)
        return found

    def referrers(self, path: str) -> set[str]:
        """Live notes that refer to ``path``: by a reference, or by an index entry."""
        found = {ref.source for ref in self.incoming.get(path, ())}
        if self.index and path in self.parsed_index.by_path and self.is_live(self.index.path) and not self._shared_task_id(path):
            found.add(self.index.path)
        return found

    @cached_property
    def shared_task_ids(self) -> dict[str, tuple[str, ...]]:
        """Cline task ids that several live task files have, with those files: the index line
        and every ``[TASKnnn]`` could mean any of them, and only a person knows which."""
        if self.index is None or self.index.format != CLINE_TASKS:
            return {}
        folder = self.index.path.rsplit("/", 1)[0] + "/" if "/" in self.index.path else ""
        found: dict[str, list[str]] = {}
        for note in self.live_notes():
            ident = task_id(note.path) if note.path.startswith(folder) else None
            if ident:
                found.setdefault(ident, []).append(note.path)
        return {ident: tuple(paths) for ident, paths in found.items() if len(paths) > 1}

    def _shared_task_id(self, path: str) -> bool:
        """Whether a Cline index entry for ``path`` could as well mean another file (same task id)."""
        ident = task_id(path) if self.index and self.index.format == CLINE_TASKS else None
        return ident is not None and len(self.names.task(ident)) > 1


def utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        raise ValueError("naive datetime: pass an aware UTC time")
    return value.astimezone(dt.timezone.utc)
