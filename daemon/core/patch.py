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
    """Apply hunks to ``source``; untouched regions are joined from their place (views of
    ``source``, never split or copied first: a copy of a megabyte's untouched region into
    fresh pages cost a verified proposal more than its hunks)."""
    from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

    untouched = memoryview(source)
    out: list[bytes | memoryview] = []
    offset, line = 0, 0  # ``offset`` is where 0-based line ``line`` starts
    for hunk in hunks:
        start = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1
        if start < line:
            raise DiffError("hunks out of order")
        begin = offset
        offset, line = _advance(source, offset, start - line), start
        out.append(untouched[begin:offset])
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
    out.append(untouched[offset:])
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
