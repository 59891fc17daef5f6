"""Diff a large file by its changed window only, with the hunks of the whole file.

A store's index can be a megabyte that every proposal edits by a line or two; giving git
both whole sides costs writing them out and hashing them, per proposal. Lines far from any
change cannot appear in a unified diff, so only a window around the changes is handed to
git, and the diff is put back in whole-file terms: hunk line numbers shifted by the lines
left out on top, the ``index`` line naming the whole files' blob ids.

The window keeps ``MARGIN`` identical lines on each side of the changes (git slides a
change along repeated lines and needs 3 lines of context). A hunk whose section heading
git would have found above the window gets it back here, by git's own rule. For an index
whose lines are distinct (each names a note) the diff is byte-identical to git's whole-file
diff (tests/diffs). Where lines repeat for longer than the margin, git may align a change
differently inside the window; the diff is still correct: every proposal's diff is proven
afterwards to rebuild the exact result bytes.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from dataclasses import dataclass

from daemon.core.affixes import common_prefix, common_suffix
from daemon.core.lines import newlines_before

MIN_BYTES = 64 * 1024  # smaller files are diffed whole: the window saves nothing there
MARGIN = 200  # lines


@dataclass(frozen=True)
class Window:
    top: int  # lines left out above the window (the same on both sides)
    before: bytes
    after: bytes
    full_before: bytes
    full_after: bytes
    heading: str  # the section heading git would find above the window ("" if none)


def window(before: bytes, after: bytes, margin: int = MARGIN) -> Window | None:
    """The part of both sides a diff needs, or None when trimming would not pay.

    Byte-level and in C where it counts (slice comparison, ``find``, ``count``): working
    line by line in Python cost as much as the git run it saves.
    """
    same = _line_start(before, common_prefix(before, after))  # first line that differs
    # the common end of what follows (not of copies of it: half a megabyte each, per proposal)
    tail = min(common_suffix(before, after), len(before) - same, len(after) - same)
    if tail:  # the common tail, from its first whole line on (in both: its bytes are equal)
        cut_from = before.find(b"\n", len(before) - tail) + 1
        tail = len(before) - cut_from if cut_from else 0
    top = same
    for _ in range(margin):  # each line start found in C (a call per line cost a quarter of this function)
        if top == 0:
            break
        top = before.rfind(b"\n", 0, top - 1) + 1
    end = len(before) - tail
    for _ in range(margin):
        if end >= len(before):
            break
        end = before.find(b"\n", end) + 1 or len(before)
    cut = len(before) - end
    if top == 0 and cut == 0:
        return None
    heading = _heading_above(before, top)
    return Window(newlines_before(before, top), before[top:end], after[top : len(after) - cut], before, after, heading)


def _line_start(data: bytes, offset: int) -> int:
    """Start of the line holding ``offset``."""
    return data.rfind(b"\n", 0, offset) + 1


_HEADING_START = re.compile(rb"\n[A-Za-z_$]")  # a literal first: the regex engine skips ahead fast


def _heading_above(data: bytes, top: int) -> str:
    """The last line above ``top`` that git would show as a section heading, as shown."""
    starts = _heading_starts(data)
    before = bisect.bisect_left(starts, top)  # a heading's line must start above ``top``
    start = starts[before - 1] if before else None
    if start is None and top and _heading(data[:1]):
        start = 0  # the first line has no newline before it
    if start is None:
        return ""
    return _heading(data[start : data.find(b"\n", start)])


@functools.lru_cache(maxsize=4)  # the old side of every proposal's index edit is the same bytes
def _heading_starts(data: bytes) -> list[int]:
    """Where each line that could be a heading starts (after the first line)."""
    return [found.start() + 1 for found in _HEADING_START.finditer(data)]


def _heading(line: bytes) -> str:
    """What git shows of ``line`` as a section heading by its default rule (a line starting
    with an ASCII letter, _ or $; at most 80 bytes, trailing space dropped), else ""."""
    if not line or not (line[:1].isalpha() or line[:1] in (b"_", b"$")):
        return ""
    return line[:80].rstrip(b" \t\n\v\f\r").decode("utf-8", errors="replace")


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
_INDEX = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)( \d+)?$")


def restore(section: str, win: Window) -> str:
    """One file's diff of the window, rewritten as the diff of the whole files."""
    out = []
    for line in section.splitlines(keepends=True):
        hunk = _HUNK.match(line)
        index = _INDEX.match(line.rstrip("\n"))
        if hunk:
            old, old_n, new, new_n = hunk.groups()
            head = f"@@ -{int(old) + win.top}{old_n or ''} +{int(new) + win.top}{new_n or ''} @@"
            rest = line[hunk.end() :]
            if rest == "\n" and win.heading:  # git found no heading inside the window: the one above
                rest = f" {win.heading}\n"
            line = head + rest
        elif index:
            width = len(index.group(1))
            mode = index.group(3) or ""
            line = f"index {_blob_id(win.full_before)[:width]}..{_blob_id(win.full_after)[:width]}{mode}\n"
        out.append(line)
    return "".join(out)


@functools.lru_cache(maxsize=8)
def _blob_id(data: bytes) -> str:
    """git's object id of ``data``; kept for the few large files a pass edits over and over
    (every proposal of a pass edits the same index: its old side is the same bytes)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))  # noqa: S324 - git's object id, not security
    digest.update(data)
    return digest.hexdigest()
