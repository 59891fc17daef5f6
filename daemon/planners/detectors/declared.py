"""Declared supersession: a note says it replaces another, and the old one is still live.

Agents and people write ``supersedes: old.md`` on the new note (or ``superseded_by:
new.md`` on the old one) but leave the old note active, so both are read as current.
The declaration is explicit, hence confidence 0.95. Names are store paths, paths relative
to the declaring note's folder, or a bare file name when only one note has it.

One draft per survivor, never overlapping: a note claimed by several newer notes goes to
the newest; in a chain (a supersedes b supersedes c) the tail link goes first and the
next pass takes the next one, so no draft retires a note another draft keeps.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict

from daemon.core.notes import Note
from daemon.core.proposals import SUPERSEDE, Draft, Evidence
from daemon.core.view import StoreView
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import key_lines
from daemon.planners.survivor import can_retire, note_time


class _Resolver:
    """Turn a declared name into a note path, or None."""

    def __init__(self, view: StoreView) -> None:
        self.notes = view.notes
        self.by_name: dict[str, list[str]] = defaultdict(list)
        for path in sorted(view.notes):
            self.by_name[posixpath.basename(path)].append(path)

    def __call__(self, origin: str, name: str) -> str | None:
        if name in self.notes:
            return name
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(origin), name))
        if relative in self.notes:
            return relative
        same = self.by_name.get(name, []) if "/" not in name else []
        return same[0] if len(same) == 1 else None


class DeclaredSupersession:
    name = "declared-supersession"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        view = ctx.view
        edges = self._edges(view)
        # one survivor per retired note: the newest declarer
        best: dict[str, str] = {}
        for new, old in sorted(edges, key=lambda e: (-note_time(view.notes[e[0]]), e[0])):
            best.setdefault(old, new)
        keeps = set(best.values())
        by_survivor: dict[str, list[str]] = defaultdict(list)
        for old, new in best.items():
            if old not in keeps:  # defer: another draft keeps this note
                by_survivor[new].append(old)
        return [self._draft(new, sorted(olds), edges) for new, olds in sorted(by_survivor.items())]

    def _edges(self, view: StoreView) -> dict[tuple[str, str], list[Evidence]]:
        """(survivor, retired) -> the declaring frontmatter lines, from either side."""
        resolve = _Resolver(view)
        edges: dict[tuple[str, str], list[Evidence]] = defaultdict(list)

        def declare(new: str, old: str, declarer: Note, key: str) -> None:
            line = key_lines(declarer, key)
            edges[(new, old)].extend([line] if line else [])

        for note in view.notes.values():
            if note.live and not view.is_index(note.path):
                for name in note.declared_paths("supersedes"):
                    old = resolve(note.path, name)
                    if old and old != note.path and can_retire(view, view.notes[old]):
                        declare(note.path, old, note, "supersedes")
            if can_retire(view, note):
                for name in note.declared_paths("superseded_by"):
                    new = resolve(note.path, name)
                    if new and new != note.path and not view.is_index(new):
                        declare(new, note.path, note, "superseded_by")
        return edges

    def _draft(self, new: str, olds: list[str], edges: dict[tuple[str, str], list[Evidence]]) -> Draft:
        evidence = {e for old in olds for e in edges[(new, old)]}
        return Draft(
            kind=SUPERSEDE,
            source=source_of(self),
            confidence=0.95,
            title=f"Supersede {', '.join(olds)} with {new}",
            rationale=(
                f"The frontmatter declares that {new} replaces {', '.join(olds)}, yet "
                f"{'it is' if len(olds) == 1 else 'they are'} still active, so an agent reads both as current. "
                "Sure: the notes say so themselves."
            ),
            evidence=tuple(sorted(evidence, key=lambda e: (e.path, e.start))),
            retire=tuple(olds),
            survivor=new,
        )
