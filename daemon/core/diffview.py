"""A proposal's diff as rows a reader can scan: unified, and side by side.

The review faces (the HTML report, ``dreamd serve``) draw what this returns; parsing stays
here, pure, so a page never re-reads a diff with string tricks of its own. Each ``diff --git``
section is split off first (its header may name a path with a space, which unidiff cannot
split) and its hunks are parsed by unidiff, as ``core.patch`` does.

A removed line facing an added one carries its words marked where the two differ
(``words``), as a pull-request review shows them. ``drawn`` lays a file out as a page shows
it: the unchanged lines between hunks as a count (``Skip``), and past ``FOLD_AFTER`` rows the
rest folded behind its counts, so an index edit of thousands of lines stays a page to read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher

from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

from daemon.core.marks import Piece
from daemon.core.patch import empty_removal, parsed, strip_prefix, unquote_git

ADDED, REMOVED, CONTEXT, NO_NEWLINE = "added", "removed", "context", "no-newline"
_KINDS = {LINE_TYPE_ADDED: ADDED, LINE_TYPE_REMOVED: REMOVED, LINE_TYPE_CONTEXT: CONTEXT, LINE_TYPE_NO_NEWLINE: NO_NEWLINE}
_RENAME = re.compile(r"rename (from|to) (.*)")
_WORD = re.compile(r"\w+|\s+|[^\w\s]")
WORD_LINE_CHARS = 2000  # longer lines are marked whole: comparing their words costs more than it shows
WORDS_ALIKE = 0.5  # lines sharing less than this of their characters are marked whole
FOLD_AFTER = 150  # rows of a file drawn before the rest is folded behind its counts


@dataclass(frozen=True)
class Row:
    """One line of a hunk: what it is, its numbers in the old and new file, its text."""

    kind: str
    old: int | None
    new: int | None
    text: str
    words: tuple[Piece, ...] | None = field(default=None, compare=False)  # the text, the words it changes marked


@dataclass(frozen=True)
class Pair:
    """One row of the side-by-side view: the old line on the left, the new on the right."""

    left: Row | None
    right: Row | None


@dataclass(frozen=True)
class Hunk:
    header: str
    rows: tuple[Row, ...]
    old_start: int = 0  # the hunk's first old line (the line it follows, when it covers none)
    old_length: int = 0

    @property
    def pairs(self) -> tuple[Pair, ...]:
        """Context on both sides; a run of removed lines faces the added lines that follow it."""
        return tuple(Pair(left, right) for left, right in _faced(self.rows))

    @property
    def old_span(self) -> tuple[int, int]:
        """The old lines it covers, first and last (last = first - 1 when it covers none)."""
        first = self.old_start if self.old_length else self.old_start + 1
        return first, first + self.old_length - 1


def _faced(rows: tuple[Row, ...]) -> list[tuple[Row | None, Row | None]]:
    """Rows side by side: context facing itself, a run of removed lines facing the added ones after it."""
    faced: list[tuple[Row | None, Row | None]] = []
    removed: list[Row] = []
    added: list[Row] = []

    def flush() -> None:
        for i in range(max(len(removed), len(added))):
            faced.append((removed[i] if i < len(removed) else None, added[i] if i < len(added) else None))
        removed.clear()
        added.clear()

    for row in rows:
        if row.kind == REMOVED:
            if added:
                flush()
            removed.append(row)
        elif row.kind == ADDED:
            added.append(row)
        else:
            flush()
            faced.append((row, row))
    flush()
    return faced


def words(old: str, new: str) -> tuple[tuple[Piece, ...], tuple[Piece, ...]] | None:
    """The two lines cut into words, those that differ marked; None when the lines are too
    long, or share too little for marks to help (then each is changed whole)."""
    if max(len(old), len(new)) > WORD_LINE_CHARS:
        return None
    left, right = _WORD.findall(old), _WORD.findall(new)
    opcodes = SequenceMatcher(None, left, right, autojunk=False).get_opcodes()
    same = sum(len("".join(left[i1:i2])) for tag, i1, i2, _, _ in opcodes if tag == "equal")
    if 2 * same < WORDS_ALIKE * (len(old) + len(new)):
        return None
    return _pieces(left, [(i1, i2, tag != "equal") for tag, i1, i2, _, _ in opcodes]), _pieces(right, [(j1, j2, tag != "equal") for tag, _, _, j1, j2 in opcodes])


def _pieces(tokens: list[str], spans: list[tuple[int, int, bool]]) -> tuple[Piece, ...]:
    """Adjacent spans of the same kind joined into one piece; empty spans left out."""
    pieces: list[Piece] = []
    for start, stop, marked in spans:
        text = "".join(tokens[start:stop])
        if not text:
            continue
        if pieces and pieces[-1].marked == marked:
            pieces[-1] = Piece(pieces[-1].text + text, marked)
        else:
            pieces.append(Piece(text, marked))
    return tuple(pieces)


def _with_words(rows: tuple[Row, ...]) -> tuple[Row, ...]:
    """Each removed row facing an added one, and that added row, with their changed words marked."""
    marked: dict[int, Row] = {}
    for left, right in _faced(rows):
        if left is None or right is None or left.kind != REMOVED:
            continue
        found = words(left.text, right.text)
        if found is not None:
            marked[id(left)], marked[id(right)] = replace(left, words=found[0]), replace(right, words=found[1])
    return tuple(marked.get(id(row), row) for row in rows)


@dataclass(frozen=True)
class FileDiff:
    """One file of a diff: its old and new path (None: absent), git's header lines, its hunks."""

    old_path: str | None
    new_path: str | None
    headers: tuple[str, ...]
    hunks: tuple[Hunk, ...]

    @property
    def title(self) -> str:
        if self.old_path and self.new_path and self.old_path != self.new_path:
            return f"{self.old_path} => {self.new_path}"
        return str(self.new_path or self.old_path)

    @property
    def added(self) -> int:
        return sum(r.kind == ADDED for h in self.hunks for r in h.rows)

    @property
    def removed(self) -> int:
        return sum(r.kind == REMOVED for h in self.hunks for r in h.rows)


def _sections(diff: str) -> list[tuple[list[str], str]]:
    """(git header lines, the rest) of each ``diff --git`` section; a plain diff is one section."""
    sections: list[tuple[list[str], list[str]]] = []
    for line in diff.split("\n"):
        if line.startswith("diff --git ") or not sections:
            sections.append(([line] if line.startswith("diff --git ") else [], []))
            if line.startswith("diff --git "):
                continue
        headers, body = sections[-1]
        if headers and not body and not line.startswith(("--- ", "@@")) and line:
            headers.append(line)
        else:
            body.append(line)
    return [(headers, "\n".join(body)) for headers, body in sections if headers or any(body)]


def _files(headers: list[str], body: str) -> list[FileDiff]:
    if any(h.startswith("deleted file mode ") for h in headers) and not body.startswith("--- "):
        body = "\n".join([*empty_removal(headers[0]), body])  # an empty file removed: git writes no ---/+++
    patched = list(parsed(body))
    renamed = {m.group(1): unquote_git(m.group(2)) for m in map(_RENAME.fullmatch, headers) if m}
    if not patched:  # a rename with no edit, or a mode change: only the header says what
        return [FileDiff(renamed.get("from"), renamed.get("to"), tuple(headers[1:]), ())]
    return [FileDiff(strip_prefix(f.source_file), strip_prefix(f.target_file), tuple(headers[1:]), tuple(map(_hunk, f))) for f in patched]


def _hunk(hunk) -> Hunk:  # noqa: ANN001 - unidiff's Hunk
    rows = tuple(Row(_KINDS[line.line_type], line.source_line_no, line.target_line_no, line.value.rstrip("\n")) for line in hunk if line.line_type in _KINDS)
    header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@ {hunk.section_header}"
    return Hunk(header.rstrip(), _with_words(rows), hunk.source_start, hunk.source_length)


def parse(diff: str) -> list[FileDiff]:
    """Every file of a unified diff (as dreamd stores it, git's way), in order."""
    return [file for headers, body in _sections(diff) for file in _files(headers, body)]


@dataclass(frozen=True)
class Skip:
    """Unchanged lines of the file the diff does not show: before, between or after its hunks."""

    lines: int


Item = str | Row | Pair | Skip  # a hunk's header, a row (unified) or a pair (side by side), a skip


@dataclass(frozen=True)
class Drawn:
    """One view of a file as a page draws it: the items shown, then the rest folded behind its counts."""

    shown: tuple[Item, ...]
    folded: tuple[Item, ...]

    @property
    def folded_counts(self) -> tuple[int, int, int]:
        """(added, removed, unchanged) lines behind the fold."""
        added = removed = unchanged = 0
        for item in self.folded:
            for row in _rows_of(item):
                added += row.kind == ADDED
                removed += row.kind == REMOVED
                unchanged += row.kind == CONTEXT
            unchanged += item.lines if isinstance(item, Skip) else 0
        return added, removed, unchanged


def _rows_of(item: Item) -> tuple[Row, ...]:
    if isinstance(item, Row):
        return (item,)
    if isinstance(item, Pair):
        if item.left is item.right:
            return (item.left,) if item.left else ()
        return tuple(row for row in (item.left, item.right) if row is not None)
    return ()


def drawn(file: FileDiff, old_lines: int | None, *, side_by_side: bool = False, fold_after: int = FOLD_AFTER) -> Drawn:
    """The file's hunks as items, with a ``Skip`` for the unchanged lines around them (after
    the last one only when ``old_lines``, the old file's length, is known), folded after
    ``fold_after`` rows or pairs."""
    items: list[Item] = []
    last = 0
    for hunk in file.hunks:
        first, end = hunk.old_span
        if first - 1 > last:
            items.append(Skip(first - 1 - last))
        items.append(hunk.header)
        items += hunk.pairs if side_by_side else hunk.rows
        last = max(last, end)
    if file.hunks and old_lines is not None and old_lines > last:
        items.append(Skip(old_lines - last))
    rows = 0
    for at, item in enumerate(items):
        rows += isinstance(item, (Row, Pair))
        if rows > fold_after:
            return Drawn(tuple(items[:at]), tuple(items[at:]))
    return Drawn(tuple(items), ())
