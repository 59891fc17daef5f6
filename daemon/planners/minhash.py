"""MinHash signatures and LSH banding over word shingles, vectorised with numpy.

Comparing every pair of notes is quadratic; MinHash + LSH proposes only the pairs whose
signatures share a band, and the caller checks those with the exact Jaccard. Everything is
seeded, so the same notes give the same candidates on every machine.

- Every word's uint64 hash is computed from its bytes for many notes at once
  (``word_hashes``); a shingle's is a polynomial of its words' hashes.
- Permutation i maps a shingle x to the top 32 bits of ``a_i*x + b_i`` modulo 2**64 with
  odd a_i (multiply-shift, Dietzfelbinger et al.): a universal family without division,
  which numpy computes in place at several times the speed of a prime modulus.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SEED = 20240607
_SHIFT = np.uint64(32)
_POLY = np.uint64(0x9E3779B97F4A7C15)  # odd: a shingle's hash depends on word order


class Shingler:
    """Word k-shingles of normalised text as sorted unique uint64 hashes. Words are what
    spaces separate: in normalised text (``Note.normalised_body``: words joined by one
    space) the words ``str.split`` finds."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, text: str) -> np.ndarray:
        return self.many((text,))[0]

    def many(self, texts: Iterable[str], chunk: int = 2000, chunk_chars: int = 1 << 23) -> list[np.ndarray]:
        """``[self(t) for t in texts]``, with the shingles of ``chunk`` texts at a time computed
        over all their words at once: per text, only its encoding and the final sort are left
        (a store's notes are many short texts). A batch ends early at ``chunk_chars`` characters:
        its arrays take some 60 bytes a word while it is shingled, so 8 M characters (about a
        million words) hold about 80 MB, however large the notes."""
        out: list[np.ndarray] = []
        for batch in _batches(texts, chunk, chunk_chars):
            out += self._batch(batch)
        return out

    def _batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        encoded = [text.encode("utf-8") for text in texts]
        data = b" ".join(encoded)  # a separator: no word runs from one text into the next
        hashes, starts = word_hashes(data)
        ends = np.cumsum([len(e) + 1 for e in encoded])  # where each text's bytes end, its separator included
        lengths = np.diff(np.searchsorted(starts, ends), prepend=0).tolist()  # words of each text
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


_WORD_SEED = np.uint64(0x243F6A8885A308D3)
_MIX1, _MIX2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_KEEP = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)  # the low n bytes of a block


def word_hashes(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The hash of each word of UTF-8 ``data`` (what spaces separate), and the offset each
    word starts at, in order.

    Computed for all words at once, never making a string of one: a word's bytes are taken
    8 at a time (little-endian, so every machine agrees), each block mixed into the word's
    hash by MurmurHash3's 64-bit finaliser (a bijection), its length last. With the words
    split out and each looked up in a table of BLAKE2b hashes, shingling a first pass's
    10,001 notes took 0.58 s; it takes 0.26 s so. Distinct words share a hash by chance
    only (about 2**-64 a pair): not a defence against words crafted to collide, which
    could at most make two notes look more alike and propose a merge a person reviews."""
    padded = data + bytes(8)  # a block can be read from every offset
    edges = np.flatnonzero(np.diff(np.frombuffer(data, dtype=np.uint8) != 32, prepend=False, append=False))
    starts, lengths = edges[0::2], edges[1::2] - edges[0::2]  # words and spaces alternate
    blocks = np.ndarray((len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))  # item i: the 8 bytes from offset i
    hashes = _block(blocks, starts, lengths)
    hashes ^= _WORD_SEED
    _mix(hashes)
    done, longer = 8, np.flatnonzero(lengths > 8)
    while longer.size:  # a fifth of the words are longer than 8 bytes, one in a hundred than 16
        hashes[longer] = _mix(hashes[longer] ^ _block(blocks, starts[longer] + done, lengths[longer] - done))
        done += 8
        longer = longer[lengths[longer] > done]
    hashes ^= lengths.astype(np.uint64)
    return _mix(hashes), starts


def _block(blocks: np.ndarray, at: np.ndarray, left: np.ndarray) -> np.ndarray:
    """The 8 bytes from each offset ``at`` as a little-endian number, only the ``left`` first kept."""
    block: np.ndarray = blocks[at].astype(np.uint64, copy=False)
    block &= _KEEP[np.minimum(left, 8)]
    return block


def _mix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: every bit of the input moves every bit out."""
    x ^= x >> np.uint64(33)
    x *= _MIX1
    x ^= x >> np.uint64(33)
    x *= _MIX2
    x ^= x >> np.uint64(33)
    return x


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


def _batches(items: Iterable[str], size: int, chars: int) -> Iterator[list[str]]:
    """Lists of ``size`` items in order, each ended sooner by the item that takes it past
    ``chars`` characters (so never empty), the last one shorter."""
    batch: list[str] = []
    held = 0
    for item in items:
        batch.append(item)
        held += len(item)
        if len(batch) == size or held >= chars:
            yield batch
            batch, held = [], 0
    if batch:
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
