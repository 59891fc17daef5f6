"""Rebuild files from base bytes and a parsed unified diff, to prove a diff says what it claims.

A proposal is stored only when applying its diff (parsed by ``unidiff``) to the base files
gives exactly the result bytes, so what a reviewer reads is what apply writes.
"""

from __future__ import annotations

import re

from unidiff import PatchSet
from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

from daemon.core.errors import DiffError


def _strip_prefix(name: str) -> str | None:
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def _lines(text: str) -> list[str]:
    """Split on ``\n`` only, as git does (not on form feeds or other Unicode breaks)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def _patch_file(source: str, hunks) -> str:  # noqa: ANN001 - unidiff types
    lines = _lines(source)
    out: list[str] = []
    pos = 0
    for hunk in hunks:
        start = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1
        if start < pos or start > len(lines):
            raise DiffError("hunk out of order or beyond the end of the file")
        out.extend(lines[pos:start])
        pos = start
        previous: list[str] | None = None  # the list the last line went to
        for line in hunk:
            kind = line.line_type
            if kind == LINE_TYPE_NO_NEWLINE:
                if previous is None or not previous:
                    raise DiffError("stray 'No newline' marker")
                previous[-1] = previous[-1].removesuffix("\n")
                continue
            if kind in (LINE_TYPE_CONTEXT, LINE_TYPE_REMOVED):
                if pos >= len(lines) or lines[pos].removesuffix("\n") != line.value.removesuffix("\n"):
                    raise DiffError(f"hunk does not match the base at line {pos + 1}")
                if kind == LINE_TYPE_CONTEXT:
                    out.append(lines[pos])
                    previous = out
                else:
                    previous = [lines[pos]]  # a removed line's marker has nothing to trim
                pos += 1
            elif kind == LINE_TYPE_ADDED:
                out.append(line.value if line.value.endswith("\n") else line.value + "\n")
                previous = out
    out.extend(lines[pos:])
    return "".join(out)


_GIT_EXTENDED = re.compile(r"(?:old mode|new mode|deleted file mode|new file mode|index) ")


def _without_git_headers(diff: str) -> str:
    """Drop ``diff --git`` header blocks that a ``---``/``+++`` pair follows.

    The header names the path twice, space-separated, which unidiff cannot split when the
    path holds a space ("my note.md"); the ``---``/``+++`` lines name it unambiguously.
    Hunk lines never start with these words, so only headers are dropped.
    """
    lines = diff.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("diff --git "):
            j = i + 1
            while j < len(lines) and _GIT_EXTENDED.match(lines[j]):
                j += 1
            if j + 1 < len(lines) and lines[j].startswith("--- ") and lines[j + 1].startswith("+++ "):
                i = j
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def rebuild(diff: str, base: dict[str, bytes | None]) -> dict[str, bytes | None]:
    """Apply ``diff`` to ``base`` (path -> bytes, None for absent) and return every file it names."""
    try:
        patch = PatchSet(_without_git_headers(diff))
    except Exception as exc:  # unidiff raises its own UnidiffParseError and ValueErrors
        raise DiffError(f"diff does not parse: {exc}") from exc
    results: dict[str, bytes | None] = {}
    for patched in patch:
        source = _strip_prefix(patched.source_file)
        target = _strip_prefix(patched.target_file)
        path = target or source
        if path is None:
            raise DiffError("diff names no file")
        before = base.get(source) if source else None
        if source is not None and before is None:
            raise DiffError(f"diff changes {source}, which is not in the base")
        if target is None:
            results[path] = None
            continue
        text = "" if before is None else before.decode("utf-8")
        results[path] = _patch_file(text, patched).encode("utf-8")
    return results


def verify(diff: str, base: dict[str, bytes | None], expected: dict[str, bytes | None]) -> None:
    """Raise DiffError unless the diff turns ``base`` into exactly ``expected``."""
    rebuilt = rebuild(diff, base)
    changed = {p: b for p, b in expected.items() if b != base.get(p)}
    if set(rebuilt) != set(changed):
        raise DiffError(f"diff names {sorted(rebuilt)} but the change writes {sorted(changed)}")
    for path, data in changed.items():
        if rebuilt[path] != data:
            raise DiffError(f"diff does not rebuild {path} byte for byte")
