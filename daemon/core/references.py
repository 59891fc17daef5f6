"""Keep references right when a change retires notes: rewrite them, then check the result.

Every live note that refers to a note the change retires is rewritten to refer to the note
that replaces it (the survivor of a merge, the newer note of a supersession), in the
syntax it was written in; only the target's characters change. The replacing note's own
reference to the note it replaces (a supersede's "earlier plan: [v1](v1.md)", a merged line
naming the survivor) would become a link to itself: it is left as its words instead. What cannot be rewritten
(the referring note is pinned, nothing replaces the target, the syntax cannot name the
new note) is recorded as dangling. Then every note the change writes is read again as
the agent would read it after the change: a reference there that resolved to a live note
before and no longer does is dangling too. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from daemon.core.links import Names, Reference, find, resolve_markdown, spelled
from daemon.core.links import rewrite as respell
from daemon.core.notes import Note
from daemon.core.proposals import Dangling
from daemon.core.reader import MARKDOWN
from daemon.core.view import StoreView


@dataclass
class Kept:
    """The notes a change rewrites for its references, and what it could not keep."""

    written: dict[str, bytes] = field(default_factory=dict)
    rewritten: int = 0
    unlinked: int = 0
    dangling: list[Dangling] = field(default_factory=list)


def keep(view: StoreView, after: Mapping[str, bytes | None], gone: set[str], replaced: Mapping[str, str | None], *, by_key: bool = False, moved_from: tuple[str, ...] = (), only: frozenset[str] | None = None) -> Kept:
    """Rewrite references to ``replaced`` (a target, or with ``by_key`` a reference key ->
    the note that replaces it, None: nothing does) in every live note that stays (of
    ``only``, when given); ``gone``: notes the change retires or removes; ``after``: the
    change's files so far.

    Notes the change writes are read in their new text, so lines a merge moved into the
    survivor are kept right too; a relative link among them that was written from one of
    ``moved_from`` (the merged-away notes) is rewritten to mean, from the survivor's folder,
    the note it meant where it was written.
    """
    names_after = _names_after(view, after)
    live_after = _LiveAfter(view, after, gone)
    kept = Kept()
    referrers = {ref.source for key in replaced for ref in (view.keyed if by_key else view.incoming).get(key, ())}
    if only is not None:
        referrers &= only
    written = {p for p, data in after.items() if data is not None and p in live_after}
    for source in sorted(referrers | written):
        if source not in live_after:
            continue  # it retires too
        note = _current(view, after, source)
        text = note.data.decode("utf-8", errors="replace")
        spell: dict[Reference, str | None] = {}
        own = _self_references(view, source) if source in written else frozenset()
        words = 0
        for ref in view.references_in(note):
            new, ok = _replacement(ref, replaced, by_key, moved_from if source in written else (), live_after, source)
            if not ok:
                if source in written and ref.target == source and (ref.syntax, ref.written) not in own and not view.notes[source].pinned:
                    spell[ref], words = None, words + 1  # a line moved in that named this note: a link to itself
                continue
            if new == source and not view.notes[source].pinned:
                spell[ref], words = None, words + 1  # the note it named is this one now: its words stay, no link to itself
                continue
            why = _why_not(view, source, ref, new, names_after, unlink=by_key)
            if why:
                kept.dangling.append(Dangling(source, ref.line, ref.syntax, ref.written, why))
                continue
            spell[ref] = None if new is None else spelled(ref, new, names_after)
        if spell:
            kept.written[source] = respell(text, spell).encode("utf-8")
            kept.rewritten += words + sum(1 for v in spell.values() if v is not None)
            kept.unlinked += sum(1 for v in spell.values() if v is None) - words
    return kept


def _self_references(view: StoreView, path: str) -> frozenset[tuple[str, str]]:
    """The references a note made to itself before the change (a Cline task's heading names
    its own id): those stay as they are."""
    return frozenset((r.syntax, r.written) for r in view.references.get(path, ()) if r.target == path)


class _LiveAfter:
    """Whether a note is live after the change (``path in live_after``), without a set of the store."""

    def __init__(self, view: StoreView, after: Mapping[str, bytes | None], gone: set[str]) -> None:
        self.view, self.after, self.gone = view, after, gone

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and path not in self.gone and self.after.get(path, b"") is not None and self.view.is_live(path)


def _names_after(view: StoreView, after: Mapping[str, bytes | None]) -> Names:
    """What references resolve against once the change is applied: its removed files are gone."""
    return view.names.without({p for p, data in after.items() if data is None})


def _replacement(ref: Reference, replaced: Mapping[str, str | None], by_key: bool, moved_from: tuple[str, ...], live_after: _LiveAfter, source: str) -> tuple[str | None, bool]:
    """What ``ref`` must point at after the change, and whether it must change at all."""
    key = ref.key if by_key else ref.target
    if key in replaced:
        return replaced[key], True
    if ref.syntax == MARKDOWN and moved_from and (ref.target is None or ref.target not in live_after):
        for origin in moved_from:
            meant = resolve_markdown(origin, ref.written)
            if meant is not None and meant != ref.target:
                meant = replaced.get(meant) or meant
                if meant in live_after and meant != source:
                    return meant, True
    return None, False


def _why_not(view: StoreView, source: str, ref: Reference, new: str | None, names_after: Names, *, unlink: bool) -> str | None:
    """Why a reference cannot be rewritten to ``new`` (None: it can)."""
    if view.notes[source].pinned:
        return f"it sits in {source}, which is pinned"
    if new is None:
        return None if unlink else f"nothing replaces {ref.target or ref.written}"
    if spelled(ref, new, names_after) is None:
        return f"a {ref.syntax} reference cannot name {new}"
    return None


def newly_dangling(view: StoreView, after: Mapping[str, bytes | None], gone: set[str], moved_from: tuple[str, ...] = ()) -> list[Dangling]:
    """References in the live notes a change writes that resolved to a live note before
    (or were not there) and resolve to none after the change. A reference that dangled
    already in a note whose lines moved here (``moved_from``) is not new."""
    names_after = _names_after(view, after)
    moved = {(r.syntax, r.written) for p in moved_from for r in view.references.get(p, ()) if not _lands(view, r.target, set())}
    found = []
    for path, data in sorted(after.items()):
        if data is None or path not in view.notes or path in gone:
            continue
        note = Note(path, data, "")
        if not note.live:
            continue
        text = data.decode("utf-8", errors="replace")
        start = len(note.parts.header.decode("utf-8", errors="replace"))
        broken_before = moved | {(r.syntax, r.written) for r in view.references.get(path, ()) if not _lands(view, r.target, set())}
        for ref in find(path, text, start, view.syntaxes_in(path), names_after):
            if not _lands(view, ref.target, gone) and (ref.syntax, ref.written) not in broken_before:
                found.append(Dangling(path, ref.line, ref.syntax, ref.written, "it does not resolve to a live note after the change"))
    return found


def _lands(view: StoreView, target: str | None, gone: set[str]) -> bool:
    return target is not None and target not in gone and view.is_live(target)


def _current(view: StoreView, after: Mapping[str, bytes | None], path: str) -> Note:
    note = view.notes[path]
    data = after.get(path)
    return note if data is None else Note(path, data, "", note.mtime_ns, pinned_by_setting=note.pinned_by_setting)
