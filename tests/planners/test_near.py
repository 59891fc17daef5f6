"""Near-duplicate detector."""

from __future__ import annotations

import datetime as dt

import random

from daemon.core.proposals import MERGE
from daemon.planners.base import DetectorSettings
from daemon.planners.detectors.near import NearDuplicates
from daemon.planners.minhash import Shingler, jaccard

from .factory import BUILD_NOTES, context, note, prose, view

EXTRA = "Docs are published from the main branch only, after review by two people.\n"


def similarity(a: str, b: str) -> float:
    shingle = Shingler(5)
    return jaccard(shingle(" ".join(a.split()).casefold()), shingle(" ".join(b.split()).casefold()))


def detect(*notes, **kw):
    return NearDuplicates().detect(context(view(*notes, **kw)))


def test_found_at_ninety_percent():
    """Two notes at about 0.9 Jaccard become one merge with that confidence."""
    copy = BUILD_NOTES + EXTRA
    assert 0.85 < similarity(BUILD_NOTES, copy) < 0.95
    (draft,) = detect(note("a.md", BUILD_NOTES), note("b.md", copy))
    assert draft.kind == MERGE and draft.source == "detector:near-duplicate@6"
    assert draft.confidence == round(similarity(BUILD_NOTES, copy), 3) < 1.0
    assert draft.title.startswith("Merge 1 near duplicate into ")


def test_not_found_at_fifty_percent():
    """Notes sharing only about half their phrases are left alone."""
    copy = BUILD_NOTES + prose(random.Random(3), 110)
    assert 0.4 < similarity(BUILD_NOTES, copy) < 0.6
    assert detect(note("a.md", BUILD_NOTES), note("b.md", copy)) == []


def test_merge_is_lossless():
    """Every line of every merged note is in the survivor's new text, under a marker per source."""
    first = BUILD_NOTES + EXTRA
    second = BUILD_NOTES.replace("Logs from", "Logs of")
    third = "---\nupdated_at: 2026-05-30\n---\n" + BUILD_NOTES + "Windows wheels are built by hand.\n"
    older = dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc)
    notes = [note("a.md", first, mtime=older), note("b.md", second, mtime=older), note("c.md", third)]
    (draft,) = detect(*notes)
    assert set(draft.notes) == {"a.md", "b.md", "c.md"}
    merged = draft.survivor_data.decode()
    folded = {" ".join(line.split()).casefold() for line in merged.splitlines()}
    for n in notes:
        for line in n.body.splitlines():
            assert not line.strip() or " ".join(line.split()).casefold() in folded
    # c.md's updated_at is newest: its text survives unchanged at the top, its frontmatter gains the votes
    assert merged.startswith("---\nupdated_at: 2026-05-30\nmerged_from: [a.md, b.md]\n---\n" + BUILD_NOTES + "Windows wheels are built by hand.\n")
    for retired in draft.retire:
        assert f"\n<!-- merged from {retired} by dreamd -->\n" in merged


def test_exact_duplicates_are_left_to_the_exact_detector():
    """Identical bodies alone give no near-duplicate draft."""
    assert detect(note("a.md", BUILD_NOTES), note("b.md", BUILD_NOTES.upper())) == []


def test_exact_copies_join_as_one_note():
    """A near copy of two exact copies merges only with the copy that exact duplicates keep."""
    (draft,) = detect(note("a.md", BUILD_NOTES), note("b.md", BUILD_NOTES), note("c.md", BUILD_NOTES + EXTRA))
    assert set(draft.notes) == {"a.md", "c.md"}


def test_pinned_survivor_needing_new_lines_gives_nothing():
    """A pinned survivor may not change, so a merge that would append to it is skipped."""
    pinned = note("p.md", "---\npinned: true\n---\n" + BUILD_NOTES)
    assert detect(pinned, note("b.md", BUILD_NOTES + EXTRA)) == []


def test_pinned_survivor_already_holding_everything_merges():
    """When the pinned survivor already has every line, the merge leaves it unchanged."""
    pinned = note("p.md", "---\npinned: true\n---\n" + BUILD_NOTES + EXTRA)
    (draft,) = detect(pinned, note("b.md", BUILD_NOTES))
    assert draft.survivor == "p.md" and draft.retire == ("b.md",) and draft.survivor_data is None


def test_short_notes_are_not_candidates():
    """Notes under min_words words are skipped even when nearly identical."""
    settings = DetectorSettings(min_words=200)
    drafts = NearDuplicates().detect(
        context(view(note("a.md", BUILD_NOTES), note("b.md", BUILD_NOTES + EXTRA)), settings=settings)
    )
    assert drafts == []


def test_deterministic():
    """The same notes give the same drafts every time."""
    rng = random.Random(11)
    base = [prose(rng, 120) for _ in range(6)]
    notes = [note(f"n{i}.md", text) for i, text in enumerate(base)]
    notes += [note(f"m{i}.md", text + EXTRA) for i, text in enumerate(base[:3])]
    assert detect(*notes) == detect(*reversed(notes))
    assert len(detect(*notes)) == 3
