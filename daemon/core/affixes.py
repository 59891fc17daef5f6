"""What two byte strings share at their start and at their end, found at memcmp speed.

A diff window around an edit (diffs/window.py) and a blob stored as a delta of its earlier
version (db/packing.py) both keep only the middle that differs.
"""

from __future__ import annotations


def common_prefix(x: bytes, y: bytes) -> int:
    """How many leading bytes ``x`` and ``y`` share (block compares, then bisection)."""
    n, i, block = min(len(x), len(y)), 0, 1 << 16
    while i < n and x[i : i + block] == y[i : i + block]:
        i = min(i + block, n)
    lo, hi = i, min(i + block, n)  # x[:lo] == y[:lo]; the first difference is before hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if x[lo:mid] == y[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(x: bytes, y: bytes) -> int:
    """How many trailing bytes ``x`` and ``y`` share (the same, from the end)."""
    n, i, block = min(len(x), len(y)), 0, 1 << 16
    while i < n and x[len(x) - min(i + block, n) : len(x) - i] == y[len(y) - min(i + block, n) : len(y) - i]:
        i = min(i + block, n)
    lo, hi = i, min(i + block, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if x[len(x) - mid : len(x) - lo] == y[len(y) - mid : len(y) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo
