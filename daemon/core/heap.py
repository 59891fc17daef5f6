"""Memory a pass freed, handed back to the system.

glibc's allocator keeps pages a process freed for its next allocations, and after large
blocks are freed it serves even large ones from those kept pages: the near-duplicate
detector's arrays over a large store (tens of megabytes, freed when it returns) stayed in
the process's resident size for the rest of the pass, under the proposals built after it.
``malloc_trim`` returns the free pages at once. Other C libraries have no such call: there
this does nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable


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
