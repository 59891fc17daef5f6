"""What every detector is given and must look like.

Kept apart from ``base`` (which lists the default detectors) so that detector modules can
import these types without an import cycle; ``base`` re-exports everything here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from daemon.core.proposals import Draft
from daemon.core.view import StoreView, utc
from daemon.planners.citations import CitedFile

# Near-duplicate pairs right at the threshold must still become LSH candidates this often.
LSH_RECALL = 0.99


@dataclass(frozen=True)
class DetectorSettings:
    """Knobs of the deterministic planner; all of them enter the planner fingerprint."""

    near_threshold: float = 0.8  # Jaccard of word shingles
    shingle_size: int = 5  # words per shingle
    num_perm: int = 128  # MinHash permutations
    min_words: int = 20  # shorter notes are not near-duplicate candidates
    use_mtime_for_ttl: bool = True  # no updated_at/created_at: fall back to the file's mtime

    def __post_init__(self) -> None:
        if not 0.0 < self.near_threshold <= 1.0:
            raise ValueError("near_threshold must be within (0, 1]")
        if self.shingle_size < 1 or self.num_perm < 1 or self.min_words < 0:
            raise ValueError("shingle_size and num_perm must be positive, min_words not negative")

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


@dataclass(frozen=True)
class PlanContext:
    """Everything a detector may look at: detectors read nothing else (no files, no clock)."""

    view: StoreView
    now: dt.datetime  # aware; normalised to UTC
    tombstoned_values: dict[str, str] = field(default_factory=dict)  # value hash -> retired path
    settings: DetectorSettings = field(default_factory=DetectorSettings)
    # notes that drafts of earlier detectors in this pass retire: later ones plan around them
    retiring: frozenset[str] = frozenset()
    # change keys of proposals people rejected: such drafts are still made (and recorded
    # as suppressed), but later detectors must not plan as if they will happen
    rejected_changes: frozenset[str] = frozenset()
    # what the store's workspace git says of the files its notes cite (gathered by the
    # service, see daemon.service.citations); empty when the store names no workspace
    citations: Mapping[str, CitedFile] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "now", utc(self.now))


class Detector(Protocol):
    """A deterministic finder of one kind of proposal."""

    name: str
    version: int  # bump when the output for the same input changes

    def detect(self, ctx: PlanContext) -> list[Draft]: ...


def source_of(detector: Detector) -> str:
    """The ``source`` every draft of this detector carries (an event's "who")."""
    return f"detector:{detector.name}@{detector.version}"
