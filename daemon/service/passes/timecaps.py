"""Time caps on planning: one note that takes too long to read is left out, and a pass past
its time stops planning and says so; neither fails the pass.

Reading notes and running detectors are pure computations on bytes already in memory, so
they can be cut off anywhere: in the main thread a ``SIGALRM`` timer raises inside the work
when its time is up. Elsewhere (no signals outside the main thread) the work runs to its end
and is only measured, so a note past its cap is still left out, just later. Nothing that
writes (the database, a store) ever runs under a timer: those steps check the time between
batches instead (``Caps.expired``).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from daemon.core.notes import Note
from daemon.core.view import StoreView

T = TypeVar("T")

TIME_CAP = "time-cap"  # the reason a note left unread is reported under


class _Expired(Exception):
    """Raised inside capped work by the timer."""


@dataclass
class Caps:
    """The time left for one pass, and the cap on each note within it."""

    note_seconds: float
    pass_seconds: float
    clock: Callable[[], float] = time.monotonic
    _started: float | None = None
    _armed: bool = False
    _signals: bool = False
    capped_at: str | None = None  # the stage at which the pass ran out of time

    def remaining(self) -> float:
        if self._started is None:
            self._started = self.clock()
        return self.pass_seconds - (self.clock() - self._started)

    def expired(self, stage: str) -> bool:
        """Whether the pass is out of time; the first stage to find so is recorded."""
        if self.capped_at is None and self.remaining() <= 0:
            self.capped_at = stage
        return self.capped_at is not None

    @contextmanager
    def timing(self) -> Iterator[Caps]:
        """Interrupt capped work by signal for the duration (main thread only)."""
        self.remaining()
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGALRM, self._ring)
        self._signals = True
        try:
            yield self
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._signals = False
            signal.signal(signal.SIGALRM, previous)

    def run(self, work: Callable[[], T], seconds: float) -> tuple[bool, T | None]:
        """``(True, result)`` when ``work`` finished within ``seconds``, else ``(False, None)``."""
        if seconds <= 0:
            return False, None
        started = self.clock()
        try:
            self._armed = True
            if self._signals:
                signal.setitimer(signal.ITIMER_REAL, seconds)
            try:
                value = work()
            finally:
                self._armed = False  # a signal from here on is ignored by _ring
                if self._signals:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except _Expired:
            return False, None
        return self.clock() - started <= seconds, value

    def within_pass(self, work: Callable[[], T], stage: str) -> tuple[bool, T | None]:
        """``run`` with what is left of the pass's time; running out records ``stage``."""
        done, value = self.run(work, self.remaining())
        if not done and self.capped_at is None:
            self.capped_at = stage
        return done, value

    def _ring(self, signum: int, frame: Any) -> None:
        if self._armed:
            self._armed = False
            raise _Expired


def read_notes(view: StoreView, caps: Caps, progress: Callable[[int, int], None] | None = None) -> tuple[StoreView, list[str]]:
    """The view with every note's own text read once within its cap; notes past it are left
    unread. Returns the view and the paths left unread.

    Reading parses what every detector needs (frontmatter, body, normalised text, title); the
    results stay cached on the notes. The links between notes are found afterwards, over the
    whole store at once (``read_links``): a link resolves by every note's name.
    ``progress(done, total)`` hears about every hundredth of the notes.
    """
    left: dict[str, Note] = {}
    total, step = len(view.notes), max(1, len(view.notes) // 100)
    for number, (path, note) in enumerate(view.notes.items()):
        if progress is not None and number % step == 0:
            progress(number, total)
        if view.is_index(path):
            continue  # the index is read with the links: without it nothing can be planned
        done, _ = caps.run(lambda note=note: _read(note), min(caps.note_seconds, caps.remaining()))
        if done:
            continue
        if caps.expired("reading notes"):
            break
        left[path] = note.left_unread(f"reading it took over {caps.note_seconds:g} s")
    if progress is not None:
        progress(total, total)
    if left:
        view = replace(view, notes={**view.notes, **left})
    return view, sorted(left)


def _read(note: Note) -> None:
    """What every detector reads of every note. Its lines are not among them: only the notes
    quoted as evidence are split into lines (a store's every line, kept, was the largest part
    of what a pass held)."""
    _ = note.meta, note.body, note.normalised_body, note.value_hash, note.title, note.description


def read_links(view: StoreView, caps: Caps) -> bool:
    """Whether the index and the store's links were read within what is left of the pass."""
    done, _ = caps.within_pass(lambda: (view.parsed_index, view.index_seen, view.incoming, view.keyed), "reading the index and links")
    return done
