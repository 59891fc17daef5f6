"""Packing notes into model calls: every due note in a call, related notes in the same one.

What the model is shown decides what it can find: two notes a person would merge must share
a call. So the notes to send (the due notes, and the candidate groups around them) are
packed as follows, each step bounded by the prompt room of one call:

1. **Whole.** When every note to send fits one call, they go in one call, every candidate
   group listed as a hint. (The planner sends the whole store this way when it fits.)
2. **Clusters.** Otherwise related notes are joined strongest relation first (similar
   wording before a shared tag, see ``WEIGHTS``), as Kruskal's algorithm joins a spanning
   forest, but two clusters join only while they fit one call together: the strongest
   relations are the last to be cut. A note is in exactly one cluster, so no note rides in
   every call, and a note larger than its share of a call is sent once, with the notes it is
   most related to.
3. **Calls.** Clusters fill calls largest first (first-fit decreasing); notes related to
   nothing fill the gaps in path order (notes of one folder together). A call that would
   hold no due note is not made: its notes have been shown, only its groups are new.
4. **Cut groups.** A candidate group no call holds whole (the clusters it spans were too
   big to join) gets calls of its own after those, packed first-fit so that groups sharing
   notes share a call, each note sent once per call. A group cut apart from a note over a
   quarter of a call and three times the median note (``LARGE_SHARE``) does not: that note was sent once, with the notes it is
   most related to, and sending it again for every weaker relation would send it in every call.

Calls are ordered by what they are most likely to find (the weight of the groups they hold
whole), so a pass that its budget stops sends the best calls first, and what it did not
send stays due. A note that alone exceeds a call cannot be sent at all: it is named in
``too_large``, never dropped silently. Token counts come from an injected ``count_tokens``
(the model's tokenizer in the service, ``len // 4`` in tests), so packing needs no model library.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from daemon.planners.llm.candidates import Group

NOTE_OVERHEAD = 16  # tokens of the <note id=... path=...> wrapper around each note
GROUP_OVERHEAD = 24  # tokens of a group's line in the prompt
LARGE_SHARE = 4  # a note over 1/4 of a call (and 3x the median) is sent once: never again for a group cut from it

# How likely a relation is to hold a merge or a retirement; a group with several relations
# weighs its strongest plus a little for each other one. Capped relations keep their name
# as a prefix ("shared tag (8 of 20, most related first)").
WEIGHTS = {
    "similar wording": 1.0,
    "same title": 0.9,
    "one names the other": 0.9,
    "a dated or numbered series": 0.8,
    "dated status notes": 0.8,
    "same file name": 0.7,
    "shared rare terms": 0.6,
    "shared tag": 0.5,
    "both cite a file or URL": 0.5,
    "nearest neighbours": 0.4,
}
OTHER_WEIGHT = 0.3


@dataclass(frozen=True)
class Batch:
    """What one model call carries: notes (each once), and the groups it holds whole."""

    groups: tuple[Group, ...]  # best first
    paths: tuple[str, ...]
    tokens: int  # estimated tokens of the note blocks and group lines
    lines: int | None = None  # how many of ``groups`` get a line in the prompt (None: all)

    @property
    def hints(self) -> tuple[Group, ...]:
        return self.groups if self.lines is None else self.groups[: self.lines]


@dataclass(frozen=True)
class Packing:
    batches: tuple[Batch, ...]
    too_large: tuple[str, ...] = ()  # notes that alone exceed a call: they cannot be sent
    skipped: tuple[str, ...] = ()  # one sentence per group that could not be sent at all
    # groups no call will hold whole: too big together, or cut apart from a note too large to send twice
    unfit: frozenset[frozenset[str]] = frozenset()

    @property
    def whole(self) -> bool:
        return len(self.batches) == 1


def weight(group: Group) -> float:
    """How likely the group's notes are to hold a change (see ``WEIGHTS``)."""
    found = sorted((_reason_weight(r) for r in group.reasons), reverse=True)
    return (found[0] if found else OTHER_WEIGHT) + 0.1 * (len(found) - 1)


def _reason_weight(reason: str) -> float:
    for name, value in WEIGHTS.items():
        if reason.startswith(name):
            return value
    return OTHER_WEIGHT


def pack(due: Iterable[str], groups: Sequence[Group], texts: Mapping[str, str], count_tokens: Callable[[str], int], room: int, context: Iterable[str] = ()) -> Packing:
    """The calls that show every note of ``due`` with the notes of ``groups`` (see the module);
    ``context`` are notes sent along when everything fits one call (the rest of a whole store)."""
    cost: dict[str, int] = {}

    def tokens(path: str) -> int:
        if path not in cost:
            cost[path] = count_tokens(texts[path]) + count_tokens(path) + NOTE_OVERHEAD
        return cost[path]

    due = set(due)
    nodes = list(dict.fromkeys([*(p for g in groups for p in g.paths), *sorted(due), *sorted(context)]))
    too_large = tuple(sorted(p for p in nodes if tokens(p) + GROUP_OVERHEAD > room))
    unfit = {frozenset(g.paths) for g in groups if GROUP_OVERHEAD + sum(tokens(p) for p in g.paths) > room}
    if too_large:
        big = set(too_large)
        nodes = [p for p in nodes if p not in big]
        groups = [_without(g, big) for g in groups]
        groups = [g for g in groups if len(g.paths) >= max(1, g.min_size)]
    if not nodes:
        return Packing((), too_large, unfit=frozenset(unfit))
    everything = sum(tokens(p) for p in nodes) + GROUP_OVERHEAD * len(groups)
    if everything <= room:
        return Packing((Batch(tuple(groups), tuple(nodes), everything),), too_large, unfit=frozenset(unfit))
    lines: dict[str, int] = {}  # a group's line is counted with its first note
    for g in groups:
        lines[g.paths[0]] = lines.get(g.paths[0], 0) + GROUP_OVERHEAD

    def sized(path: str) -> int:
        return tokens(path) + lines.get(path, 0)

    nodes = [p for p in nodes if p in due or any(p in g.paths for g in groups)] if context else nodes
    bins = [b for b in _fill(_clusters(nodes, groups, sized, room), sized, room) if due.intersection(b)]
    batches = [_batch(b, groups, tokens, room) for b in bins]
    held = {frozenset(g.paths) for b in batches for g in b.groups}
    large = _large(nodes, tokens, room)  # shown once, with its cluster
    unfit |= {frozenset(g.paths) for g in groups if frozenset(g.paths) not in held and large.intersection(g.paths)}
    cut = [g for g in groups if frozenset(g.paths) not in held and frozenset(g.paths) not in unfit]
    extra, skipped = _pack_groups(cut, tokens, room)
    batches.sort(key=_promise)
    extra.sort(key=_promise)
    return Packing(tuple(batches + extra), too_large, tuple(skipped), frozenset(unfit))


def _large(nodes: list[str], tokens: Callable[[str], int], room: int) -> set[str]:
    """Notes over a quarter of a call and over three times the median note: sent once."""
    sizes = sorted(tokens(p) for p in nodes)
    median = sizes[len(sizes) // 2] if sizes else 0
    return {p for p in nodes if tokens(p) * LARGE_SHARE > room and tokens(p) > 3 * median}


def _promise(batch: Batch) -> tuple[float, str]:
    """Calls most likely to find something first (the weight of the groups they hold); ties by path."""
    return -sum(weight(g) for g in batch.groups), min(batch.paths)


def _without(group: Group, big: set[str]) -> Group:
    if not big & set(group.paths):
        return group
    gone = tuple(p for p in group.paths if p in big)
    return replace(group, paths=tuple(p for p in group.paths if p not in big), anchors=tuple(p for p in group.anchors if p not in big), truncated=group.truncated + gone)


def _clusters(nodes: list[str], groups: Sequence[Group], tokens: Callable[[str], int], room: int) -> list[list[str]]:
    """Notes joined along their relations, strongest first, while a cluster fits ``room``.

    A group is a star from its first note (an anchor) to each other one: the same clusters
    as all its pairs would give, with 7 edges instead of 28 for a group of 8.
    """
    edges: dict[tuple[str, str], float] = {}
    for group in groups:
        w = weight(group)
        head = group.paths[0]
        for other in group.paths[1:]:
            key = (head, other) if head < other else (other, head)
            edges[key] = max(edges.get(key, 0.0), w)
    parent = {n: n for n in nodes}
    size = {n: tokens(n) for n in nodes}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for (a, b), _ in sorted(edges.items(), key=lambda item: (-item[1], item[0])):
        ra, rb = root(a), root(b)
        if ra != rb and size[ra] + size[rb] <= room:
            parent[rb] = ra
            size[ra] += size[rb]
    members: dict[str, list[str]] = {}
    for n in nodes:
        members.setdefault(root(n), []).append(n)
    return list(members.values())


def _fill(clusters: list[list[str]], tokens: Callable[[str], int], room: int) -> list[list[str]]:
    """Clusters into calls, first-fit decreasing; lone notes last, in path order."""
    sized = [(sum(tokens(p) for p in c), c) for c in clusters]
    joined = sorted((s, c) for s, c in sized if len(c) > 1)
    alone = sorted(((s, c) for s, c in sized if len(c) == 1), key=lambda item: item[1][0])
    bins: list[tuple[int, list[str]]] = []
    for s, cluster in [*sorted(joined, key=lambda item: (-item[0], item[1][0])), *alone]:
        for i, (used, paths) in enumerate(bins):
            if used + s <= room:
                bins[i] = (used + s, paths + cluster)
                break
        else:
            bins.append((s, list(cluster)))
    return [paths for _, paths in bins]


def _batch(paths: list[str], groups: Sequence[Group], tokens: Callable[[str], int], room: int) -> Batch:
    """A call of ``paths``, with the groups it holds whole as hints while their lines fit."""
    inside = set(paths)
    used = sum(tokens(p) for p in paths)
    held = sorted((g for g in groups if inside.issuperset(g.paths)), key=lambda g: -weight(g))
    lines = min(len(held), max(0, (room - used) // GROUP_OVERHEAD))
    return Batch(tuple(held), tuple(paths), used + GROUP_OVERHEAD * lines, lines)


def _pack_groups(groups: Sequence[Group], tokens: Callable[[str], int], room: int) -> tuple[list[Batch], list[str]]:
    """Cut groups into calls of their own, first-fit over the last few open calls; a group
    that alone exceeds a call loses notes from its end (anchors first, so they stay)."""
    batches: list[_Open] = []
    skipped: list[str] = []
    for group in groups:
        if GROUP_OVERHEAD + sum(tokens(p) for p in group.paths) > room:
            group = _truncate(group, tokens, room - GROUP_OVERHEAD)
            if len(group.paths) < max(2, group.min_size):
                who = ", ".join(group.anchors or group.paths or group.truncated[:1])
                skipped.append(f"group of {who}: its notes do not fit one call ({room} tokens)")
                continue
        for batch in batches[-LOOKBACK:]:
            extra = GROUP_OVERHEAD + sum(tokens(p) for p in group.paths if p not in batch.seen)
            if batch.used + extra <= room:
                batch.add(group, extra)
                break
        else:
            batch = _Open()
            batch.add(group, GROUP_OVERHEAD + sum(tokens(p) for p in group.paths))
            batches.append(batch)
    return [Batch(tuple(b.groups), tuple(b.seen), b.used) for b in batches], skipped


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
    return replace(group, paths=tuple(kept), anchors=tuple(p for p in group.anchors if p in kept), truncated=group.truncated + dropped)
