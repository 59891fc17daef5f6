"""Stopping a pass worker safely: SIGTERM ends it at the next safe point, never mid-write.

A pass writes nothing to stores, and every database transaction rolls back whole, so
anywhere in a pass is a safe place to stop. An apply or revert is not: between its first
and last file write the store is half-changed (the journal would repair it, but only on the
next run). Code that writes a store runs inside ``shielded()``; a SIGTERM that arrives
there is held until the block ends. ``install()`` is called only by the daemon's worker, so
the CLI keeps the default SIGTERM behaviour.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from daemon.core.errors import StoppedError

_state = {"installed": False, "shield": 0, "pending": False}
_lock = threading.Lock()


def install() -> None:
    """Make SIGTERM raise StoppedError in the main thread, except inside ``shielded()``."""
    _state.update(installed=True, shield=0, pending=False)
    signal.signal(signal.SIGTERM, _on_term)


def _on_term(signum: int, frame: Any) -> None:
    with _lock:
        if _state["shield"]:
            _state["pending"] = True
            return
    raise StoppedError("asked to stop (SIGTERM) before the pass finished; nothing was written")


@contextmanager
def shielded() -> Iterator[None]:
    """Hold a SIGTERM until the block (a store write) has finished or rolled back."""
    with _lock:
        _state["shield"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["shield"] -= 1
            stop = _state["installed"] and _state["shield"] == 0 and _state["pending"]
            if stop:
                _state["pending"] = False
    if stop:
        raise StoppedError("asked to stop (SIGTERM); the write in progress completed first")
