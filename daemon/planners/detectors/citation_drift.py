"""Citation drift: a note cites a workspace file that is gone, or that changed after the note.

Opt-in per store (``workspace = PATH``): the service asks the workspace's git about every
cited file first (``PlanContext.citations``). A citation drifted when its file no longer
exists in the work tree while git's history has it (deleted or renamed after the note was
written; a file git never tracked may be a path relative to somewhere else, and is left
alone), or when git's newest commit touching it is later than the note's frontmatter date
(``updated_at`` and the like; a note without one is not compared, file times being no
evidence). One soft-expire per note, quoting its citations and git's evidence (commit, date,
subject). The note may well still be right about the rest, so this waits for a person:
confidence 0.5, below what any shipped policy accepts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from daemon.core.notes import Note
from daemon.core.proposals import SOFT_EXPIRE, Draft
from daemon.planners.citations import Citation, CitedFile, citations
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import MAX_EVIDENCE, quote
from daemon.planners.survivor import can_retire
from daemon.planners.wording import count, names

CONFIDENCE = 0.5
GONE = "gone"
CHANGED = "changed"


def drift_of(note: Note, cited: Citation, fact: CitedFile | None) -> str | None:
    """GONE, CHANGED, or None when the citation still holds (or cannot be checked)."""
    if fact is None or fact.last_commit is None:
        return None
    dated = note.dated()
    after_note = dated is None or fact.last_commit.at > dated[0]
    if not fact.exists:
        return GONE if after_note else None  # removed before the note was written: it may say so
    return CHANGED if dated is not None and after_note else None


class CitationDrift:
    name = "citation-drift"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        if not ctx.citations:
            return []
        drafts = []
        store_notes = set(ctx.view.notes)
        for note in ctx.view.live_notes():
            if not can_retire(ctx.view, note) or note.path in ctx.retiring:
                continue
            drifted = [(c, how) for c in citations(note, store_notes) if (how := drift_of(note, c, ctx.citations.get(c.path)))]
            if drifted:
                drafts.append(self._draft(note, drifted, ctx.citations))
        return drafts

    def _draft(self, note: Note, drifted: list[tuple[Citation, str]], facts: Mapping[str, CitedFile]) -> Draft:
        by_path: dict[str, str] = {}
        for cited, how in drifted:
            by_path.setdefault(cited.path, how)
        told = [self._tell(facts[path], how) for path, how in sorted(by_path.items())]
        dated = note.dated()
        since = f"its {dated[1]} {dated[0].date().isoformat()}" if dated else "it was written (it has no date)"
        hows = set(by_path.values())
        state = {frozenset({GONE}): "gone from the workspace", frozenset({CHANGED}): "changed since the note"}.get(frozenset(hows), "changed or gone since the note")
        reason = f"cites {names(sorted(by_path), 3)}, {state}"
        return Draft(
            kind=SOFT_EXPIRE,
            source=source_of(self),
            confidence=CONFIDENCE,
            title=f"Expire {note.path}: {count(len(by_path), 'cited file')} changed or gone since it was written",
            rationale=(
                f"{note.path} cites {count(len(by_path), 'workspace file')} that git says changed or went away after {since}: "
                + "; ".join(told)
                + ". What it says about them may no longer hold. Only git's history and whether the files exist were read, "
                "never their contents; expiring marks the note and takes it out of the index, it is not deleted, and a person "
                "decides whether it still holds."
            ),
            evidence=tuple(dict.fromkeys(quote(note, c.line) for c, _ in drifted))[:MAX_EVIDENCE],
            retire=(note.path,),
            reason=reason,
        )

    @staticmethod
    def _tell(fact: CitedFile, how: str) -> str:
        commit = fact.last_commit
        assert commit is not None
        when = commit.at.astimezone(dt.timezone.utc).strftime("%Y-%m-%d")
        if how == GONE:
            return f"{fact.path} no longer exists (last in commit {commit.short}, {when}, \"{commit.subject}\")"
        return f"{fact.path} changed in commit {commit.short}, {when}, \"{commit.subject}\""
