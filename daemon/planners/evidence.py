"""Evidence quotes: verbatim lines of a note, with the 1-based line numbers they occupy.

Line numbers are counted on ``\\n``, from the line picked rather than the first textual
match, so a body line that also occurs inside the frontmatter is still cited where it is.
"""

from __future__ import annotations

import re

from daemon.core.notes import Note
from daemon.core.proposals import Evidence

MAX_QUOTE = 200


MAX_EVIDENCE = 50  # quotes one proposal carries; the rationale counts the rest


def _lines(note: Note) -> list[str]:
    return note.lines


def quote(note: Note, first: int, last: int | None = None) -> Evidence:
    """Lines ``first``..``last`` (1-based) of the note; a single line is trimmed of
    surrounding blanks and cut to MAX_QUOTE characters, which keeps it a substring."""
    last = first if last is None else last
    chunk = _lines(note)[first - 1 : last]
    if len(chunk) == 1:
        return Evidence(note.path, first, last, chunk[0].strip()[:MAX_QUOTE])
    return Evidence(note.path, first, last, "\n".join(chunk).rstrip("\r"))


def first_body_line(note: Note, wanted: str | None = None) -> Evidence | None:
    """The first non-blank body line (what the note is about), or the first one that
    reads ``wanted`` once trailing blanks are ignored."""
    offset = note.parts.header.count(b"\n")
    for number, line in enumerate(_lines(note)[offset:], offset + 1):
        if line.strip() and (wanted is None or line.rstrip() == wanted):
            return quote(note, number)
    return None


def key_lines(note: Note, key: str) -> Evidence | None:
    """A top-level frontmatter key's line plus its continuation lines (lists, indents)."""
    header_end = note.parts.header.count(b"\n")
    lines = _lines(note)[:header_end]
    pattern = re.compile(rf"^{re.escape(key)}[ \t]*:")
    for i, line in enumerate(lines):
        if pattern.match(line):
            j = i + 1
            while j < header_end - 1 and lines[j].startswith((" ", "\t", "- ")) and lines[j].strip():
                j += 1
            return quote(note, i + 1, j)
    return None
