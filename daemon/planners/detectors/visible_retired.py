"""Retired notes the agent still reads: move them out of its sight, bytes unchanged.

No agent preset reads frontmatter, so a note marked ``status: superseded`` that sits where
the agent lists notes is read as current. That happens to notes people retired by hand,
notes retired in place before the store's retire mode changed, and every note of an
archive dreamd kept in the old place (``.dreamd-archive/`` inside a folder the agent lists
at every depth, as Serena and Claude Code do). A relocate moves them into the store's
archive root unchanged, an old archive keeping its layout. Sure, confidence 0.9: the notes
say they are retired; a person still decides.
"""

from __future__ import annotations

from daemon.core.proposals import RELOCATE, Draft
from daemon.core.reader import ARCHIVE
from daemon.core.view import DEFAULT_ARCHIVE_DIR, StoreView
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import key_lines
from daemon.planners.wording import names


class VisibleRetired:
    name = "visible-retired"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        view = ctx.view
        if view.reader.reads_status or view.retire_mode != ARCHIVE:
            return []
        old = f"{DEFAULT_ARCHIVE_DIR}/"
        legacy = old != f"{view.archive_dir}/"
        in_old = sorted(p for p in view.notes if legacy and p.startswith(old) and _movable(view, p))
        marked = sorted(p for p, n in view.notes.items() if not n.live and p not in in_old and _movable(view, p))
        drafts = []
        if in_old:
            drafts.append(self._draft(view, in_old, f"the old archive folder {old} inside the notes folder"))
        if marked:
            drafts.append(self._draft(view, marked, "the notes folder"))
        return drafts

    def _draft(self, view: StoreView, paths: list[str], where: str) -> Draft:
        shown = names(paths)
        evidence = [e for e in (key_lines(view.notes[p], "status") for p in paths) if e]
        return Draft(
            kind=RELOCATE,
            source=source_of(self),
            confidence=0.9,
            title=f"Move {len(paths)} retired note{'s' if len(paths) != 1 else ''} out of {view.reader.agent}'s sight",
            rationale=(
                f"{shown} {'is' if len(paths) == 1 else 'are'} retired (or kept by an earlier archive) but sit{'s' if len(paths) == 1 else ''} in "
                f"{where}, where {view.reader.agent} lists them as notes and reads them as current, whatever their frontmatter says. "
                f"They move into the archive root ({view.archive_dir}/) byte for byte; nothing is deleted."
            ),
            evidence=tuple(evidence[:20]),
            retire=tuple(paths),
        )


def _movable(view: StoreView, path: str) -> bool:
    note = view.notes[path]
    return view.reader.sees(path) and not note.pinned and not view.is_index(path) and not view.is_protected(path)
