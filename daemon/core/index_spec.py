"""Where an agent's index is, how it is written and how much of it the agent loads: the
part of ``daemon.core.index`` a preset declares. Kept apart from the parsing and editing
there, so that naming a store's settings (every command, a no-op pass included) does not
compile that module's patterns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

LINKS = "links"
CLINE_TASKS = "cline-tasks"
FORMATS = (LINKS, CLINE_TASKS)

# Where an index with sections puts a new entry.
BY_STATUS = "status"  # Cline: the section named by the task file's **Status:**
BY_TYPE = "type"  # a MEMORY.md with sections: the one named like the note's type (user, project...)


class LoadLimit(NamedTuple):
    """How much of an index an agent loads into its prompt; the rest it never sees.

    ``lines`` and ``chars`` bound what is loaded, whichever comes first (characters are
    counted as code points; the agents count code points or UTF-16 units, never fewer).
    ``trimmed``: surrounding whitespace is dropped before counting. ``cut_at_line``: a cut by
    characters goes back to the last line end before it.
    """

    lines: int | None = None
    chars: int | None = None
    trimmed: bool = False
    cut_at_line: bool = False

    def span(self, text: str) -> tuple[int, int, int]:
        """(start, stop, end) offsets in ``text``: the agent loads ``text[start:stop]`` of the
        ``text[start:end]`` it counts; ``stop == end`` when it loads all of it."""
        start, end = 0, len(text)
        if self.trimmed:  # str.strip's whitespace, found without copying a long text
            while end and text[end - 1].isspace():
                end -= 1
            while start < end and text[start].isspace():
                start += 1
        stop = end
        if self.lines is not None:
            pos = start
            for _ in range(self.lines):
                newline = text.find("\n", pos, end)
                if newline < 0:
                    break
                pos = newline + 1
            else:
                stop = min(stop, pos - 1)  # the newline that ends the last loaded line
        if self.chars is not None and stop - start > self.chars:
            cut = start + self.chars
            if self.cut_at_line:
                newline = text.rfind("\n", start, cut)
                cut = newline if newline > start else cut
            stop = cut
        return start, stop, end

    def fits(self, text: str) -> bool:
        """Whether the agent loads all of ``text``."""
        _, stop, end = self.span(text)
        return stop == end

    def head(self, lines: Sequence[str]) -> str:
        """The start of ``"".join(lines)``, whole lines, that settles what the agent loads of
        it: all of it, or a start it already does not load whole. Then the whole text does
        not fit either, and the agent loads the same part of it (its end is no earlier, so
        the same lines and characters stop it at the same place): ``fits`` and ``loaded``
        say of the head what they say of the whole. An index can be a megabyte that every
        proposal of a pass edits; joining all of it for this cost more than the edit."""
        count = 256
        while True:
            text = "".join(lines[:count])
            if count >= len(lines) or not self.fits(text):
                return text
            count *= 4

    def describe(self) -> str:
        parts = [f"{self.lines} lines" if self.lines else "", f"{self.chars:,} characters" if self.chars else ""]
        return " or ".join(p for p in parts if p)



class IndexSpec(NamedTuple):
    """Where a store's index is, how it is written, how much of it the agent loads."""

    path: str
    format: str
    limit: LoadLimit | None = None  # None: the agent reads it whole
    line_chars: int | None = None  # the longest entry line the agent's own instructions allow
    sections: str | None = None  # BY_STATUS, BY_TYPE, or None: new entries go at the end
    lists: str | None = None  # glob of the notes it should list; None: every note the agent lists
    wiki: bool = False  # a ``[[name]]`` on an index line names a note too (the agent follows such links)
