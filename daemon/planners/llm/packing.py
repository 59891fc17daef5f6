"""Packing candidate groups into model calls under the per-call prompt budget.

Each call has a fixed prompt (instructions, schema) and room for note blocks; groups are
packed first-fit in their deterministic order, sharing notes within a call. Nothing is
dropped silently: a group too big for any call is cut note by note (and says which notes
it lost), and a group that cannot keep enough notes is skipped with a sentence why.
Token counts come from an injected ``count_tokens`` (litellm's counter for the model in
the service; ``len // 4`` in tests), so packing itself needs no model library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from daemon.planners.llm.candidates import Group

NOTE_OVERHEAD = 16  # tokens of the <note id=... path=...> wrapper around each note
GROUP_OVERHEAD = 24  # tokens of a group's line in the prompt


@dataclass(frozen=True)
class Batch:
    """What one model call carries: groups, and each note once."""

    groups: tuple[Group, ...]
    paths: tuple[str, ...]
    tokens: int  # estimated tokens of the note blocks and group lines


@dataclass(frozen=True)
class Packing:
    batches: tuple[Batch, ...]
    skipped: tuple[str, ...]  # one sentence per group that could not be sent at all


def pack(groups: Iterable[Group], texts: Mapping[str, str], count_tokens: Callable[[str], int], tokens_per_call: int) -> Packing:
    """First-fit over the last few open calls: each call's note blocks stay within ``tokens_per_call``.

    A note shared by two groups of one call is sent once. A group that alone exceeds the
    budget loses notes from its end (anchors come first, so they stay) and lists them in
    ``truncated``; a group that cannot keep enough notes is skipped, with a sentence why.
    """
    cost: dict[str, int] = {}

    def tokens(path: str) -> int:
        if path not in cost:
            cost[path] = count_tokens(texts[path]) + count_tokens(path) + NOTE_OVERHEAD
        return cost[path]

    batches: list[_Open] = []
    skipped: list[str] = []
    for group in groups:
        if GROUP_OVERHEAD + sum(tokens(p) for p in group.paths) > tokens_per_call:
            group = _truncate(group, tokens, tokens_per_call - GROUP_OVERHEAD)
            if len(group.paths) < group.min_size:
                who = ", ".join(group.anchors or group.paths or group.truncated[:1])
                skipped.append(f"group of {who}: its notes do not fit one call ({tokens_per_call} tokens)")
                continue
        for batch in batches[-LOOKBACK:]:
            extra = GROUP_OVERHEAD + sum(tokens(p) for p in group.paths if p not in batch.seen)
            if batch.used + extra <= tokens_per_call:
                batch.add(group, extra)
                break
        else:
            batch = _Open()
            batch.add(group, GROUP_OVERHEAD + sum(tokens(p) for p in group.paths))
            batches.append(batch)
    return Packing(tuple(Batch(tuple(b.groups), tuple(b.seen), b.used) for b in batches), tuple(skipped))


LOOKBACK = 16  # calls still open to later groups: first-fit, kept linear on large stores


class _Open:
    """A call being filled."""

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.seen: dict[str, None] = {}
        self.used = 0

    def add(self, group: Group, extra: int) -> None:
        self.groups.append(group)
        self.seen.update(dict.fromkeys(group.paths))
        self.used += extra


def _truncate(group: Group, tokens: Callable[[str], int], budget: int) -> Group:
    """Notes from the front while they fit; the rest are named in ``truncated``."""
    kept: list[str] = []
    total = 0
    for path in group.paths:
        if total + tokens(path) > budget:
            break
        kept.append(path)
        total += tokens(path)
    dropped = tuple(p for p in group.paths if p not in kept)
    return replace(group, paths=tuple(kept), anchors=tuple(p for p in group.anchors if p in kept), truncated=dropped)
