"""Citations of workspace files in notes, and what the workspace's git says of each file.

A note that says "the retry loop is in ``src/net/retry.py:88``" is only as true as that file.
Finding citations is pure text work: a path with a folder and an extension
(``src/net/retry.py``), or any file name with a line (``retry.py:88``, ``retry.py:88-95``),
in backticks, a markdown link or plain text. URLs, absolute paths, paths that climb out
(``..``) and names of the store's own notes are not citations. What the workspace holds is
gathered by the service (daemon.service.passes.citations) as ``CitedFile`` facts, so detectors stay
pure functions of what they are given.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass

from daemon.core.notes import Note

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+|www\.\S+")
# a path (folders optional) ending in an extension that starts with a letter, then an optional :line[-line]
_CITED = re.compile(r"(?<![\w/.~:-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?::(\d+)(?:-(\d+))?)?(?![\w/])")


@dataclass(frozen=True)
class Citation:
    """One mention of a workspace file: where in the note, and what it says."""

    note: str
    line: int  # 1-based line of the note
    path: str  # workspace-relative
    written: str  # as the note writes it, line numbers included

    @property
    def has_line(self) -> bool:
        return self.written != self.path


@dataclass(frozen=True)
class Commit:
    """The newest commit of the workspace that touched a cited path."""

    sha: str
    at: dt.datetime  # committer time, aware UTC
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True)
class CitedFile:
    """What the workspace says of one cited path: git metadata and existence, nothing else."""

    path: str
    exists: bool  # in the working tree (lstat: a file's bytes are never read)
    last_commit: Commit | None  # None: git never tracked this path


def citations(note: Note, store_notes: frozenset[str] | set[str] = frozenset()) -> Iterator[Citation]:
    """Every citation of a workspace file in the note's body, in order; the store's own
    notes (``store_notes``) are references, not citations."""
    offset = note.parts.header.count(b"\n")
    for number, line in enumerate(note.lines[offset:], offset + 1):
        text = _URL.sub(" ", line)
        for match in _CITED.finditer(text):
            path, first = match.group(1).removeprefix("./"), match.group(2)
            if (first is None and "/" not in path) or not _inside(path) or path in store_notes:
                continue
            yield Citation(note.path, number, path, match.group(0))


def _inside(path: str) -> bool:
    """Whether a path stays within the workspace as written (no ``..``, no empty parts)."""
    return all(part not in ("", ".", "..") for part in path.split("/"))


def cited_paths(notes: Iterator[Note] | list[Note], store_notes: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The distinct paths the notes cite, sorted: what the service asks the workspace about."""
    return sorted({c.path for n in notes for c in citations(n, store_notes)})
