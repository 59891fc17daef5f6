"""Near-duplicate search stays sub-quadratic (counted, not timed)."""

from __future__ import annotations

from daemon.planners.base import DetectorSettings
from daemon.planners.detectors.exact import ExactDuplicates
from daemon.planners.detectors.near import NearDuplicates

from .factory import context, generate_notes, view


def test_lsh_shape_is_derived_from_threshold():
    """The default banding finds a pair at the threshold with >= 99% probability."""
    settings = DetectorSettings()
    bands, rows = settings.lsh_bands, settings.lsh_rows
    assert bands * rows <= settings.num_perm
    assert 1 - (1 - 0.8**rows) ** bands >= 0.99
    assert DetectorSettings(near_threshold=0.95).lsh_rows > rows


def test_distinct_notes_need_few_exact_comparisons():
    """On 2,000 random distinct notes, far under 1% of all pairs are compared exactly."""
    notes = generate_notes(2000, dup_rate=0.0, seed=1)
    drafts, stats = NearDuplicates().plan(context(view(*notes)))
    all_pairs = 2000 * 1999 // 2
    assert drafts == []
    assert stats.items == 2000
    assert stats.comparisons < 0.01 * all_pairs


def test_planted_copies_are_all_retired_once():
    """Every planted copy is retired exactly once by the exact or near detector (copies
    of the same note are exact duplicates of each other), still without quadratic work."""
    notes = generate_notes(1000, dup_rate=0.05, seed=2)
    planted = sum("one more remark" in n.body for n in notes)
    ctx = context(view(*notes))
    near, stats = NearDuplicates().plan(ctx)
    retired = [p for d in near + ExactDuplicates().detect(ctx) for p in d.retire]
    assert planted > 20 and len(retired) == len(set(retired)) == planted
    assert stats.comparisons < 0.01 * 1000 * 999 // 2
