"""Exact duplicates: notes whose bodies are the same text once case and whitespace are folded.

Agents re-save the same memory under a new name; every copy costs context and can drift
later. Frontmatter is ignored (it differs in dates and names, not in what the note says).
Each group becomes one merge into the note most worth keeping, whose text stays unchanged
(where the preset allows, its frontmatter records the copies in ``merged_from``), so nothing
is lost and the confidence is 1.0. Two distinct records of a series (ADR-017 and ADR-021,
``daemon.planners.series``) whose bodies differ only in case or whitespace are held for a
person; byte-identical bodies are copies and merge.
"""

from __future__ import annotations

from daemon.core.notes import Note
from daemon.core.view import StoreView
from daemon.core.proposals import MERGE, Draft
from daemon.planners import series
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import first_body_line
from daemon.planners.merge import VOTES, with_votes
from daemon.planners.survivor import Choice, choose


class ExactDuplicates:
    name = "exact-duplicate"
    version = 5  # 2: survivors chosen by references and real dates; 3: merged_from votes; 4: a record names them by id, in metadata, with no marker; 5: distinct records held

    def detect(self, ctx: PlanContext) -> list[Draft]:
        groups: dict[str, list[Note]] = {}
        for note in ctx.view.live_notes():
            if note.normalised_body:
                groups.setdefault(note.normalised_body, []).append(note)
        drafts = []
        for group in groups.values():
            choice = choose(ctx.view, group) if len(group) > 1 else None
            if choice is not None:
                drafts.append(series.hold(self._draft(ctx.view, choice), ctx.view))
        return drafts

    def _draft(self, view: StoreView, choice: Choice) -> Draft:
        survivor, retire = choice.survivor.path, [n.path for n in choice.retire]
        data = with_votes(view, choice.survivor, choice.retire, None)
        kept = f"keeps its text and lists them in {VOTES}" if data is not None else "stays unchanged"
        return Draft(
            kind=MERGE,
            source=source_of(self),
            confidence=1.0,
            title=f"Merge {len(retire)} exact duplicate{'s' if len(retire) > 1 else ''} into {survivor}",
            rationale=(
                f"{', '.join(retire)} {'has' if len(retire) == 1 else 'have'} the same body as {survivor} once case "
                f"and whitespace are ignored. {survivor} {kept} because {choice.why}; "
                f"{'the copy is' if len(retire) == 1 else 'the copies are'} retired pointing at it. "
                "Certain: the texts are identical."
            ),
            evidence=tuple(e for e in map(first_body_line, (choice.survivor, *choice.retire)) if e),
            retire=tuple(retire),
            survivor=survivor,
            survivor_data=data,
        )
