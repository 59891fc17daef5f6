"""Dangling references: links between notes that point at no live note.

A reference to a note that is missing or retired sends the agent to nothing, or to stale
knowledge. Each is a **repoint** when the store says where it should point, in its own syntax,
only the target's characters changing:

- the target is retired and its ``superseded_by`` chain (in place or in the archive root)
  ends at a live note;
- the target exists under another name: the one live note whose name is the one written once
  folder, case, ``_``/``-``/space and ``.md`` are set aside (``daemon.planners.targets``).

A reference that could mean several notes is not repointed: the pass reports it with its
candidates (``ambiguous``, a finding) for a person to choose. Only a target that exists
nowhere (or was retired and names no successor: then a note of its name elsewhere is named,
not guessed at) is **unlinked**, turning the link into its plain words, and the rationale says
where dreamd looked; no policy accepts an unlink.

Every proposal rewrites the references of one note (``MAX_FILES``), with its own diff, so
that a person accepts them one at a time or in a batch, and a rejected one stays rejected
(its change key is that note's) without holding back the others. Its rationale quotes the
lines around each link. Task ids (Cline) are records, not links, and the notes that tell an
agent how to keep its memory (Serena's memory_maintenance) cite names as examples of the
syntax, so those are repaired from ``superseded_by`` but never re-spelled or unlinked.
References to notes this pass already retires, and those in notes it retires, are left to
the proposals that retire them; a pinned note or the index is never rewritten here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from daemon.core.links import Reference, spelled
from daemon.core.notes import Note
from daemon.core.proposals import RELINK, Draft, Evidence
from daemon.core.reader import TASK_ID
from daemon.core.view import DEFAULT_ARCHIVE_DIR, StoreView
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import MAX_EVIDENCE, quote
from daemon.planners.targets import Near, Targets, how
from daemon.planners.wording import count

MAX_HOPS = 20
MAX_FILES = 1  # notes one relink proposal rewrites: one referring note per proposal
MAX_SAID = 5  # references a rationale describes one by one; it counts the rest
SUCCESSOR, NEAR_MISS, UNLINK = 0.9, 0.8, 0.5  # confidence of each kind of fix
_NUMBERED = re.compile(r"\.\d+(\.md)$")  # archive/a.2.md: the second note archived as a.md


@dataclass(frozen=True)
class Fix:
    """What one reference becomes: the live note it is repointed at, or None (unlinked)."""

    ref: Reference
    new: str | None
    why: str
    confidence: float


class DanglingReferences:
    name = "dangling-reference"
    version = 2  # 2: near-miss repoints, one proposal per referring note, unlinks only of what exists nowhere

    def detect(self, ctx: PlanContext) -> list[Draft]:
        fixes: dict[str, list[Fix]] = {}
        for fix in _fixes(ctx):
            fixes.setdefault(fix.ref.source, []).append(fix)
        return [_draft(self, ctx.view, source, found) for source, found in sorted(fixes.items())]


def _fixes(ctx: PlanContext) -> Iterator[Fix]:
    view = ctx.view
    left = {s for s in view.references if s in ctx.retiring or view.is_index(s) or view.notes[s].pinned}
    for _, found in _judged(view, ctx.retiring):
        if isinstance(found, Fix) and found.ref.source not in left:
            yield found


def ambiguous(view: StoreView) -> list[tuple[Reference, tuple[str, ...]]]:
    """References that land on no live note and could mean several: each with its candidates."""
    return [(ref, found.candidates) for ref, found in _judged(view, frozenset()) if isinstance(found, Near)]


def _judged(view: StoreView, retiring: frozenset[str]) -> Iterator[tuple[Reference, Fix | Near]]:
    """Every reference landing on no live note, with what it becomes (a Fix), or the notes it
    could mean (a Near of several); references dreamd leaves alone are not given."""
    replaced, retired = _replacements(view)
    targets = Targets.of_view(view)
    for _, refs in sorted(view.references.items()):
        for ref in refs:
            if ref.target is not None and view.is_live(ref.target):
                continue
            if ref.candidates > 1:  # ambiguous by the agent's own rule
                yield ref, Near(tuple(view.names.wiki(ref.written.strip())), "")
                continue
            if ref.target in retiring or ref.named in retiring:
                continue  # a proposal of this pass rewrites it
            found = _fix(view, retiring, replaced, retired, targets, ref)
            if found is not None:
                yield ref, found


def _fix(view: StoreView, retiring: frozenset[str], replaced: dict[str, str], retired: set[str], targets: Targets, ref: Reference) -> Fix | Near | None:  # noqa: PLR0913
    """What ``ref`` becomes, or the several notes it could mean; None when dreamd leaves it
    (a record id, an example, a note the pass retires meanwhile)."""
    gone = ref.target or ref.named or ref.written
    new = _follow(view, replaced, ref)
    if new is not None:
        return Fix(ref, new, f"{gone} is retired and its superseded_by chain ends at {new}", SUCCESSOR)
    if ref.syntax == TASK_ID or ref.source in view.reader.instructions or (ref.named and ref.named in view.other_files):
        return None
    near = targets.of(ref)
    if ref.target is not None or ref.key in retired or _archived(view, ref):
        how_retired = f"is {view.notes[ref.target].status}" if ref.target is not None else "was retired into the archive"
        alike = f"; {', '.join(near.candidates)} {'has' if len(near.candidates) == 1 else 'have'} its name, if that is what was meant" if near and near.candidates else ""
        return Fix(ref, None, f"{gone} {how_retired} and names no note that replaced it{alike}", UNLINK)
    if near is not None and len(near.candidates) > 1:
        return near
    found = near.unique if near is not None else None
    if found is not None:
        if found in retiring or spelled(ref, found, view.names) is None:
            return None  # the one note found retires in this pass, or the syntax cannot name it
        return Fix(ref, found, f"no note is named {gone} and {found} is the one live note named like it ({how(ref, found, view.names)})", NEAR_MISS)
    looked = f" (looked for: {near.looked_for})" if near is not None else ""
    return Fix(ref, None, f"{gone} exists nowhere in the store{looked}", UNLINK)


def _archived(view: StoreView, ref: Reference) -> bool:
    """Whether a link names a file of the archive (a retired note the agent no longer lists)."""
    return bool(ref.named) and ref.named.startswith((view.archive_dir + "/", DEFAULT_ARCHIVE_DIR + "/"))


def _draft(detector: DanglingReferences, view: StoreView, source: str, fixes: list[Fix]) -> Draft:
    note = view.notes[source]
    moved = [f for f in fixes if f.new is not None]
    unlinked = [f for f in fixes if f.new is None]
    lines = sorted({f.ref.line for f in fixes})
    said = [_said(view, note, line, [f for f in fixes if f.ref.line == line]) for line in lines[:MAX_SAID]]
    more = f"; and {count(len(lines) - MAX_SAID, 'more line')} alike" if len(lines) > MAX_SAID else ""
    tail = ""
    if moved:
        tail += " A repoint changes only the link's target, in its own syntax, to a spelling the agent's own reading resolves to that note."
    if unlinked:
        tail += (
            " An unlinked link keeps its words and stops being a link; only a person knows where it should point, "
            "so no policy accepts this."
        )
    parts = [f"repoint {count(len(moved), 'reference')}" if moved else "", f"unlink {count(len(unlinked), 'reference')}" if unlinked else ""]
    title = " and ".join(p for p in parts if p).capitalize() + f" in {source}" + (" to notes that are gone" if not moved else "")
    return Draft(
        kind=RELINK,
        source=source_of(detector),
        confidence=min(f.confidence for f in fixes),
        title=title,
        rationale=f"In {source}, " + "; ".join(said) + f"{more}.{tail}",
        evidence=tuple(dict.fromkeys(around(note, line) for line in lines[:MAX_EVIDENCE])),
        relink=tuple(sorted({f.ref.key: f.new for f in fixes}.items())),
        relink_in=(source,),
    )


def _said(view: StoreView, note: Note, line: int, fixes: list[Fix]) -> str:
    """One line's references as a rationale tells them: the lines around, what each becomes and why."""
    context = " / ".join(text.strip() for text in around(note, line).quote.split("\n") if text.strip())
    context = context if len(context) <= 240 else context[:239] + "…"
    told = []
    for fix in fixes:
        ref = fix.ref
        if fix.new is None:
            becomes = f"is unlinked to its words {ref.label!r}" if ref.label else "is unlinked"
        else:
            becomes = f"becomes {spelled(ref, fix.new, view.names)!r}"
        told.append(f"{ref.written!r} {becomes}, since {fix.why}")
    return f"line {line} (“{context}”): " + ", and ".join(told)


def around(note: Note, line: int) -> Evidence:
    """The link's line with the body lines just before and after it that say something."""
    first_body = note.parts.header.count(b"\n") + 1
    lines = note.lines
    start, end = line, line
    if line - 1 >= first_body and lines[line - 2].strip():
        start = line - 1
    if line < len(lines) and lines[line].strip():
        end = line + 1
    return quote(note, start, end)


def _replacements(view: StoreView) -> tuple[dict[str, str], set[str]]:
    """Reference key -> the store path that replaced it, from retired notes' ``superseded_by``;
    and the keys of every retired note (so an unlink says the target was retired, not missing)."""
    found: dict[str, str] = {}
    keys: set[str] = set()
    prefix, legacy = view.archive_dir + "/", DEFAULT_ARCHIVE_DIR + "/"
    retired = [(p, n) for p, n in view.notes.items() if not n.live]
    old = [(_NUMBERED.sub(r"\1", p[len(legacy) :]), n) for p, n in sorted(view.notes.items()) if p.startswith(legacy) and prefix != legacy]
    archived = [(_NUMBERED.sub(r"\1", p[len(prefix) :]), n) for p, n in sorted(view.archive_notes.items()) if p.startswith(prefix)]
    for original, note in (*old, *archived, *retired):  # notes in place win over archive copies
        spellings = [original, *(f"wiki:{name}" for name in _wiki_names(original, note))]
        keys.update(spellings)
        target = _declared(view, original, note)
        if target is None:
            continue
        found[original] = target
        for name in spellings[1:]:
            found.setdefault(name, target)
    return found, keys


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
