"""Where a proposal's evidence sits in a note's text, as plain and marked pieces to draw.

An evidence item names a note, its lines and the quoted words. The quote is looked for in the
note itself, first from its start line on, then anywhere; a quote the note does not hold
(the planner paraphrased, or the note changed since) marks the lines it names instead, so a
reviewer always sees what the proposal leaned on, and never a mark in the wrong place
silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Piece:
    text: str
    marked: bool


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts += [i + 1 for i, char in enumerate(text) if char == "\n" and i + 1 < len(text)]
    return starts


def _span(text: str, starts: list[int], start: int, end: int, quote: str) -> tuple[int, int] | None:
    """The characters of ``text`` one evidence item points at, or None if it points nowhere."""
    begin = starts[start - 1] if 1 <= start <= len(starts) else 0
    if quote:
        found = text.find(quote, begin)
        found = text.find(quote) if found < 0 else found
        if found >= 0:
            return found, found + len(quote)
    if not 1 <= start <= end <= len(starts):
        return None
    stop = starts[end] - 1 if end < len(starts) else len(text)
    return starts[start - 1], stop


def mark(text: str, evidence: Iterable[tuple[int, int, str]]) -> list[Piece]:
    """``text`` cut into pieces, the ones the evidence (start line, end line, quote) points at marked."""
    starts = _line_starts(text)
    spans = sorted(s for s in (_span(text, starts, a, b, q) for a, b, q in evidence) if s and s[0] < s[1])
    merged: list[list[int]] = []
    for begin, stop in spans:
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([begin, stop])
    pieces: list[Piece] = []
    position = 0
    for begin, stop in merged:
        if begin > position:
            pieces.append(Piece(text[position:begin], False))
        pieces.append(Piece(text[begin:stop], True))
        position = stop
    if position < len(text):
        pieces.append(Piece(text[position:], False))
    return pieces


@dataclass(frozen=True)
class Fold:
    """Unmarked lines a page folds behind their count."""

    text: str
    lines: int


def folded(pieces: list[Piece], context: int = 3, least: int = 8, unmarked_head: int = 20) -> list[Piece | Fold]:
    """The pieces with each long unmarked stretch folded: ``context`` lines are kept next to a
    mark (``unmarked_head`` at the top of a note with no mark at all), and the lines between
    are folded when there are at least ``least`` of them. Every character is kept."""
    any_mark = any(piece.marked for piece in pieces)
    out: list[Piece | Fold] = []
    for i, piece in enumerate(pieces):
        if piece.marked:
            out.append(piece)
            continue
        lines = piece.text.splitlines(keepends=True)
        # next to a mark, the rest of the marked line is kept too: it is not one of the ``context`` lines
        head = context + (not pieces[i - 1].text.endswith("\n")) if i > 0 else (0 if any_mark else unmarked_head)
        tail = context + (not piece.text.endswith("\n")) if i < len(pieces) - 1 else 0
        if len(lines) - head - tail < least:
            out.append(piece)
            continue
        middle = lines[head : len(lines) - tail]
        out += [Piece("".join(lines[:head]), False)] if head else []
        out.append(Fold("".join(middle), len(middle)))
        out += [Piece("".join(lines[len(lines) - tail :]), False)] if tail else []
    return out
