"""Memory a pass freed, handed back to the system; the cyclic collector paused while a pass
reads and plans.

glibc's allocator keeps pages a process freed for its next allocations, and after large
blocks are freed it serves even large ones from those kept pages: the near-duplicate
detector's arrays over a large store (tens of megabytes, freed when it returns) stayed in
the process's resident size for the rest of the pass, under the proposals built after it.
``malloc_trim`` returns the free pages at once. Other C libraries have no such call: there
this does nothing.

A pass's reading and planning make objects that live until the pass ends (notes, the view,
the parsed index, the detectors' tables) or that reference counting frees; the cyclic
collector, set off by their number, looked at every object five times over a first pass of
10,000 notes (0.19 s) and freed nothing. ``collector_paused`` keeps it off meanwhile.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable, Iterator


@functools.cache
def _trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def give_back() -> None:
    """Return the heap's free pages to the system (glibc), else nothing."""
    trim = _trim()
    if trim is not None:
        trim(0)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside, and after it as it was before."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
