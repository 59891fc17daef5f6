"""The detectors a pass runs, by name and version, known without importing them.

A pass over an unchanged store compares the planner's fingerprint with the last pass's
and stops there. Importing the detectors only to read their versions (numpy comes in
with the near-duplicate one) would cost that pass more than looking at the store.
``base.DEFAULT_DETECTORS`` is what runs; a test keeps this list equal to it, so a new
detector or a version bump is made in both places.
"""

from __future__ import annotations

from collections.abc import Iterable

from daemon.planners.settings import DetectorSettings

DEFAULT_VERSIONS: tuple[tuple[str, int], ...] = (
    ("exact-duplicate", 5),
    ("near-duplicate", 6),
    ("ttl", 2),
    ("declared-supersession", 1),
    ("status-chain", 1),
    ("stub-note", 1),
    ("citation-drift", 1),
    ("index-drift", 4),
    ("index-limit", 1),
    ("tombstoned-value", 1),
    ("visible-retired", 1),
    ("dangling-reference", 2),
)


def fingerprint_of(versions: Iterable[tuple[str, int]], settings: DetectorSettings) -> str:
    """Detector versions and settings, readable: equal fingerprints plan alike."""
    names = ",".join(f"{name}@{version}" for name, version in versions)
    s = settings
    return (
        f"{names};thr={s.near_threshold},shingle={s.shingle_size},perm={s.num_perm},"
        f"lsh={s.lsh_bands}x{s.lsh_rows},min_words={s.min_words},mtime_ttl={int(s.use_mtime_for_ttl)}"
    )


def detectors_fingerprint(settings: DetectorSettings) -> str:
    """The fingerprint of the default detectors with these settings."""
    return fingerprint_of(DEFAULT_VERSIONS, settings)
