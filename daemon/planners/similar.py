"""Near-duplicate pairs and groups among shingle sets, without comparing every pair.

LSH proposes candidate pairs; each is confirmed with the exact Jaccard of the two shingle
sets (as 64-bit shingle hashes, where a collision is vanishingly unlikely).
``SimilarityStats`` counts the exact comparisons so tests can show the work is sub-quadratic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from daemon.planners.context import DetectorSettings
from daemon.planners.minhash import MinHasher, jaccard, lsh_pairs


@dataclass(frozen=True)
class SimilarityStats:
    items: int
    candidate_pairs: int  # pairs proposed by LSH
    comparisons: int  # exact Jaccard computations


def similar_pairs(
    shingle_sets: Sequence[np.ndarray], settings: DetectorSettings
) -> tuple[dict[tuple[int, int], float], SimilarityStats]:
    """Pairs (i < j) with exact Jaccard >= the threshold, with that Jaccard."""
    hasher = MinHasher(settings.num_perm)
    empty = np.empty((0, settings.num_perm), dtype=np.uint64)
    signatures = hasher.signatures(shingle_sets) if shingle_sets else empty
    candidates = sorted(lsh_pairs(signatures, settings.lsh_bands, settings.lsh_rows))
    found: dict[tuple[int, int], float] = {}
    for i, j in candidates:
        score = jaccard(shingle_sets[i], shingle_sets[j])
        if score >= settings.near_threshold:
            found[(i, j)] = score
    return found, SimilarityStats(len(shingle_sets), len(candidates), len(candidates))


def connected_groups(count: int, pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Union-find: groups of two or more indices linked by pairs, each sorted, in order."""
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in pairs:
        ri, rj = root(i), root(j)
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    for i in range(count):
        groups.setdefault(root(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]
