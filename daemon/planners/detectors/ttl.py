"""TTL expiry: notes that said how long they stay true, past that time.

Agents write "current status" notes that go stale; a note may carry ``ttl_days`` (counted
from ``updated_at``, else ``created_at``, else the file's modification time) or an absolute
``expires``, or a ``valid_to`` (the end of its valid time). Once due it is proposed for
soft-expiry. Malformed values are ignored rather
than guessed at. An mtime-based deadline is less certain (copies and checkouts reset
mtimes), so it gets a lower confidence and says so in its rationale.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from daemon.core.notes import Note, file_time
from daemon.core.view import StoreView
from daemon.core.proposals import SOFT_EXPIRE, Draft
from daemon.planners.context import DetectorSettings, PlanContext, source_of
from daemon.planners.evidence import key_lines
from daemon.planners.survivor import can_retire

MTIME = "mtime"


@dataclass(frozen=True)
class Due:
    """When a note falls due and what set the deadline."""

    at: dt.datetime
    key: str  # "ttl_days", "expires" or "valid_to"
    basis: str  # what ttl_days counts from: "updated_at", "created_at", MTIME; else the key
    start: dt.datetime | None = None
    ttl: float = 0.0


def due_of(note: Note, settings: DetectorSettings) -> Due | None:
    """The note's earliest deadline, or None when it has none (or only malformed ones)."""
    dues = [d for d in (_ttl_due(note, settings), *map(_declared_end(note), DECLARED_ENDS)) if d is not None]
    return min(dues, key=lambda d: d.at) if dues else None


def _ttl_due(note: Note, settings: DetectorSettings) -> Due | None:
    ttl = note.meta.get("ttl_days")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0:
        return None
    start, basis = _start(note, settings)
    if start is None:
        return None
    try:
        return Due(start + dt.timedelta(days=ttl), "ttl_days", basis, start, ttl)
    except OverflowError:  # ttl_days: .inf or beyond the calendar
        return None


def _start(note: Note, settings: DetectorSettings) -> tuple[dt.datetime | None, str]:
    """What ttl_days counts from; a present but unreadable date stops the fallback."""
    for key in ("updated_at", "created_at"):
        if note.meta.get(key) is not None:
            return note.meta_time(key), key
    if settings.use_mtime_for_ttl:
        return file_time(note.mtime_ns), MTIME
    return None, MTIME


DECLARED_ENDS = ("expires", "valid_to")


def _declared_end(note: Note):  # noqa: ANN202 - a small closure over the note
    def due(key: str) -> Due | None:
        at = note.meta_time(key) if note.meta.get(key) is not None else None
        return Due(at, key, key) if at else None

    return due


def when(moment: dt.datetime) -> str:
    """A date, or a date and time when the time of day matters."""
    return moment.date().isoformat() if moment.time() == dt.time() else moment.strftime("%Y-%m-%d %H:%M UTC")


def due_notes(view: StoreView, now: dt.datetime, settings: DetectorSettings) -> dict[str, Due]:
    """Notes that may be retired and whose TTL, ``expires`` or ``valid_to`` has passed."""
    found = {}
    for note in view.live_notes():
        due = due_of(note, settings) if can_retire(view, note) else None
        if due is not None and due.at <= now:
            found[note.path] = due
    return found


class TtlExpiry:
    name = "ttl"
    version = 2  # 2: valid_to in the past is due too

    def detect(self, ctx: PlanContext) -> list[Draft]:
        return [self._draft(ctx.view.notes[path], due) for path, due in due_notes(ctx.view, ctx.now, ctx.settings).items()]

    def _draft(self, note: Note, due: Due) -> Draft:
        if due.key in DECLARED_ENDS:
            reason = f"{due.key} {when(due.at)} has passed"
            said = "it expires on" if due.key == "expires" else "it is valid until"
            why = f"{note.path} declares that {said} {when(due.at)}, which has passed."
        else:
            reason = f"ttl_days {due.ttl:g} elapsed on {when(due.at)}"
            assert due.start is not None
            since = {
                "updated_at": f"counted from updated_at {when(due.start)}",
                "created_at": f"no updated_at; counted from created_at {when(due.start)}",
                MTIME: (
                    f"no updated_at; used the file's modification time, {when(due.start)}, "
                    "which copies and checkouts reset"
                ),
            }[due.basis]
            why = f"{note.path} has ttl_days {due.ttl:g} ({since}), so it fell due on {when(due.at)}."
        evidence = [key_lines(note, key) for key in dict.fromkeys((due.key, due.basis)) if key != MTIME]
        return Draft(
            kind=SOFT_EXPIRE,
            source=source_of(self),
            confidence=0.7 if due.basis == MTIME else 0.95,
            title=f"Expire {note.path}: {reason}",
            rationale=f"{why} Expiring marks it and takes it out of the index; it is not deleted.",
            evidence=tuple(dict.fromkeys(e for e in evidence if e)),
            retire=(note.path,),
            reason=reason,
        )
