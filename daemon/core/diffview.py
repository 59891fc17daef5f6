"""A proposal's diff as rows a reader can scan: unified, and side by side.

The review faces (the HTML report, ``dreamd serve``) draw what this returns; parsing stays
here, pure, so a page never re-reads a diff with string tricks of its own. Each ``diff --git``
section is split off first (its header may name a path with a space, which unidiff cannot
split) and its hunks are parsed by unidiff, as ``core.patch`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from unidiff.constants import LINE_TYPE_ADDED, LINE_TYPE_CONTEXT, LINE_TYPE_NO_NEWLINE, LINE_TYPE_REMOVED

from daemon.core.patch import empty_removal, parsed, strip_prefix, unquote_git

ADDED, REMOVED, CONTEXT, NO_NEWLINE = "added", "removed", "context", "no-newline"
_KINDS = {LINE_TYPE_ADDED: ADDED, LINE_TYPE_REMOVED: REMOVED, LINE_TYPE_CONTEXT: CONTEXT, LINE_TYPE_NO_NEWLINE: NO_NEWLINE}
_RENAME = re.compile(r"rename (from|to) (.*)")


@dataclass(frozen=True)
class Row:
    """One line of a hunk: what it is, its numbers in the old and new file, its text."""

    kind: str
    old: int | None
    new: int | None
    text: str


@dataclass(frozen=True)
class Pair:
    """One row of the side-by-side view: the old line on the left, the new on the right."""

    left: Row | None
    right: Row | None


@dataclass(frozen=True)
class Hunk:
    header: str
    rows: tuple[Row, ...]

    @property
    def pairs(self) -> tuple[Pair, ...]:
        """Context on both sides; a run of removed lines faces the added lines that follow it."""
        pairs: list[Pair] = []
        removed: list[Row] = []
        added: list[Row] = []

        def flush() -> None:
            for i in range(max(len(removed), len(added))):
                pairs.append(Pair(removed[i] if i < len(removed) else None, added[i] if i < len(added) else None))
            removed.clear()
            added.clear()

        for row in self.rows:
            if row.kind == REMOVED:
                if added:
                    flush()
                removed.append(row)
            elif row.kind == ADDED:
                added.append(row)
            else:
                flush()
                pairs.append(Pair(row, row))
        flush()
        return tuple(pairs)


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
    return Hunk(header.rstrip(), rows)


def parse(diff: str) -> list[FileDiff]:
    """Every file of a unified diff (as dreamd stores it, git's way), in order."""
    return [file for headers, body in _sections(diff) for file in _files(headers, body)]
