"""Scoring rules of the oracle, on hand-made predictions: exact numbers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from daemon.evaluation.evaluate import Counts, Labels, Predicted, Score, score


def labels(**over) -> Labels:
    base = dict(
        name="s", store=Path("s"), preset="generic", now=None,
        merges=(frozenset({"a.md", "b.md"}), frozenset({"c.md", "d.md", "e.md"})),
        retire={"x.md": "supersede", "y.md": "soft-expire", "z.md": "supersede"},
        keep=frozenset({"k.md", "a.md"}), reindex=True,
    )  # fmt: skip
    return Labels(**{**base, **over})


def p(kind: str, notes: tuple[str, ...], retired: tuple[str, ...] | None = None, state: str = "pending", lossy: bool = False) -> Predicted:
    if retired is None:
        retired = notes[1:] if kind in ("merge", "supersede") else notes
    return Predicted(kind, notes, retired, lossy, state, title=f"{kind} {' '.join(notes)}")


PREDICTIONS = [
    p("merge", ("a.md", "b.md")),  # equal to a group: tp
    p("merge", ("c.md", "d.md")),  # partial overlap: fp, and {c,d,e} missed
    p("merge", ("k.md", "f.md")),  # unlabeled: fp; keep note k.md survives, so not destructive
    p("supersede", ("w.md", "x.md")),  # tp
    p("soft-expire", ("z.md",)),  # z.md labeled supersede: soft-expire fp, supersede miss
    p("soft-expire", ("k.md",), state="refused"),  # refused: counted apart, never destructive
    p("supersede", ("m.md", "a.md")),  # retires a keep note: fp and destructive
    p("merge", ("g.md", "h.md"), lossy=True),  # fp, lossy
    p("reindex", (), ()),  # expected: tp
]


def test_hand_made_predictions_score_exactly():
    """Every rule at once: equal sets, partial overlap, wrong kind, refused, lossy, destructive, reindex."""
    s = score(labels(), PREDICTIONS)
    got = {k: (c.tp, c.fp, c.fn) for k, c in s.kinds.items()}
    # retire counts notes whatever the kind: z.md, labeled supersede, soft-expired, is right there
    assert got == {"merge": (1, 3, 1), "supersede": (1, 1, 1), "soft-expire": (0, 1, 1), "retire": (2, 1, 1), "reindex": (1, 0, 0)}
    assert s.retire_kind.as_dict() == {"agree": 1, "labeled": 2}
    assert (s.kinds["merge"].precision, s.kinds["merge"].recall) == (0.25, 0.5)
    assert (s.kinds["soft-expire"].precision, s.kinds["soft-expire"].recall) == (0.0, 0.0)
    assert s.kinds["retire"].precision == pytest.approx(2 / 3)
    assert (s.refused, s.lossy) == (1, 1)
    assert s.destructive == [{"kind": "supersede", "title": "supersede m.md a.md", "notes": ["a.md"]}]
    assert {"kind": "merge", "notes": ["c.md", "d.md", "e.md"]} in s.missed
    assert {"kind": "merge", "notes": ["c.md", "d.md"]} in s.false_positives
    assert {"kind": "soft-expire", "notes": ["z.md"]} in s.false_positives
    assert {"kind": "supersede", "notes": ["z.md"]} in s.missed


def test_a_retired_note_is_right_whichever_kind_retires_it_and_the_kind_is_reported():
    """Labeled supersede, proposed soft-expire: a true positive of retire, a miss of supersede, kind 0/1."""
    lab = labels(merges=(), retire={"z.md": "supersede"}, reindex=None)
    s = score(lab, [p("soft-expire", ("z.md",))])
    assert (s.kinds["retire"].tp, s.kinds["retire"].fp, s.kinds["retire"].fn) == (1, 0, 0)
    assert (s.kinds["supersede"].fn, s.kinds["soft-expire"].fp) == (1, 1)
    assert s.retire_kind.as_dict() == {"agree": 0, "labeled": 1}
    assert score(lab, [p("supersede", ("w.md", "z.md"))]).retire_kind.as_dict() == {"agree": 1, "labeled": 1}


def test_derived_evidence_is_counted_with_how_many_were_right():
    """Proposals whose evidence dreamd derived: counted when live, correct when they match a
    label of their kind; refused or duplicate ones are not counted."""
    made = [replace(p("merge", ("a.md", "b.md")), derived=True), replace(p("supersede", ("w.md", "z.md")), derived=True),
            replace(p("soft-expire", ("z.md",)), derived=True), replace(p("merge", ("g.md", "h.md")), derived=True, state="refused"),
            replace(p("merge", ("c.md", "d.md")), derived=True), p("supersede", ("w.md", "x.md"))]  # fmt: skip
    s = score(labels(), made)
    assert s.derived.as_dict() == {"proposed": 4, "correct": 2}
    assert (s + s).derived.as_dict() == {"proposed": 8, "correct": 4}
    assert score(labels(), PREDICTIONS).derived.as_dict() == {"proposed": 0, "correct": 0}


def test_a_group_matches_once_and_order_does_not_matter():
    """The same group proposed twice (in any order) is one tp and one fp."""
    s = score(labels(merges=(frozenset({"a.md", "b.md"}),), retire={}, reindex=None), [p("merge", ("b.md", "a.md")), p("merge", ("a.md", "b.md"))])
    assert (s.kinds["merge"].tp, s.kinds["merge"].fp, s.kinds["merge"].fn) == (1, 1, 0)
    assert s.destructive == [{"kind": "merge", "title": "merge b.md a.md", "notes": ["a.md"]}]  # the first retires keep a.md


def test_merging_away_a_keep_note_is_destructive_but_keeping_it_as_survivor_is_not():
    s = score(labels(), [p("merge", ("a.md", "b.md")), p("merge", ("x.md", "k.md"))])
    assert [d["notes"] for d in s.destructive] == [["k.md"]]


def test_nothing_proposed_gives_undefined_precision_and_full_misses():
    s = score(labels(), [])
    assert s.kinds["merge"].as_dict() == {"tp": 0, "fp": 0, "fn": 2, "precision": None, "recall": 0.0}
    assert s.kinds["reindex"].as_dict() == {"tp": 0, "fp": 0, "fn": 1, "precision": None, "recall": 0.0}
    assert Counts().as_dict() == {"tp": 0, "fp": 0, "fn": 0, "precision": None, "recall": None}


def test_reindex_unlabeled_is_not_scored_and_unexpected_reindex_is_a_false_positive():
    assert score(labels(reindex=None), [p("reindex", (), ())]).kinds["reindex"].as_dict()["fp"] == 0
    assert score(labels(reindex=False), [p("reindex", (), ())]).kinds["reindex"].fp == 1
    assert score(labels(reindex=True), [p("reindex", (), (), state="refused")]).kinds["reindex"].fn == 1


def test_scores_add_up_per_kind():
    one, two = score(labels(), PREDICTIONS), score(labels(), [])
    total = one + two + Score()
    assert total.kinds["merge"].as_dict() == {"tp": 1, "fp": 3, "fn": 3, "precision": 0.25, "recall": 0.25}
    assert (total.refused, total.lossy, len(total.destructive)) == (1, 1, 1)
