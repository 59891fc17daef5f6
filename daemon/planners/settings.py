"""The deterministic planner's settings (``[planner]`` in the config).

Apart from the detectors and their context so that reading a config, and telling from the
planner fingerprint that nothing changed, imports no planning code.
"""

from __future__ import annotations

from typing import NamedTuple

# Near-duplicate pairs right at the threshold must still become LSH candidates this often.
LSH_RECALL = 0.99


class DetectorSettings(NamedTuple):
    """Knobs of the deterministic planner; all of them enter the planner fingerprint. A
    named tuple, not a dataclass, as every record a pass that finds nothing to do imports
    (``config._parse_planner`` checks the values a config gives)."""

    near_threshold: float = 0.8  # Jaccard of word shingles
    shingle_size: int = 5  # words per shingle
    num_perm: int = 128  # MinHash permutations
    min_words: int = 20  # shorter notes are not near-duplicate candidates
    use_mtime_for_ttl: bool = True  # no updated_at/created_at: fall back to the file's mtime

    @property
    def lsh_shape(self) -> tuple[int, int]:
        """(bands, rows): the most selective banding that still finds a pair at the
        threshold with probability >= LSH_RECALL, so few dissimilar pairs are compared."""
        best = (self.num_perm, 1)
        for rows in range(1, self.num_perm + 1):
            bands = self.num_perm // rows
            if 1.0 - (1.0 - self.near_threshold**rows) ** bands >= LSH_RECALL:
                best = (bands, rows)
        return best

    @property
    def lsh_bands(self) -> int:
        return self.lsh_shape[0]

    @property
    def lsh_rows(self) -> int:
        return self.lsh_shape[1]
