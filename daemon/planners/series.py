"""Distinct records of a series: notes alike in words that stand for different things.

ADR-017 and ADR-021, sprint 4's and sprint 5's retrospectives, ``week7`` and ``week8``, the
standups of 2026-03-01 and 2026-03-08, the comments on PR #123 and its review: each is one
record of a numbered or dated series, or one part of a record, and two of them are never
duplicates however alike their wording (a template, a recurring agenda). A note's
identifiers are read from its file name and its title: a word followed by a number
(``ADR-017``, ``adr_21``, ``PR #123``, ``sprint 4``, ``week7``, ``v2``; numbers compared as
numbers), a leading number (``0017-use-postgres``), and a date (``2026-03-01``,
``20260301``, or a month: ``2026-03``). Two notes are distinct records when they share a series word with no number in
common, or share a record (same word and number) and each names a part of it the other does
not (``comments`` and ``review``). Words that mark a copy (``copy``, ``backup``, ``old``…)
are no series.

A merge of distinct records is held for a person (``hold``): its confidence at most
``CONFIDENCE``, below what any shipped policy accepts, and a fact in the proposal
(``Draft.held``) that no policy may accept past, the rationale naming the identifiers that
differ. Notes whose bodies are the same text, byte for byte, are copies saved under two
names and merge as before. A newer status note superseding an older checkpoint is a
supersede, not a merge, and is not held here. Pure.
"""

from __future__ import annotations

import dataclasses
import itertools
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from daemon.core.notes import Note
from daemon.core.proposals import MERGE, Draft
from daemon.core.view import StoreView

CONFIDENCE = 0.5
DATE, MONTH = "date", "month"
LEADING = "#"
# words that mark a copy of a note, not a record of a series
COPY_WORDS = frozenset({"copy", "dup", "duplicate", "backup", "bak", "old", "new", "tmp", "temp", "untitled", "draft", "orig", "original"})
# what part of one record a note holds: the comments of a PR, its review
PART_WORDS = frozenset({
    "comment", "comments", "review", "reviews", "retro", "retrospective", "minutes", "agenda", "plan", "planning",
    "summary", "postmortem", "report", "description", "discussion", "feedback", "decision", "spec", "design", "demo",
})  # fmt: skip
_DATE = re.compile(r"(?<!\d)((?:19|20)\d\d)[-_./]?(0[1-9]|1[0-2])[-_./]?(0[1-9]|[12]\d|3[01])(?!\d)")
_MONTH = re.compile(r"(?<!\d)((?:19|20)\d\d)[-_.](0[1-9]|1[0-2])(?![-_.]?\d)")
_TOKEN = re.compile(r"\d+|[A-Za-z]+")
_SEPARATOR = re.compile(r"[\s_\-#.:]*(?:no\.?\s*)?")


@dataclass
class Ids:
    """A note's identifiers: series word -> the values it has there, and how each was written."""

    values: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    written: dict[str, str] = dataclasses.field(default_factory=dict)
    parts: set[str] = dataclasses.field(default_factory=set)

    def add(self, word: str, value: str, shown: str) -> None:
        self.values.setdefault(word, set()).add(value)
        self.written.setdefault(word, shown)


def identifiers(note: Note) -> Ids:
    """The identifiers of a note's file name and title."""
    ids = Ids()
    for text in dict.fromkeys((posixpath.basename(note.path).removesuffix(".md"), note.title)):
        _read(text, ids)
    return ids


def _read(text: str, ids: Ids) -> None:
    for match in _DATE.finditer(text):
        ids.add(DATE, "-".join(match.groups()), match.group(0))
    text = _DATE.sub(" ", text)
    for match in _MONTH.finditer(text):
        ids.add(MONTH, "-".join(match.groups()), match.group(0))
    text = _MONTH.sub(" ", text)
    tokens = list(_TOKEN.finditer(text))
    for i, token in enumerate(tokens):
        word = token.group(0).casefold()
        if not word.isdigit():
            ids.parts |= {word} & PART_WORDS
            continue
        before = tokens[i - 1] if i else None
        if before is not None and not before.group(0).isdigit() and _SEPARATOR.fullmatch(text, before.end(), token.start()):
            series = before.group(0).casefold()
            if series not in COPY_WORDS:
                ids.add(series, str(int(word)), text[before.start() : token.end()])
        elif i == 0:
            ids.add(LEADING, str(int(word)), token.group(0))


def distinct_records(a: Note, b: Note) -> str | None:
    """The sentence naming the identifiers in which two notes are distinct records, or None
    (not records of one series, or the same text byte for byte: copies)."""
    if a.body == b.body:
        return None
    ia, ib = identifiers(a), identifiers(b)
    shared = sorted(ia.values.keys() & ib.values.keys())
    for word in shared:
        if not ia.values[word] & ib.values[word]:
            return f"{a.path} and {b.path} are distinct records of one series ({ia.written[word]} against {ib.written[word]})"
    only_a, only_b = ia.parts - ib.parts, ib.parts - ia.parts
    if shared and only_a and only_b:
        record = ia.written[shared[0]]
        return f"{a.path} and {b.path} are distinct parts of {record} ({', '.join(sorted(only_a))} against {', '.join(sorted(only_b))})"
    return None


def among(notes: Sequence[Note]) -> str | None:
    """The first pair of ``notes`` that are distinct records, said as ``distinct_records`` says it."""
    for a, b in itertools.combinations(notes, 2):
        said = distinct_records(a, b)
        if said is not None:
            return said
    return None


def hold(draft: Draft, view: StoreView) -> Draft:
    """A merge of distinct records, held for a person: confidence at most ``CONFIDENCE``, the
    rationale and the proposal's facts naming the identifiers that differ. Any other draft as
    it is."""
    if draft.kind != MERGE:
        return draft
    said = among([view.notes[p] for p in draft.notes if p in view.notes])
    if said is None:
        return draft
    return dataclasses.replace(
        draft,
        confidence=min(draft.confidence, CONFIDENCE),
        rationale=f"{draft.rationale} Held: {said}, and a merge would fold one record into another; only a person can tell whether they are one.",
        held=(f"merges distinct records: {said}",),
    )
