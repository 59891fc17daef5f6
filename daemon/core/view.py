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
from daemon.core.index import IndexSpec, Parsed
from daemon.core.notes import Note

IN_PLACE = "in-place"
ARCHIVE = "archive"
RETIRE_MODES = (IN_PLACE, ARCHIVE)
DEFAULT_ARCHIVE_DIR = ".dreamd-archive"


@dataclass(frozen=True)
class StoreView:
    """Every live file of a store (notes parsed), plus how the store retires notes."""

    notes: dict[str, Note]
    other_files: dict[str, str] = field(default_factory=dict)  # non-note files: path -> hash
    archived: frozenset[str] = frozenset()
    index: IndexSpec | None = None
    index_scope: str | None = None
    retire_mode: str = IN_PLACE
    archive_dir: str = DEFAULT_ARCHIVE_DIR
    protected: tuple[str, ...] = ()

    def is_index(self, path: str) -> bool:
        return self.index is not None and path == self.index.path

    def is_protected(self, path: str) -> bool:
        return matches(path, self.protected)

    def live_notes(self) -> Iterator[Note]:
        """Notes an agent reads as current: active status, not the index."""
        for path in sorted(self.notes):
            note = self.notes[path]
            if note.live and not self.is_index(path):
                yield note

    @property
    def index_note(self) -> Note | None:
        return self.notes.get(self.index.path) if self.index else None

    def should_list(self, note: Note) -> bool:
        """Whether the index ought to list this note."""
        if not note.live or self.is_index(note.path) or self.is_protected(note.path):
            return False
        return self.index_scope is None or matches(note.path, (self.index_scope,))

    @cached_property
    def parsed_index(self) -> Parsed:
        """The index split and parsed once per view: every proposal edits the same index."""
        note = self.index_note
        if self.index is None or note is None:
            return Parsed([], {}, {})
        return Parsed.of(self.index, note.data.decode("utf-8", errors="replace"), self.notes)

    def listed(self) -> dict[str, list[int]]:
        """Index entries: note path -> index line numbers."""
        return {path: [e.line for e in found] for path, found in self.parsed_index.by_path.items()}


def utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None:
        raise ValueError("naive datetime: pass an aware UTC time")
    return value.astimezone(dt.timezone.utc)
