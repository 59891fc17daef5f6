"""Dangling references: links between notes that point at no live note.

A reference to a note that is missing or retired sends the agent to nothing, or to stale
knowledge. When the store knows what replaced the target (a retired note's
``superseded_by``, followed to a live note, in place or in the archive root), a relink
points the reference there, in its own syntax; only those characters change. When nothing
says what replaced it, a second relink turns the link into its plain words, and is held
for a person with the evidence: only they know where it should point. Task ids (Cline)
are records, not links, and the notes that tell an agent how to keep its memory (Serena's
memory_maintenance) cite names as examples of the syntax, so those are repaired but never
unlinked. References to notes this
pass already retires are left to the proposals that retire them.
"""

from __future__ import annotations

import posixpath
import re

from daemon.core.links import Reference
from daemon.core.notes import Note
from daemon.core.proposals import RELINK, Draft, Evidence
from daemon.core.reader import TASK_ID
from daemon.core.view import DEFAULT_ARCHIVE_DIR, StoreView
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import quote
from daemon.planners.wording import count, names

MAX_HOPS = 20
_NUMBERED = re.compile(r"\.\d+(\.md)$")  # archive/a.2.md: the second note archived as a.md


class DanglingReferences:
    name = "dangling-reference"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        view = ctx.view
        replaced = _replacements(view)
        known: dict[str, str] = {}
        unknown: dict[str, list[Reference]] = {}
        found: dict[str, list[Reference]] = {}
        for refs in view.references.values():
            for ref in refs:
                if ref.target is not None and view.is_live(ref.target):
                    continue
                if ref.candidates > 1 or ref.target in ctx.retiring or ref.named in ctx.retiring:
                    continue  # ambiguous, or a proposal of this pass rewrites it
                new = _follow(view, replaced, ref)
                if new is not None:
                    known[ref.key] = new
                    found.setdefault(ref.key, []).append(ref)
                elif ref.syntax != TASK_ID and ref.source not in view.reader.instructions:
                    unknown.setdefault(ref.key, []).append(ref)
        drafts = []
        if known:
            drafts.append(self._repair(view, known, found))
        if unknown:
            drafts.append(self._unlink(view, unknown))
        return drafts

    def _repair(self, view: StoreView, known: dict[str, str], found: dict[str, list[Reference]]) -> Draft:
        refs = [r for key in sorted(known) for r in found[key]]
        pairs = names([f"{key.split(':', 1)[-1]} -> {known[key]}" for key in sorted(known)])
        return Draft(
            kind=RELINK,
            source=source_of(self),
            confidence=0.9,
            title=f"Point {count(len(refs), 'reference')} at the notes that replaced their targets",
            rationale=(
                f"{count(len(refs), 'reference')} in live notes point{'s' if len(refs) == 1 else ''} at notes that are retired or gone, "
                f"whose frontmatter names what replaced them ({pairs}). "
                "Each is rewritten, in its own syntax, to the live note at the end of that chain; nothing else changes."
            ),
            evidence=_evidence(view, refs),
            relink=tuple(sorted(known.items())),
        )

    def _unlink(self, view: StoreView, unknown: dict[str, list[Reference]]) -> Draft:
        refs = [r for key in sorted(unknown) for r in unknown[key]]
        gone = names([key.split(":", 1)[-1] for key in sorted(unknown)])
        return Draft(
            kind=RELINK,
            source=source_of(self),
            confidence=0.5,
            title=f"Unlink {count(len(refs), 'reference')} to notes that do not exist",
            rationale=(
                f"{count(len(refs), 'reference')} point{'s' if len(refs) == 1 else ''} at {gone}, "
                "which no live note is, and nothing records what replaced them. This turns each link into its plain words, "
                "so the agent stops following it; only a person knows where it should point, so no policy accepts this."
            ),
            evidence=_evidence(view, refs),
            relink=tuple((key, None) for key in sorted(unknown)),
        )


def _evidence(view: StoreView, refs: list[Reference]) -> tuple[Evidence, ...]:
    return tuple(dict.fromkeys(quote(view.notes[r.source], r.line) for r in refs[:20]))


def _replacements(view: StoreView) -> dict[str, str]:
    """Reference key -> the store path that replaced it, from retired notes' ``superseded_by``."""
    found: dict[str, str] = {}
    prefix, legacy = view.archive_dir + "/", DEFAULT_ARCHIVE_DIR + "/"
    retired = [(p, n) for p, n in view.notes.items() if not n.live]
    old = [(_NUMBERED.sub(r"\1", p[len(legacy) :]), n) for p, n in sorted(view.notes.items()) if p.startswith(legacy) and prefix != legacy]
    archived = [(_NUMBERED.sub(r"\1", p[len(prefix) :]), n) for p, n in sorted(view.archive_notes.items()) if p.startswith(prefix)]
    for original, note in (*old, *archived, *retired):  # notes in place win over archive copies
        target = _declared(view, original, note)
        if target is None:
            continue
        found[original] = target
        for name in _wiki_names(original, note):
            found.setdefault(f"wiki:{name}", target)
    return found


def _declared(view: StoreView, original: str, note: Note) -> str | None:
    for name in note.declared_paths("superseded_by"):
        for candidate in (name, posixpath.normpath(posixpath.join(posixpath.dirname(original), name))):
            if candidate in view.notes:
                return candidate
    return None


def _wiki_names(original: str, note: Note) -> list[str]:
    names = [posixpath.basename(original).removesuffix(".md"), original.removesuffix(".md")]
    title = note.meta.get("name")
    return ([title.strip()] if isinstance(title, str) and title.strip() else []) + names


def _follow(view: StoreView, replaced: dict[str, str], ref: Reference) -> str | None:
    """The live note at the end of the chain of replacements of what ``ref`` points at."""
    key = ref.target if ref.target is not None else ref.key
    for _ in range(MAX_HOPS):
        new = replaced.get(key)
        if new is None:
            return None
        if view.is_live(new):
            return new
        key = new
    return None
