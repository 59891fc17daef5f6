"""The name someone most likely meant when they typed one that does not exist: a config key,
a preset, a policy, a store. Messages suggest it; nothing is ever guessed into effect."""

from __future__ import annotations

import re
from collections.abc import Iterable

CUTOFF = 0.6  # difflib's ratio below which a name is too far to suggest ('polcy' -> 'policy' is 0.91)


def nearest(word: str, names: Iterable[str]) -> str | None:
    """The one of ``names`` closest to ``word`` (case aside), or None when none is close."""
    import difflib  # only when a message is shown: a command that finds every name pays nothing for it

    by_fold = {name.casefold(): name for name in names}
    found = difflib.get_close_matches(word.casefold(), list(by_fold), n=1, cutoff=CUTOFF)
    return by_fold[found[0]] if found else None


def did_you_mean(word: str, names: Iterable[str]) -> str:
    """``; did you mean 'policy'?`` to end a message with, or nothing when no name is close."""
    near = nearest(word, names)
    return f"; did you mean {near!r}?" if near else ""


_SEPARATORS = re.compile(r"[\s_\-]+")


def fold(name: str) -> str:
    """A name as its spellings share it: case, and runs of ``_``, ``-`` and spaces, set aside
    (``Project_BGA-player`` and ``project-bga player`` fold alike)."""
    return _SEPARATORS.sub("-", name.strip().casefold()).strip("-")
