"""MinHash signatures and LSH banding over word shingles, vectorised with numpy.

Comparing every pair of notes is quadratic; MinHash + LSH proposes only the pairs whose
signatures share a band, and the caller checks those with the exact Jaccard. Everything is
seeded, so the same notes give the same candidates on every machine.

- Each distinct word is hashed once (BLAKE2b, 8 bytes); a shingle's uint64 hash is a
  polynomial of its words' hashes, computed for a whole note at once.
- Permutation i maps a shingle x to the top 32 bits of ``a_i*x + b_i`` modulo 2**64 with
  odd a_i (multiply-shift, Dietzfelbinger et al.): a universal family without division,
  which numpy computes in place at several times the speed of a prime modulus.
"""

from __future__ import annotations

import array
import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SEED = 20240607
_SHIFT = np.uint64(32)
_POLY = np.uint64(0x9E3779B97F4A7C15)  # odd: a shingle's hash depends on word order


class Shingler:
    """Word k-shingles of normalised text as sorted unique uint64 hashes."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._words = _WordHashes()

    def __call__(self, text: str) -> np.ndarray:
        return self.many((text,))[0]

    def many(self, texts: Iterable[str], chunk: int = 2000) -> list[np.ndarray]:
        """``[self(t) for t in texts]``, with the shingles of ``chunk`` texts at a time computed
        over all their words at once: per text, only the split, the words' hashes looked up
        (into one flat array: no list of words outlives its text) and the final sort are left
        (a store's notes are many short texts)."""
        out: list[np.ndarray] = []
        for batch in _batches(texts, chunk):
            out += self._batch(batch)
        return out

    def _batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        flat = array.array("Q")  # every word's hash, text after text
        lengths = []
        for text in texts:
            words = text.split()
            flat.extend(map(self._words.__getitem__, words))  # a new word is hashed on its first lookup
            lengths.append(len(words))
        hashes = np.frombuffer(flat, dtype=np.uint64) if flat else np.zeros(0, dtype=np.uint64)
        rolling = _rolling(hashes, self.size)  # the shingle starting at every word of the batch
        out: list[np.ndarray] = []
        start = 0
        for length in lengths:
            if length >= self.size:  # only the shingles that start and end inside this text
                out.append(_unique(rolling[start : start + length - self.size + 1]))
            else:  # shorter than one shingle: one shingle of it all (none of no words)
                out.append(_unique(_rolling(hashes[start : start + length], length)))
            start += length
        return out



class _WordHashes(dict[str, int]):
    """Each word's hash (BLAKE2b, 8 bytes), made the first time the word is looked up: a
    lookup stays the dictionary's own, in C, for every word seen before."""

    def __missing__(self, word: str) -> int:
        value = self[word] = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
        return value


def _rolling(hashes: np.ndarray, width: int) -> np.ndarray:
    """The hash of the ``width`` words starting at each word that has as many after it: a
    polynomial of their hashes (modulo 2**64, so word order counts)."""
    count = max(len(hashes) - width + 1, 0) if len(hashes) else 0
    shingles = np.zeros(count, dtype=np.uint64)
    for j in range(width if count else 0):
        shingles *= _POLY
        shingles += hashes[j : j + count]
    return shingles


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``: sorted, each value once. Sorting and dropping repeats is several
    times faster than numpy's own on a note's few hundred shingles (which hashes them first)."""
    ordered = np.sort(values)
    if ordered.size < 2:
        return ordered
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _batches(items: Iterable[str], size: int) -> Iterator[tuple[str, ...]]:
    """Tuples of ``size`` items in order, the last one shorter (``itertools.batched``, new in 3.12)."""
    found = iter(items)
    while batch := tuple(itertools.islice(found, size)):
        yield batch


class MinHasher:
    """``num_perm`` seeded universal hash permutations."""

    def __init__(self, num_perm: int, seed: int = SEED) -> None:
        rng = np.random.default_rng(seed)
        self.a = rng.integers(0, 1 << 64, num_perm, dtype=np.uint64, endpoint=False) | np.uint64(1)
        self.b = rng.integers(0, 1 << 64, num_perm, dtype=np.uint64, endpoint=False)[:, None]

    def signature(self, shingles: np.ndarray) -> np.ndarray:
        """Minimum of each permutation over the shingles (shape ``(num_perm,)``)."""
        values = np.multiply.outer(self.a, shingles)  # wraps modulo 2**64, as intended
        values += self.b  # in place: no temporaries
        minima: np.ndarray = values.min(axis=1)
        minima >>= _SHIFT  # the top 32 bits of the least value are the least top 32 bits
        return minima

    def signatures(self, shingle_sets: Sequence[np.ndarray], block: int = 8192) -> np.ndarray:
        """``np.stack([self.signature(s) for s in shingle_sets])`` (shape ``(len, num_perm)``),
        computed over a block of sets at once: one product, one sum and one segmented minimum
        per block of about ``block`` shingles, where a set at a time paid numpy's set-up for
        each of a store's thousands of short notes; the blocks on as many threads as the
        process has processors, up to four (numpy lets go of the interpreter while it counts).
        10,000 notes on 2 processors: 0.42 s where 0.85 s; larger blocks leave the cache,
        smaller ones pay the set-up again. An empty set raises as ``signature`` does."""
        out = np.empty((len(shingle_sets), len(self.a)), dtype=np.uint64)
        spans = list(_spans([s.size for s in shingle_sets], block))

        def fill(span: tuple[int, int]) -> None:
            start, end = span
            sets = shingle_sets[start:end]
            if any(s.size == 0 for s in sets):
                out[start:end] = np.stack([self.signature(s) for s in sets])
                return
            values = np.multiply.outer(self.a, np.concatenate(sets))
            values += self.b
            offsets = np.cumsum([0, *(s.size for s in sets[:-1])])
            out[start:end] = np.minimum.reduceat(values, offsets, axis=1).T >> _SHIFT

        workers = min(len(spans), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 4)
        if workers > 1:
            with ThreadPoolExecutor(workers, thread_name_prefix="dreamd-minhash") as pool:
                list(pool.map(fill, spans))
        else:
            for span in spans:
                fill(span)
        return out


def _spans(sizes: Sequence[int], block: int) -> Iterator[tuple[int, int]]:
    """Consecutive ranges of ``sizes`` each summing to at most ``block`` (or one item)."""
    start = 0
    while start < len(sizes):
        end, total = start, 0
        while end < len(sizes) and (total == 0 or total + sizes[end] <= block):
            total += sizes[end]
            end += 1
        yield start, end
        start = end


def lsh_pairs(signatures: np.ndarray, bands: int, rows: int) -> set[tuple[int, int]]:
    """Index pairs (i < j) whose signatures agree on every row of at least one band."""
    pairs: set[tuple[int, int]] = set()
    if len(signatures) < 2:
        return pairs
    mix = np.random.default_rng(SEED).integers(1, 1 << 63, rows, dtype=np.uint64) | np.uint64(1)
    for band in range(bands):
        # one uint64 per band; a rare collision only adds a candidate the exact check drops
        keys = (signatures[:, band * rows : (band + 1) * rows] * mix).sum(axis=1, dtype=np.uint64)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        sizes = np.diff(np.r_[starts, len(ordered)])
        for start, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
            members = sorted(order[start : start + size].tolist())
            pairs.update(itertools.combinations(members, 2))
    return pairs


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted unique shingle-hash arrays."""
    if not a.size and not b.size:
        return 1.0
    common = np.intersect1d(a, b, assume_unique=True).size
    return common / (a.size + b.size - common)
