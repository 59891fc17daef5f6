"""Topical neighbours: notes that share rare terms, weighted as BM25 and TF-IDF weigh them.

Two notes a person would fold into one guide may share no phrase, yet they share the rare
words of their topic (``ruff``, ``vite``, ``fastapi``), and more so in their headings, titles
and file names. Each note's terms are its content words (heading, title and file-name words
count ``TITLE_WEIGHT`` times); a term is rare when at most ``max_df`` notes hold it (a term in
more says as little as a stopword). A pair's score is the sum of its shared rare terms'
inverse document frequency, ``ln(N / df)``, times their weight in the anchor.

Work is bounded by postings, not pairs: each anchor meets only the notes holding one of its
rare terms (at most ``max_df`` per term), gathered with numpy in chunks of anchors, so a
first pass over 10,000 notes stays linear in the store's words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from daemon.core.notes import Note

TITLE_WEIGHT = 2
MIN_SHARED = 2  # weighted rare terms a pair must share (a title word counts twice)
MIN_SCORE_SHARE = 0.2  # of the anchor's own best possible score (all its rare terms shared)
CHUNK = 256  # anchors per numpy step: bounds memory on a first pass
_HEADING = re.compile(r"^\s*#{1,6}\s+(.*)$", re.MULTILINE)
_TOKEN = re.compile(r"[a-z][a-z0-9]{2,}")


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(text.casefold()))


def terms(note: Note, body_words: frozenset[str]) -> dict[str, int]:
    """A note's terms and their weight: body words 1; heading, title and file-name words more."""
    weights = dict.fromkeys(body_words, 1)
    name = note.path.rsplit("/", 1)[-1].removesuffix(".md").replace("_", " ").replace("-", " ")
    for word in _tokens(" ".join((*_HEADING.findall(note.body), note.title, name))):
        weights[word] = TITLE_WEIGHT
    return weights


def topical_neighbours(weights: Sequence[dict[str, int]], anchors: Sequence[int], limit: int, max_df: int) -> dict[int, list[int]]:
    """Per anchor index, up to ``limit`` other indices sharing enough rare terms, best first
    (ties by index)."""
    n = len(weights)
    df: dict[str, int] = {}
    for w in weights:
        for term in w:
            df[term] = df.get(term, 0) + 1
    rare = {t: i for i, t in enumerate(sorted(t for t, c in df.items() if 2 <= c <= max_df))}
    if not rare or not anchors:
        return {}
    idf = np.array([math.log(n / df[t]) for t in sorted(rare, key=rare.__getitem__)])
    term_of, note_of, weight_of = [], [], []
    for i, w in enumerate(weights):
        for term, weight in w.items():
            if term in rare:
                term_of.append(rare[term])
                note_of.append(i)
                weight_of.append(weight)
    order = np.argsort(np.asarray(term_of), kind="stable")
    p_term, p_note, p_weight = np.asarray(term_of)[order], np.asarray(note_of)[order], np.asarray(weight_of)[order]
    starts = np.searchsorted(p_term, np.arange(len(rare)))
    ends = np.searchsorted(p_term, np.arange(len(rare)), side="right")
    by_note = np.argsort(p_note, kind="stable")
    note_starts = np.searchsorted(p_note[by_note], np.arange(n))
    note_ends = np.searchsorted(p_note[by_note], np.arange(n), side="right")
    found: dict[int, list[int]] = {}
    ordered = np.unique(np.asarray(anchors, dtype=np.int64))
    for at in range(0, len(ordered), CHUNK):
        chunk = ordered[at : at + CHUNK]
        own = np.concatenate([by_note[note_starts[a] : note_ends[a]] for a in chunk])  # the anchors' postings
        owner = np.repeat(chunk, note_ends[chunk] - note_starts[chunk])
        term = p_term[own]
        gain = idf[term] * p_weight[own]
        ceiling = np.bincount(np.searchsorted(chunk, owner), weights=gain, minlength=len(chunk))
        lengths = ends[term] - starts[term]
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        other = p_note[np.repeat(starts[term], lengths) + offsets]
        anchor = np.repeat(owner, lengths)
        keep = other != anchor
        keys, inverse = np.unique(anchor[keep] * n + other[keep], return_inverse=True)
        score = np.bincount(inverse, weights=np.repeat(gain, lengths)[keep])
        shared = np.bincount(inverse, weights=np.repeat(p_weight[own], lengths)[keep])
        a_of, b_of = keys // n, keys % n
        strong = (shared >= MIN_SHARED) & (score >= MIN_SCORE_SHARE * ceiling[np.searchsorted(chunk, a_of)])
        a_of, b_of, score = a_of[strong], b_of[strong], score[strong]
        rank = np.lexsort((b_of, -score, a_of))
        a_of, b_of = a_of[rank], b_of[rank]
        first = np.searchsorted(a_of, a_of)  # where each anchor's run starts
        top = np.arange(len(a_of)) - first < limit
        for a, b in zip(a_of[top].tolist(), b_of[top].tolist()):
            found.setdefault(a, []).append(b)
    return found
