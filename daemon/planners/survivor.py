"""Which note of a duplicate group stays, and which notes may be retired at all.

Shared by the merge detectors so exact and near duplicates keep the same note. The survivor
is the note the store already leans on, decided in this order, each step only among the
notes the one before left tied:

1. pinned (it cannot be retired anyway), then notes that cannot be retired for another reason,
   then notes a pinned note cites (that citation can never be rewritten);
2. most referenced: other live notes and the index that refer to it (their references need
   no rewrite, and the name people cite stays);
3. newest: by a real date, the frontmatter's ``updated_at`` (or ``modified``, ``created_at``...),
   else by file time, which decides only when it leads by more than a second (a copy made by
   ``cp`` or a checkout differs by microseconds, which says nothing about which is current);
4. the shortest path, then the one that sorts first.

The rationale names the step that decided. Notes that may not be retired stay where they are.
Steps 1 and 2 are the store's structure and *bind* (``Choice.binding``): a model's merge is put
into that note whatever the model named. Steps 3 and 4 only break a tie when nothing else says
which note to keep, so a model's (or a person's) own choice stands over them: which of two
notes on one topic reads as the one to keep is a judgement of their text, not of their dates.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from daemon.core.notes import Note, file_time
from daemon.core.view import StoreView

MTIME_MARGIN_S = 1.0


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
    """Seconds since the epoch of the note's last update: a frontmatter date, else its mtime."""
    dated = note.dated()
    return dated[0].timestamp() if dated else note.mtime_ns / 1e9


@dataclass(frozen=True)
class Choice:
    survivor: Note
    retire: tuple[Note, ...]
    why: str  # why the survivor won, for the rationale
    binding: bool = True  # decided by the store's structure (steps 1-2), not a tie-break

def choose(view: StoreView, notes: Iterable[Note]) -> Choice | None:
    """The survivor and the notes to retire into it; None when nothing can be retired."""
    group = sorted(notes, key=lambda n: n.path)
    if len(group) < 2:
        return None
    survivor, why, binding = _decide(view, group)
    retire = tuple(n for n in group if n is not survivor and can_retire(view, n))
    return Choice(survivor, retire, why, binding) if retire else None


def ranked(view: StoreView, notes: Iterable[Note]) -> list[Note]:
    """Notes best survivor first."""
    rest = sorted(notes, key=lambda n: n.path)
    order = []
    while rest:
        best, _, _ = _decide(view, rest)
        order.append(best)
        rest = [n for n in rest if n is not best]
    return order


def _decide(view: StoreView, group: list[Note]) -> tuple[Note, str, bool]:
    """The best survivor of ``group``, why, and whether the store's structure decided (see the
    module docstring)."""
    tied = group
    for step in (*_BINDING, _newest, _shortest_path):
        if len(tied) == 1:
            break
        narrowed = step(view, tied)
        if narrowed is not None:
            tied, why = narrowed
            if len(tied) == 1:
                return tied[0], why, step in _BINDING
    return tied[0], "its path sorts first", False


def _pinned(view: StoreView, tied: list[Note]) -> tuple[list[Note], str] | None:
    kept = [n for n in tied if n.pinned]
    return (kept, "it is pinned") if 0 < len(kept) < len(tied) else None


def _unretirable(view: StoreView, tied: list[Note]) -> tuple[list[Note], str] | None:
    kept = [n for n in tied if not can_retire(view, n)]
    why = "it cannot be retired (a core file of the layout, or frontmatter dreamd cannot edit)"
    return (kept, why) if 0 < len(kept) < len(tied) else None


def _cited_by_pinned(view: StoreView, tied: list[Note]) -> tuple[list[Note], str] | None:
    kept = [n for n in tied if any(view.notes[s].pinned for s in view.referrers(n.path) if s in view.notes)]
    return (kept, "a pinned note cites it, and a pinned note's references are never rewritten") if 0 < len(kept) < len(tied) else None


def _most_referenced(view: StoreView, tied: list[Note]) -> tuple[list[Note], str] | None:
    counts = {n.path: len(view.referrers(n.path) - {n.path}) for n in tied}
    top = max(counts.values())
    kept = [n for n in tied if counts[n.path] == top]
    if len(kept) == len(tied):
        return None
    others = ", ".join(f"{n.path} {counts[n.path]}" for n in tied if n not in kept)
    return kept, f"it is the most referenced: {top} of the store's notes (index included) refer to it, against {others}"


def _newest(view: StoreView, tied: list[Note]) -> tuple[list[Note], str] | None:
    """The newest note by its frontmatter date, else its file time; a file time decides only
    when it leads by more than a second."""
    known = {n.path: _when(n) for n in tied}
    if any(w is None for w in known.values()):
        return None  # a note with no date at all cannot be compared
    order = sorted(tied, key=lambda n: known[n.path][0], reverse=True)  # type: ignore[index]
    (first, by_first), (second, by_second) = known[order[0].path], known[order[1].path]  # type: ignore[misc]
    lead = (first - second).total_seconds()
    if lead <= 0 or (FILE_TIME in (by_first, by_second) and lead <= MTIME_MARGIN_S):
        return None
    if by_first == FILE_TIME and by_second == FILE_TIME:
        why = f"it is the newest by file time, {_duration(lead)} newer (no frontmatter date decides; copies and checkouts reset file times)"
    else:
        why = f"its {by_first} ({_day(first)}) is the newest, against {by_second} {_day(second)}"
    return [order[0]], why


FILE_TIME = "file time"


def _when(note: Note) -> tuple[dt.datetime, str] | None:
    dated = note.dated()
    if dated is not None:
        return dated
    moment = file_time(note.mtime_ns)
    return (moment, FILE_TIME) if moment is not None else None


def _shortest_path(view: StoreView, tied: list[Note]) -> tuple[list[Note], str] | None:
    shortest = min(len(n.path) for n in tied)
    kept = [n for n in tied if len(n.path) == shortest]
    return (kept, "its path is the shortest") if len(kept) < len(tied) else None


def _day(moment: dt.datetime) -> str:
    return moment.date().isoformat() if moment.time() == dt.time() else moment.strftime("%Y-%m-%d %H:%M UTC")


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


_BINDING = (_pinned, _unretirable, _cited_by_pinned, _most_referenced)  # steps 1-2: the store's structure decides
