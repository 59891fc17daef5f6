"""Where the lines of a large file end, found once per bytes object.

Every proposal of a pass edits the same large index, and checking or diffing each one
needs line numbers in it: a lookup in its line ends replaces a split or a count over the
whole file per proposal.
"""

from __future__ import annotations

import bisect
import functools
import re

_NEWLINE = re.compile(b"\n")


@functools.lru_cache(maxsize=4)  # keyed by the bytes: their hash is computed once per object
def line_ends(data: bytes) -> list[int]:
    """The offset just past every ``\\n`` of ``data``, in order."""
    return [found.end() for found in _NEWLINE.finditer(data)]


def newlines_before(data: bytes, offset: int) -> int:
    """``data.count(b"\\n", 0, offset)``, by a lookup."""
    return bisect.bisect_right(line_ends(data), offset)
