"""Near duplicates: notes that say almost the same thing in slightly different words.

Agents often re-save a fact with a line changed or added, so memory grows copies that
drift apart. Notes are compared by the Jaccard similarity of their word shingles; MinHash
+ LSH finds candidate pairs without comparing all pairs, and each candidate is confirmed
with the exact Jaccard. Linked pairs form groups (union-find). The merge is lossless: the
survivor keeps its bytes and gains every line of the others it lacks, so confidence (the
group's lowest Jaccard) says how alike the notes were, not how much could be lost. Where a
note is one text the agent shows whole (a Dexto record), the survivor keeps the longest text
instead, and a merge whose other texts say more than it is lossy and says what it drops. Notes
that are distinct records of a series (ADR-017 and ADR-021, two sprints' retrospectives:
``daemon.planners.series``) are alike by template, not duplicates: their merge is held for a
person, naming the identifiers that differ.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from daemon.core.notes import Note
from daemon.core.proposals import MERGE, Draft
from daemon.planners import series
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import first_body_line
from daemon.planners.merge import VOTES, additions, merged_data, one_text, with_votes
from daemon.planners.minhash import Shingler, jaccard
from daemon.planners.similar import SimilarityStats, connected_groups, similar_pairs
from daemon.planners.survivor import Choice, choose, ranked
from daemon.planners.wording import count


class NearDuplicates:
    name = "near-duplicate"
    version = 6  # 2: survivors chosen by references and real dates; 3: merged_from votes; 4: a record names them by id, in metadata, with no marker; 5: distinct records held; 6: a record keeps one text

    def detect(self, ctx: PlanContext) -> list[Draft]:
        return self.plan(ctx)[0]

    def plan(self, ctx: PlanContext) -> tuple[list[Draft], SimilarityStats]:
        """Drafts plus how many exact comparisons they took (for tests and benchmarks)."""
        notes = _candidates(ctx)
        shingle = Shingler(ctx.settings.shingle_size)
        shingles = shingle.many(n.normalised_body for n in notes)
        found, stats = similar_pairs(shingles, ctx.settings)
        position = {n.path: i for i, n in enumerate(notes)}
        drafts: list[Draft] = []
        extra = 0
        for group in connected_groups(len(notes), sorted(found)):
            choice = choose(ctx.view, (notes[i] for i in group))
            if choice is None:
                continue
            if ctx.view.reader.one_text:  # one item of the agent's prompt: one text, never two glued
                added, (merged, kept, dropped) = {}, one_text(choice.survivor, choice.retire)
            else:
                added = additions(choice.survivor, choice.retire)
                merged, kept, dropped = merged_data(choice.survivor, added), None, []
            if merged is not None and choice.survivor.pinned:
                continue  # a pinned survivor must stay byte for byte
            members = sorted(position[n.path] for n in (choice.survivor, *choice.retire))
            score, computed = _lowest(members, found, shingles)
            extra += computed
            data = with_votes(ctx.view, choice.survivor, choice.retire, merged)
            draft = self._draft(choice, added, score, ctx.settings.shingle_size, data, voted=data != merged, text=(kept, dropped))
            drafts.append(series.hold(draft, ctx.view))
        return drafts, replace(stats, comparisons=stats.comparisons + extra)

    def _draft(self, choice: Choice, added: dict[str, list[str]], score: float, size: int, data: bytes | None, *, voted: bool, text: tuple[Note | None, list[str]] = (None, [])) -> Draft:  # noqa: PLR0913
        """Evidence: the survivor's first line, and each retired note's first new line.
        ``text``: for notes that are one text each, the note whose text the survivor keeps and
        the sentences of the others that text drops."""
        survivor, retire = choice.survivor.path, [n.path for n in choice.retire]
        kept, dropped = text
        if kept is not None:
            how = "its text is the longest and stays whole" if kept is choice.survivor else f"it takes {kept.path}'s text, the longest, whole"
        elif added:
            how = "the lines the others add are appended to it under a 'merged from' marker"
        else:
            how = "it already holds every line of the others"
        if voted:
            how += f", and its {VOTES} lists the notes folded into it"
        if dropped:
            loss = (
                f"; the text kept drops {count(len(dropped), 'sentence')} of the others (each note is one text the agent shows whole, "
                f"so two are never glued): “{dropped[0]}”{' …' if len(dropped) > 1 else ''}. Lossy: a person decides."
            )
        else:
            loss = ", so nothing is lost."
        evidence = [first_body_line(choice.survivor)]
        evidence += [first_body_line(n, added[n.path][0] if n.path in added else None) for n in choice.retire]
        return Draft(
            kind=MERGE,
            source=source_of(self),
            confidence=score,
            title=f"Merge {len(retire)} near duplicate{'s' if len(retire) > 1 else ''} into {survivor}",
            rationale=(
                f"{', '.join(retire)} and {survivor} share at least {score:.1%} of their {size}-word phrases "
                f"(exact Jaccard; the least similar pair of the group). {survivor} stays because {choice.why}; "
                f"{how}{loss}"
            ),
            evidence=tuple(e for e in evidence if e),
            retire=tuple(retire),
            survivor=survivor,
            survivor_data=data,
            lossy=bool(dropped),
        )


def _lowest(
    members: list[int], found: dict[tuple[int, int], float], shingles: Sequence[np.ndarray]
) -> tuple[float, int]:
    """The lowest Jaccard between any two members (chains can link dissimilar notes),
    and how many pairs had to be computed because LSH had not already confirmed them."""
    scores, computed = [], 0
    for pair in itertools.combinations(members, 2):
        if pair not in found:
            computed += 1
        scores.append(found[pair] if pair in found else jaccard(shingles[pair[0]], shingles[pair[1]]))
    return min(round(min(scores), 3), 0.999), computed  # below exact duplicates' 1.0


def _candidates(ctx: PlanContext) -> list[Note]:
    """Long-enough live notes, one per exact-duplicate body (the one exact duplicates
    keep), so exact duplicates stay their own detector's business."""
    by_body: dict[str, list[Note]] = {}
    for note in ctx.view.live_notes():
        words = note.normalised_body.count(" ") + 1 if note.normalised_body else 0  # spaces are single
        if words >= max(ctx.settings.min_words, 1):
            by_body.setdefault(note.normalised_body, []).append(note)
    return sorted((ranked(ctx.view, group)[0] for group in by_body.values()), key=lambda n: n.path)
