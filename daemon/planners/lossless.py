"""Does a merged text keep every sentence of its inputs? A cheap, explainable measure.

A model's merge rewrites; a rewrite can silently lose a fact. Each input is cut into units
(bullets, lines, sentences; headings are left out), each unit into a normalised word set (case folded, markdown
bullets, emphasis and punctuation stripped). A unit is covered when at least ``THRESHOLD``
of its words appear in one unit of the merged text, or in two adjacent ones (a sentence
may be split in two), or in a sentence the model listed as dropped with a reason.

Word containment rather than character similarity: reordering words, joining two bullets
or adding context must not count as loss; a missing number or name must.

The other way round, ``invented`` finds what a merged text adds: a unit most of whose
words, or any of whose numbers, occur in none of the inputs states a fact no note stated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

THRESHOLD = 0.8
NEW_WORDS = 0.5  # share of a merged unit's words found in no input above which it is invented
_PREFIX = re.compile(r"^\s*(?:>\s*)*(?:(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?)?")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_WORD = re.compile(r"[^\W_]+")
_FENCE = re.compile(r"^\s*(```|~~~)")


def units(text: str) -> list[str]:
    """Bullets, lines and sentences of a markdown body that hold at least one word.
    Headings are structure, not facts: a merge keeps one note's heading, not all."""
    found = []
    for line in text.splitlines():
        if _FENCE.match(line) or _HEADING.match(line):
            continue
        for sentence in _SENTENCE.split(_PREFIX.sub("", line, count=1)):
            if words(sentence):
                found.append(sentence.strip())
    return found


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def _covered(unit: frozenset[str], pools: Iterable[frozenset[str]]) -> bool:
    need = THRESHOLD * len(unit)
    return any(len(unit & pool) >= need for pool in pools)


def uncovered(inputs: Sequence[str], merged: str, dropped: Sequence[tuple[str, str]]) -> list[str]:
    """Units of the input bodies that neither ``merged`` nor a dropped-with-reason entry
    covers, each once, in input order."""
    merged_sets = [words(u) for u in units(merged)]
    windows = merged_sets + [a | b for a, b in zip(merged_sets, merged_sets[1:])]
    drops = [words(text) for text, reason in dropped if text.strip() and reason.strip()]
    missing: dict[frozenset[str], str] = {}
    for body in inputs:
        for unit in units(body):
            w = words(unit)
            if w not in missing and not _covered(w, windows) and not _covered(w, drops):
                missing[w] = unit
    return list(missing.values())


def invented(inputs: Sequence[str], merged: str) -> list[str]:
    """Units of ``merged`` that say what none of ``inputs`` says: a number no input has, or
    more than ``NEW_WORDS`` of their words found in no input. Headings are left out (a
    merge into a new note gives it a title)."""
    pool = frozenset().union(*(words(body) for body in inputs))
    found = []
    for unit in units(merged):
        w = words(unit)
        new = w - pool
        if any(word.isdigit() for word in new) or len(new) > NEW_WORDS * len(w):
            found.append(unit)
    return found
