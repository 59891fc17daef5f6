"""The whole-store route: a store that fits one call is sent whole, in one call.

What people consolidate by hand in a small store shares almost no words (``tech_stack`` and
``code_style_conventions`` become a development guide; weekly checkpoints retire under a
newer status note), so no similarity rule would put those notes in one group. While every
note the store may send fits the per-call budget, the dump-everything prompt is the best one:
the model reads all of it, and the candidate groups come along only as hints. A store that
does not fit is cut into candidate groups as before; the estimate stops counting as soon as
the budget is passed, so a large store costs a few notes' counting here, not all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from daemon.core.notes import Note
from daemon.planners.llm.candidates import Group
from daemon.planners.llm.packing import GROUP_OVERHEAD, NOTE_OVERHEAD, Batch, Packing

WHOLE = "the whole store: any of its notes may belong together"


def whole_store(pool: Sequence[Note], anchors: Iterable[str], hints: Sequence[Group], count_tokens: Callable[[str], int], room: int) -> Group | None:
    """Every sendable note as one group, when their raw text fits ``room`` tokens; else None.

    Notes of the hint groups come first (in their order: anchors first), then the rest in
    path order, so the ids a call gives stay those the groups would have had.
    """
    if len(pool) < 2:
        return None
    used = GROUP_OVERHEAD
    for note in pool:
        used += count_tokens(note.data.decode("utf-8", errors="replace")) + count_tokens(note.path) + NOTE_OVERHEAD
        if used > room:
            return None
    first = dict.fromkeys(p for g in hints for p in g.paths)
    order = (*first, *(n.path for n in pool if n.path not in first))
    return Group(order, (WHOLE,), tuple(sorted(anchors)), min_size=1)


def pack_whole(whole: Group, hints: Sequence[Group], texts: Mapping[str, str], count_tokens: Callable[[str], int], room: int) -> Packing | None:
    """One call carrying the whole store and the hint groups' lines, measured on the redacted
    texts the call sends; None when that no longer fits (redaction can lengthen a note)."""
    used = GROUP_OVERHEAD * (1 + len(hints)) + sum(count_tokens(texts[p]) + count_tokens(p) + NOTE_OVERHEAD for p in whole.paths)
    if used > room:
        return None
    return Packing((Batch((whole, *hints), whole.paths, used),), ())
