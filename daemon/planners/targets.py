"""Near-miss targets: the live note a reference that lands nowhere was most likely written for.

Agents and people rename, move and re-spell notes: ``[[project-bga-player-metadata]]`` when
the note is ``project_bga_player_metadata.md``, ``[x](login.md)`` after ``login.md`` moved to
``auth/``, ``mem:Auth_Login`` for ``auth_login.md``, ``[[deploy-steps.md]]``. Such a link is a
repoint to the note that exists, never an unlink. A note is a candidate when its name is the
one written once folder, case, ``_``/``-``/space and ``.md`` are set aside: first the same
folder (a path link re-spelled), else anywhere in the store (moved, or re-spelled there too);
a ``[[name]]`` matches frontmatter names, file stems and folder/name paths alike. Exactly one
candidate is a repoint; several are for a person to choose from; none, and the target exists
nowhere. Pure: lookups in tables built once per view.
"""

from __future__ import annotations

import posixpath
import re
import weakref
from dataclasses import dataclass

from daemon.core.links import Names, Reference, fold
from daemon.core.reader import MARKDOWN, MEM, WIKI, note_name
from daemon.core.view import StoreView

SEPARATORS = "_, - or spaces"


@dataclass(frozen=True)
class Near:
    """What a dangling name could mean: the live notes found, and what was looked for."""

    candidates: tuple[str, ...]
    looked_for: str  # as a rationale says it

    @property
    def unique(self) -> str | None:
        return self.candidates[0] if len(self.candidates) == 1 else None


class Targets:
    """Live notes by their names folded, for every near-miss lookup of one view."""

    def __init__(self, view: StoreView) -> None:
        self._paths: dict[str, list[str]] = {}  # folded folder/name -> notes
        self._stems: dict[str, list[str]] = {}  # folded file stem -> notes, any folder
        self._titles: dict[str, list[str]] = {}  # folded frontmatter name -> notes
        self._seen: dict[str, Near] = {}
        for note in view.live_notes():
            self._paths.setdefault(fold(note_name(note.path)), []).append(note.path)
            self._stems.setdefault(fold(posixpath.basename(note_name(note.path))), []).append(note.path)
            title = view.names.titles.get(note.path)
            if title:
                self._titles.setdefault(fold(title), []).append(note.path)

    @classmethod
    def of_view(cls, view: StoreView) -> Targets:
        """The targets of ``view``, built once however many detectors and findings ask (a pass
        asks four times, over the same view): the last view's are kept while it lives."""
        global _last  # noqa: PLW0603 - one view's tables, let go with the view
        last = _last
        if last is None or last[0]() is not view:
            last = _last = (weakref.ref(view, _forget), cls(view))
        return last[1]

    def of(self, ref: Reference) -> Near | None:
        """The near misses of a reference (None: its syntax names no note by name or path)."""
        if ref.syntax in (MARKDOWN, MEM) and ref.named:
            key, look = ref.named, self.of_path
        elif ref.syntax == WIKI:
            key, look = f"wiki:{ref.written.strip()}", lambda k: self.of_name(k[5:])
        else:
            return None
        if key not in self._seen:  # a note may name one target many times
            self._seen[key] = look(key)
        return self._seen[key]

    def of_path(self, path: str) -> Near:
        """Notes a store path (a link's or an index entry's target) may have meant."""
        name = note_name(path)
        stem = name.rsplit("/", 1)[-1]
        folded = fold(stem)
        found = (self._paths.get(fold(name)) if "/" in name else self._paths.get(folded)) or self._stems.get(folded, [])
        return Near(tuple(found), f"{path}, and {stem}.md in any folder, in any case, with {SEPARATORS} for one another")

    def of_name(self, name: str) -> Near:
        """Notes a ``[[name]]`` may have meant: its frontmatter name, stem or path re-spelled,
        with or without ``.md``."""
        bare = name[:-3] if name.casefold().endswith(".md") else name
        key = fold(bare)
        found = dict.fromkeys([*self._titles.get(key, ()), *self._stems.get(key, ()), *self._paths.get(key, ())])
        if not found and "/" in bare:  # [[old/folder/name]]: the note moved
            found = dict.fromkeys(self._stems.get(fold(posixpath.basename(bare)), ()))
        looked = f"a note named or titled {bare!r}, in any folder or case, with {SEPARATORS} for one another, with or without .md"
        return Near(tuple(sorted(found)), looked)


_last: tuple[weakref.ref[StoreView], Targets] | None = None


def _forget(gone: weakref.ref[StoreView]) -> None:
    """The view of the kept targets is gone: so are they."""
    global _last  # noqa: PLW0603
    if _last is not None and _last[0] is gone:
        _last = None


def how(ref: Reference, new: str, names: Names) -> str:
    """How the note found differs from what was written: ``in another folder, in another case``."""
    if ref.syntax == WIKI:
        written = ref.written.strip()
        said = written[:-3] if written.casefold().endswith(".md") else written
        parts = ["with .md after its name"] if said != written else []
        spellings = [n for n in (names.titles.get(new), posixpath.basename(note_name(new)), note_name(new)) if n]
        if said not in spellings:
            like = next((n for n in spellings if fold(n) == fold(said)), None)
            parts += _spelling(said, like) if like is not None else ["in another folder"]
        return ", ".join(parts) or "under another name"
    named = ref.named or ""
    parts = ["in another folder"] if posixpath.dirname(named) != posixpath.dirname(new) else []
    parts += _spelling(posixpath.basename(named), posixpath.basename(new))
    return ", ".join(parts) or "under another name"


_RUNS = re.compile(r"[\s_\-]+")


def _spelling(written: str, found: str) -> list[str]:
    """``in another case``, ``with _, - or spaces for one another`` (and both)."""
    if written == found:
        return []
    if written.casefold() == found.casefold():
        return ["in another case"]
    same_case = _RUNS.sub("-", written) == _RUNS.sub("-", found)
    return [f"with {SEPARATORS} for one another" + ("" if same_case else ", in another case")]
