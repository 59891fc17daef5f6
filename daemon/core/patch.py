"""Rebuild files from base bytes and a parsed unified diff, to prove a diff says what it claims.

A proposal is stored only when applying its diff (parsed by ``unidiff``) to the base files
gives exactly the result bytes, so what a reviewer reads is what apply writes.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from daemon.core.errors import DiffError
from daemon.core.lines import line_ends


def strip_prefix(name: str) -> str | None:
    """A diff's file name as a store path: unquoted, without git's a/ or b/; None for /dev/null."""
    if name == "/dev/null":
        return None
    name = unquote_git(name)
    return name[2:] if name.startswith(("a/", "b/")) else name


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_C_ESCAPE = re.compile(r'\\([0-7]{3}|[abtnvfr"\\])')


def unquote_git(name: str) -> str:
    """A path as git writes it in a diff header: C-quoted (``"a/tab\\there.md"``) when it holds
    a quote, a backslash or a control character, with octal escapes for other bytes."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body = name[1:-1]
    raw = bytearray()
    position = 0
    for match in _C_ESCAPE.finditer(body):
        raw += body[position : match.start()].encode("utf-8", "surrogateescape")
        code = match.group(1)
        raw.append(int(code, 8) if len(code) == 3 else _C_ESCAPES[code])
        position = match.end()
    raw += body[position:].encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "surrogateescape")


def _line_end(data: bytes, offset: int) -> int:
    """Offset just past the line starting at ``offset`` (lines end at ``\n`` only, as in git)."""
    newline = data.find(b"\n", offset)
    return len(data) if newline < 0 else newline + 1


def _advance(source: bytes, offset: int, count: int) -> int:
    """The offset ``count`` lines past ``offset`` (the last line may lack its ``\n``); a
    DiffError past the end."""
    if count == 0:
        return offset
    return _advance_by_ends(source, offset, count) if len(source) >= LARGE else _advance_by_split(source, offset, count)


def _advance_by_split(source: bytes, offset: int, count: int) -> int:
    """``_advance`` by one split in C, not a loop over the lines."""
    parts = (source if offset == 0 else source[offset:]).split(b"\n", count)
    if len(parts) == count + 1:
        return len(source) - len(parts[-1])
    if len(parts) == count and parts[-1]:
        return len(source)
    raise DiffError("hunk beyond the end of the file")


def _advance_by_ends(source: bytes, offset: int, count: int) -> int:
    """``_advance`` by a lookup in the file's line ends, found once per file: every proposal
    of a pass checks a diff of the same large index, which a split would copy each time."""
    ends = line_ends(source)
    first = bisect.bisect_right(ends, offset)  # ends[first] ends the line holding ``offset``
    if first + count <= len(ends):
        return ends[first + count - 1]
    if first + count - 1 == len(ends) and (ends[-1] if count >= 2 else offset) < len(source):
        return len(source)  # the last line, which lacks its \n
    raise DiffError("hunk beyond the end of the file")


LARGE = 64 * 1024  # bytes: a file whose line ends are worth finding once


def _bare(line: bytes) -> bytes:
    return line[:-1] if line.endswith(b"\n") else line


def _patch_file(source: bytes, hunks) -> bytes:  # noqa: ANN001 - unidiff types
    """Apply hunks to ``source``; untouched regions are copied as slices, never split."""
    from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

    out: list[bytes] = []
    offset, line = 0, 0  # ``offset`` is where 0-based line ``line`` starts
    for hunk in hunks:
        start = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1
        if start < line:
            raise DiffError("hunks out of order")
        begin = offset
        offset, line = _advance(source, offset, start - line), start
        out.append(source[begin:offset])
        trim_last = False  # whether a "No newline" marker applies to out[-1]
        for diff_line in hunk:
            kind = diff_line.line_type
            if kind == LINE_TYPE_NO_NEWLINE:
                if trim_last:
                    out[-1] = _bare(out[-1])
                continue
            value = diff_line.value.encode("utf-8")
            if kind == LINE_TYPE_ADDED:
                out.append(value if value.endswith(b"\n") else value + b"\n")
                trim_last = True
                continue
            if kind not in (LINE_TYPE_CONTEXT, LINE_TYPE_REMOVED):
                continue
            if offset >= len(source):
                raise DiffError(f"hunk does not match the base at line {line + 1}")
            end = _line_end(source, offset)
            current = source[offset:end]
            if _bare(current) != _bare(value):
                raise DiffError(f"hunk does not match the base at line {line + 1}")
            if kind == LINE_TYPE_CONTEXT:
                out.append(current)
            trim_last = kind == LINE_TYPE_CONTEXT
            offset, line = end, line + 1
    out.append(source[offset:])
    return b"".join(out)


_GIT_EXTENDED = re.compile(r"(?:old mode|new mode|deleted file mode|new file mode|index|similarity index|dissimilarity index|rename from|rename to) ")
_RENAME_LINE = re.compile(r"rename (from|to) (.*)")


def _git_sections(diff: str) -> tuple[str, dict[str, str]]:
    """The diff without its ``diff --git`` header blocks, and its renames (target -> source).

    A header names the path twice, space-separated, which unidiff cannot split when the
    path holds a space ("my note.md"); the ``---``/``+++`` lines name it unambiguously, and
    ``rename from``/``rename to`` name a moved file's two paths. A rename with no edit has
    no ``---``/``+++`` lines at all: only its header says what moved. Neither has the
    removal of an empty file; the lines unidiff needs for it are written back from its header.
    Hunk lines never start with these words, so only headers are dropped.
    """
    lines = diff.split("\n")
    out: list[str] = []
    renames: dict[str, str] = {}
    i = 0
    while i < len(lines):
        if lines[i].startswith("diff --git "):
            j = i + 1
            moved: dict[str, str] = {}
            deleted = False
            while j < len(lines) and _GIT_EXTENDED.match(lines[j]):
                found = _RENAME_LINE.fullmatch(lines[j])
                if found:
                    moved[found.group(1)] = unquote_git(found.group(2))
                deleted = deleted or lines[j].startswith("deleted file mode ")
                j += 1
            if set(moved) == {"from", "to"}:
                renames[moved["to"]] = moved["from"]
            if deleted and not (j < len(lines) and lines[j].startswith("--- ")):
                out += empty_removal(lines[i])
            i = j
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out), renames


def empty_removal(header: str) -> list[str]:
    """``---``/``+++`` lines for a removed empty file, from ``diff --git a/P b/P`` (both halves
    the same path, as git writes them, quoted or not)."""
    rest = header[len("diff --git ") :]
    half = (len(rest) - 1) // 2
    old, new = rest[:half], rest[half + 1 :]
    if rest[half : half + 1] != " " or unquote_git(old)[2:] != unquote_git(new)[2:]:
        raise DiffError(f"cannot read the removed file's name in {header!r}")
    return [f"--- {old}", "+++ /dev/null"]


def parsed(text: str) -> Any:
    """The diff parsed by unidiff (imported here: a pass that finds nothing to do parses no diff)."""
    from unidiff import PatchSet

    try:
        return PatchSet(text)
    except Exception as exc:  # unidiff raises its own UnidiffParseError and ValueErrors
        raise DiffError(f"diff does not parse: {exc}") from exc


def rebuild(diff: str, base: dict[str, bytes | None]) -> dict[str, bytes | None]:
    """Apply ``diff`` to ``base`` (path -> bytes, None for absent) and return every file it
    names; a renamed file's old path is in the result as removed."""
    text, renames = _git_sections(diff)
    patch = parsed(text)
    results: dict[str, bytes | None] = {}
    for patched in patch:
        source = strip_prefix(patched.source_file)
        target = strip_prefix(patched.target_file)
        path = target or source
        if path is None:
            raise DiffError("diff names no file")
        before = base.get(source) if source else None
        if source is not None and before is None:
            raise DiffError(f"diff changes {source}, which is not in the base")
        if target is None:
            results[path] = None
            continue
        results[path] = _patch_file(before or b"", patched)
    for target, source in renames.items():
        if base.get(source) is None:
            raise DiffError(f"diff renames {source}, which is not in the base")
        results.setdefault(target, base[source])  # a rename with no edit: the same bytes
        results[source] = None
    return results


def file_stats(diff: str) -> list[tuple[str, int, int]]:
    """Per file of a diff: its path (``old => new`` for a rename), lines added, lines removed."""
    text, renames = _git_sections(diff)
    patch = parsed(text)
    stats = []
    for patched in patch:
        target = strip_prefix(patched.target_file)
        path = strip_prefix(patched.source_file) if target is None else target
        shown = f"{renames[path]} => {path}" if path in renames else str(path)
        stats.append((shown, patched.added, patched.removed))
    edited = {strip_prefix(p.target_file) for p in patch}
    stats += [(f"{source} => {target}", 0, 0) for target, source in renames.items() if target not in edited]
    return stats


def edit_lines(diff: str, path: str) -> tuple[list[str], list[str]]:
    """The lines a diff removes from ``path`` and the lines it adds, in order: what the edit
    is, wherever in the file it lands."""
    from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_REMOVED

    removed: list[str] = []
    added: list[str] = []
    for patched in parsed(_git_sections(diff)[0]):
        if path in (strip_prefix(patched.source_file), strip_prefix(patched.target_file)):
            for hunk in patched:
                removed += [line.value for line in hunk if line.line_type == LINE_TYPE_REMOVED]
                added += [line.value for line in hunk if line.line_type == LINE_TYPE_ADDED]
    return removed, added


@dataclass(frozen=True)
class Block:
    """One run of lines a diff removes and adds in a file, and where it sits: ``at``, the
    0-based base line the removed lines start at (or the added ones go before), and ``to``,
    the 0-based line of the result the added ones start at. Lines keep their line ends."""

    at: int
    to: int
    removed: tuple[bytes, ...]
    added: tuple[bytes, ...]


def blocks(diff: str, path: str) -> list[Block]:
    """The runs of removed and added lines the diff makes in ``path`` (edited in place, not
    created or removed), in order; a line that ends the file without a line end is given
    without one, as the file holds it."""
    from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

    text, _ = _git_sections(diff)
    patched = next((p for p in parsed(text) if strip_prefix(p.source_file) == path and strip_prefix(p.target_file) == path), None)
    found: list[Block] = []
    for hunk in patched or ():
        old = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        new = hunk.target_start - 1 if hunk.target_length else hunk.target_start
        run: tuple[int, int, list[bytes], list[bytes]] | None = None
        last: list[bytes] = []
        for line in hunk:
            kind = line.line_type
            if kind == LINE_TYPE_NO_NEWLINE:
                if last:
                    last[-1] = _bare(last[-1])
                continue
            value = line.value.encode("utf-8")
            value = value if value.endswith(b"\n") else value + b"\n"
            if kind == LINE_TYPE_CONTEXT:
                if run is not None:
                    found.append(Block(run[0], run[1], tuple(run[2]), tuple(run[3])))
                    run = None
                last = [value]  # a context line's end is the base's and the result's alike
                old, new = old + 1, new + 1
                continue
            if run is None:
                run = (old, new, [], [])
            if kind == LINE_TYPE_REMOVED:
                run[2].append(value)
                last, old = run[2], old + 1
            elif kind == LINE_TYPE_ADDED:
                run[3].append(value)
                last, new = run[3], new + 1
        if run is not None:
            found.append(Block(run[0], run[1], tuple(run[2]), tuple(run[3])))
    return found


def verify(diff: str, base: dict[str, bytes | None], expected: dict[str, bytes | None]) -> None:
    """Raise DiffError unless the diff turns ``base`` into exactly ``expected``."""
    rebuilt = rebuild(diff, base)
    changed = {p: b for p, b in expected.items() if b != base.get(p)}
    if set(rebuilt) != set(changed):
        raise DiffError(f"diff names {sorted(rebuilt)} but the change writes {sorted(changed)}")
    for path, data in changed.items():
        if rebuilt[path] != data:
            raise DiffError(f"diff does not rebuild {path} byte for byte")


def reapply(diff: str, path: str, current: bytes) -> bytes | None:
    """``current`` with the diff's hunks for ``path`` applied as ``git apply -C0`` applies
    them, or None when one cannot be placed.

    git's rule, followed step by step (apply.c: apply_one_fragment, find_pos,
    match_fragment, update_image): a hunk's old lines (context and removed) must match
    ``current`` exactly, searched outwards from where the new file puts them (an offset is
    allowed), never over lines an earlier hunk wrote; a hunk starting at line 1 must match at
    the start, one with no trailing context at the end; when no place matches, its context
    is dropped a line at a time (the larger side first, both when equal) down to none.
    Removed lines are never fuzzed. In process, so an apply of a run rebases its index edit
    without starting git; tests/diffs/test_reapply.py holds it to git's answers.
    """
    text, _ = _git_sections(diff)
    patched = next((p for p in parsed(text) if strip_prefix(p.source_file) == path and strip_prefix(p.target_file) == path), None)
    if patched is None:
        return None
    if b"\r" in current:  # lines end at \n only, as in git; splitlines would also cut at \r
        split = current.split(b"\n")
        image = _Image([line + b"\n" for line in split[:-1]] + ([split[-1]] if split[-1] else []))
    else:
        image = _Image(current.splitlines(keepends=True))
    for hunk in patched:
        if not image.place(*_hunk_sides(hunk), hunk.target_start - 1 if hunk.target_start else 0, hunk.source_start in (0, 1)):
            return None
    return b"".join(image.lines)


_SPACE = b" \t\n\v\f\r"


def _hunk_sides(hunk) -> tuple[list[bytes], list[bytes], int, int]:  # noqa: ANN001 - a unidiff hunk
    """The hunk's old lines and new lines (bytes, line ends kept), and its leading and
    trailing context counts."""
    from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

    old: list[bytes] = []
    new: list[bytes] = []
    kinds: list[str] = []
    last: tuple[list[bytes], ...] = ()
    for line in hunk:
        kind = line.line_type
        if kind == LINE_TYPE_NO_NEWLINE:
            for side in last:
                side[-1] = _bare(side[-1])
            continue
        value = line.value.encode("utf-8")
        value = value if value.endswith(b"\n") else value + b"\n"
        last = (old, new) if kind == LINE_TYPE_CONTEXT else (old,) if kind == LINE_TYPE_REMOVED else (new,) if kind == LINE_TYPE_ADDED else ()
        for side in last:
            side.append(value)
        kinds += [kind] if last else []
    changes = [i for i, k in enumerate(kinds) if k != LINE_TYPE_CONTEXT]
    leading = changes[0] if changes else len(kinds)
    trailing = len(kinds) - 1 - changes[-1] if changes else 0
    return old, new, leading, trailing


class _Image:
    """A file as git's apply holds it: its lines (ends kept) and which ones a hunk wrote."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.patched = [False] * len(lines)

    def place(self, old: list[bytes], new: list[bytes], leading: int, trailing: int, pos: int, match_beginning: bool) -> bool:  # noqa: PLR0913
        match_end = trailing == 0
        while True:
            at = self._find(old, pos, match_beginning, match_end)
            if at is not None:
                end = at + len(old)
                self.lines[at:end] = new
                self.patched[at:end] = [True] * len(new)
                return True
            if leading <= 0 and trailing <= 0:
                return False
            if match_beginning or match_end:
                match_beginning = match_end = False
                continue
            if leading >= trailing:
                old, new, pos, leading = old[1:], new[1:], pos - 1, leading - 1
            if trailing > leading:
                old, new, trailing = old[:-1], new[:-1], trailing - 1

    def _find(self, old: list[bytes], line: int, match_beginning: bool, match_end: bool) -> int | None:
        """Where ``old`` matches nearest ``line``: tried there, then one further forwards, one
        further backwards, and so on (git's find_pos)."""
        size = len(self.lines)
        if len(old) > size:
            return None
        if match_beginning:
            line = 0
        elif match_end:
            line = size - len(old)
        if not 0 <= line <= size:
            line = size  # git compares unsigned: a line before the first is past the last
        squeezed = [line.translate(None, _SPACE) for line in old]
        if old and old[0].endswith(b"\n"):
            return self._find_by_first_line(old, squeezed, line, match_beginning, match_end)
        backwards = forwards = current = line
        step = 0
        while True:
            if self._matches(old, squeezed, current, match_beginning, match_end):
                return current
            while True:
                if backwards == 0 and forwards == size:
                    return None
                if step & 1:
                    if backwards == 0:
                        step += 1
                        continue
                    backwards -= 1
                    current = backwards
                else:
                    if forwards == size:
                        step += 1
                        continue
                    forwards += 1
                    current = forwards
                break
            step += 1

    def _find_by_first_line(self, old: list[bytes], squeezed: list[bytes], line: int, match_beginning: bool, match_end: bool) -> int | None:
        """``_find``'s answer when the first old line ends with a line end: then a place can
        match only where the file holds that exact line (the old bytes must start there), so
        those places are found in C and tried in git's order (nearest first, forwards first)."""
        places, at = [], -1
        try:
            while True:
                at = self.lines.index(old[0], at + 1)
                places.append(at)
        except ValueError:
            pass
        for at in sorted(places, key=lambda p: (abs(p - line), p < line)):
            if self._matches(old, squeezed, at, match_beginning, match_end):
                return at
        return None

    def _matches(self, old: list[bytes], squeezed: list[bytes], at: int, match_beginning: bool, match_end: bool) -> bool:
        """git's match_fragment: within the file (to its end for ``match_end``), at its start for
        ``match_beginning``, no line written by an earlier hunk, each line equal but for
        whitespace, then the old bytes found byte for byte at that line (a last old line with no
        line end matches the start of the file's line)."""
        end = at + len(old)
        if end > len(self.lines) or (match_end and end != len(self.lines)) or (match_beginning and at):
            return False
        if old and self.lines[at] != old[0] and self.lines[at].translate(None, _SPACE) != squeezed[0]:
            return False  # the first line decides for almost every place tried: checked alone first
        if any(self.patched[at:end]) or [line.translate(None, _SPACE) for line in self.lines[at:end]] != squeezed:
            return False  # git's quick line hash ignores whitespace
        want, have = b"".join(old), b"".join(self.lines[at:end])
        return have == want if match_end else have.startswith(want)
