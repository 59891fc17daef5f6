"""Which note of a duplicate group stays, and which notes may be retired at all.

Shared by the merge detectors so exact and near duplicates keep the same note: pinned
first, then notes that cannot be retired anyway, then the one the index lists, then the
newest, then the shortest path. Notes that may not be retired stay where they are.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from daemon.core.notes import Note
from daemon.core.view import StoreView


def can_retire(view: StoreView, note: Note) -> bool:
    """Whether validation would let a proposal retire this note (so we never propose it)."""
    return not (
        note.pinned
        or view.is_protected(note.path)
        or view.is_index(note.path)
        or not note.live
        or note.frontmatter_error
    )


def note_time(note: Note) -> float:
    """Seconds since the epoch of the note's last update: ``updated_at``, else its mtime."""
    updated = note.meta_time("updated_at")
    return updated.timestamp() if updated else note.mtime_ns / 1e9


_WHY = (
    "it is pinned",
    "it cannot be retired (a core file, or frontmatter dreamd cannot edit)",
    "the index lists it",
    "it is the most recently updated",
    "its path is the shortest",
    "its path sorts first",
)


@dataclass(frozen=True)
class Choice:
    survivor: Note
    retire: tuple[Note, ...]
    why: str  # why the survivor won, for the rationale


def ranked(view: StoreView, notes: Iterable[Note], listed: Collection[str]) -> list[Note]:
    """Notes best survivor first."""
    return sorted(notes, key=lambda note: _rank(view, note, listed))


def choose(view: StoreView, notes: Iterable[Note], listed: Collection[str]) -> Choice | None:
    """The survivor and the notes to retire into it; None when nothing can be retired."""
    order = ranked(view, notes, listed)
    retire = tuple(n for n in order[1:] if can_retire(view, n))
    if not retire:
        return None
    first, second = _rank(view, order[0], listed), _rank(view, order[1], listed)
    decisive = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    return Choice(order[0], retire, _WHY[decisive])


def _rank(view: StoreView, note: Note, listed: Collection[str]) -> tuple[bool, bool, bool, float, int, str]:
    return (
        not note.pinned,
        can_retire(view, note),
        note.path not in listed,
        -note_time(note),
        len(note.path),
        note.path,
    )
