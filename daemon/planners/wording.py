"""Words detectors share in titles and rationales: counted nouns, and short lists of names."""

from __future__ import annotations

from collections.abc import Sequence


def count(n: int, one: str, many: str | None = None) -> str:
    """``3 notes``, ``1 note``: a number with its noun in the right number."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def names(items: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` names, and how many more there are."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
