"""Which notes go to the model, and in which groups (``packing`` fits groups into calls).

Sending a whole store is what makes dump-everything consolidation expensive and what
makes an unchanged store cost money. Instead, related notes form small groups and only
groups holding a note that changed (or fell due) since the last LLM pass are sent:
no change, no group, no call.

A store that fits one call is sent whole instead (``whole``); these groups are for stores
that do not, and ride along as hints when it does.

Notes are related when they are loose near-duplicates (word-set Jaccard >= 0.5 with the
same MinHash machinery as the deterministic detector, which wants >= 0.8 of 5-word
phrases), share a title, a tag, a cited file or URL or a file-name stem, when one names the
other by its path or file name ("see services/booking-api.md"), belong to one dated
or numbered series (``week7``, ``week8``; newest first), are both dated
status/progress/checkpoint notes, share rare terms of one topic (``topics``: BM25-like
weights, headings, titles and file names counting double), or when one is a changed
note's nearest neighbour.

Never sent: notes with ``private: true`` and notes the store's exclude globs match. Pinned
notes may be sent (a merge may keep one as survivor); proposals that would change them are
refused later by validation.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from daemon.core.notes import Note
from daemon.core.view import StoreView
from daemon.planners.context import DetectorSettings
from daemon.planners.minhash import MinHasher, Shingler, jaccard
from daemon.planners.similar import connected_groups
from daemon.planners.llm.topics import terms, topical_neighbours
from daemon.planners.survivor import note_time

MAX_GROUP = 8
MAX_RELATION = 4 * MAX_GROUP  # a title, tag, citation or stem shared by more notes is ignored
NEIGHBOURS = 3
LOOSE_THRESHOLD = 0.5
MIN_NEIGHBOUR = 0.3  # estimated word-set Jaccard below which a "nearest" note is unrelated
# (0.2 let in unrelated notes that merely share common words)
STATUS = "dated status notes"
SERIES = "a dated or numbered series"
TOPIC = "shared rare terms"
NAMED = "one names the other"
NEWEST_FIRST = (STATUS, SERIES)  # relations whose members are ranked by time, not similarity
_MARGIN = 0.15  # > 3 standard deviations of a 128-permutation estimate near 0.5

_PUNCT = str.maketrans({c: " " for c in string.punctuation})
_STOP = frozenset(
    "the and for are but not you all any can had her was one our out has have this that with from they will would there their"
    " what about which when make like into than then them these some could other only also just more most such very been"
    " were should after before because while where each does done".split()
)  # fmt: skip
_EXT = r"(?:py|md|ts|tsx|js|jsx|json|toml|ya?ml|rs|go|java|kt|rb|sh|sql|c|h|cpp|txt|cfg|ini|lock|html|css)"
_URL = re.compile(r"https?://[^\s<>()\"'`\]]+")
_PATH = re.compile(rf"(?:[\w.-]+/)*[\w-]+\.{_EXT}|(?:[\w.-]+/){{2,}}[\w.-]+")
_SEPARATORS = str.maketrans({c: " " for c in "()[]<>`'\"|,;"})
_STATUS = re.compile(r"\b(status|progress|checkpoint|complete|completed|handoff|wip)\b")
_TRUE = ("true", "yes", "on", "1")
_PRIVATE_LINE = re.compile(rb"^private[ \t]*:[ \t]*['\"]?(true|yes|on)\b", re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True)
class Group:
    """Related notes the model reads together: anchors (changed or due) first."""

    paths: tuple[str, ...]
    reasons: tuple[str, ...]
    anchors: tuple[str, ...]
    min_size: int = 2  # 1 only for a due note alone: it may still be expired
    truncated: tuple[str, ...] = ()  # notes left out to fit the per-call budget


def is_private(note: Note) -> bool:
    """``private: true`` in the frontmatter; also when the frontmatter is unreadable but
    a line still says so (an unparsable note must not leak for that reason)."""
    value = note.meta.get("private")
    if value is True or (isinstance(value, str) and value.strip().casefold() in _TRUE):
        return True
    return bool(note.frontmatter_error and _PRIVATE_LINE.search(note.parts.inner or note.data[:4096]))


def sendable(view: StoreView, excluded: Callable[[str], bool]) -> list[Note]:
    """Live notes that may leave the machine, in path order."""
    return [n for n in view.live_notes() if not is_private(n) and not excluded(n.path)]


def _words(note: Note) -> frozenset[str]:
    """Content words, crudely singular: what two paraphrases of one fact still share."""
    found = set(note.body.casefold().translate(_PUNCT).split()) - _STOP
    return frozenset(w[:-1] if len(w) > 4 and w[-1] == "s" else w for w in found if len(w) >= 3)


def _stem(name: str) -> str:
    """A file name or title without folders, extension, digits and separators."""
    base = name.rsplit("/", 1)[-1].removesuffix(".md").casefold()
    return " ".join(re.sub(r"[^a-z]+", " ", base).split())


def _citations(body: str) -> set[str]:
    """URLs and file paths a note mentions (tokens are tested one by one: a regex over the
    whole body is several times slower on a big store)."""
    found = set()
    for token in body.translate(_SEPARATORS).split():
        if "/" not in token and "." not in token:
            continue
        token = token.rstrip(".:!?*").lstrip("*")
        match = _URL.fullmatch(token) if token.startswith(("http://", "https://")) else _PATH.fullmatch(token)
        if match:
            found.add(token.casefold())
    return found


def _keys(note: Note) -> Iterable[tuple[str, str]]:
    """(relation, key) pairs: notes sharing one are related."""
    title = " ".join(re.sub(r"[^\w]+", " ", note.title.casefold()).split())
    if title:
        yield "same title", title
    stem = _stem(note.path)
    if stem:
        numbered = any(c.isdigit() for c in note.path.rsplit("/", 1)[-1])
        yield (SERIES if numbered else "same file name"), stem
    if title and any(c.isdigit() for c in title) and _stem(title):
        yield SERIES, f"title: {_stem(title)}"
    tags = note.meta.get("tags")
    listed = tags if isinstance(tags, list) else tags.replace(",", " ").split() if isinstance(tags, str) else []
    for tag in listed:
        if isinstance(tag, str) and tag.strip():
            yield "shared tag", tag.strip().casefold()
    for cited in _citations(note.body):
        yield "both cite a file or URL", cited
    if _STATUS.search(f"{stem} {_stem(note.title)}"):
        yield STATUS, "status"


def _naming(pool: list[Note]) -> list[set[str]]:
    """Pairs where one note names another by its path or file name ("current endpoints in
    services/booking-api.md"): a successor, a fuller copy, a note it was split from."""
    by_name: dict[str, set[str]] = defaultdict(set)
    for note in pool:
        by_name[note.path.casefold()].add(note.path)
        by_name[note.path.rsplit("/", 1)[-1].casefold()].add(note.path)
    pairs = []
    for note in pool:
        for cited in _citations(note.body):
            for target in by_name.get(cited, set()) | by_name.get(cited.rsplit("/", 1)[-1], set()) if cited.endswith(".md") else ():
                if target != note.path:
                    pairs.append({note.path, target})
    return pairs


def select(
    view: StoreView,
    changed: set[str],
    due: set[str],
    excluded: Callable[[str], bool],
    *,
    threshold: float = LOOSE_THRESHOLD,
    max_group: int = MAX_GROUP,
    neighbours: int = NEIGHBOURS,
) -> list[Group]:
    """Deduplicated groups (each at most ``max_group`` notes) holding a changed or due note.

    Work is proportional to anchors x notes, vectorised: each anchor's MinHash signature is
    compared with all others (agreement estimates word-set Jaccard) and estimates near the
    threshold are confirmed exactly. An all-pairs LSH would pay, on a big store, for pairs
    that hold no anchor and are thrown away.
    """
    pool = sendable(view, excluded)
    anchors = {n.path for n in pool} & (set(changed) | set(due))
    if not anchors:
        return []
    paths = [n.path for n in pool]
    at = {p: i for i, p in enumerate(paths)}
    shingler, hasher = Shingler(1), MinHasher(DetectorSettings().num_perm)
    words = [_words(n) for n in pool]
    sets = [shingler(" ".join(sorted(w)) or f"\0{n.path}") for n, w in zip(pool, words)]
    sigs = hasher.signatures(sets)
    # per anchor, how many of the permutations agree with each note: the Jaccard estimate
    # times num_perm, kept as one byte a note (a first pass anchors every note: N x N bytes)
    perms = sigs.shape[1]
    counts = np.uint8 if perms <= 255 else np.uint16
    near = {a: (sigs == sigs[at[a]]).sum(axis=1, dtype=counts) for a in sorted(anchors)}

    raw: list[tuple[set[str], str]] = []
    loose = (threshold - _MARGIN) * perms
    pairs = {(min(at[a], int(i)), max(at[a], int(i))) for a, agree in near.items() for i in np.flatnonzero(agree >= loose)}
    linked = sorted((i, j) for i, j in pairs if i != j and jaccard(sets[i], sets[j]) >= threshold)
    raw += [({paths[i] for i in g}, "similar wording") for g in connected_groups(len(pool), linked)]
    members: dict[tuple[str, str], set[str]] = defaultdict(set)
    for note in pool:
        for key in _keys(note):
            members[key].add(note.path)
    # a key shared by very many notes says as little as a stopword; status notes stay (newest first)
    raw += [(m, rel) for (rel, _), m in sorted(members.items()) if m & anchors and (len(m) <= MAX_RELATION or rel in NEWEST_FIRST)]
    raw += [(pair, NAMED) for pair in _naming(pool) if pair & anchors]
    for a, agree in near.items():
        order = [int(i) for i in np.argsort(-agree.astype(np.int16), kind="stable")[: neighbours + 1]]
        raw.append(({a} | {paths[i] for i in order if paths[i] != a and agree[i] >= MIN_NEIGHBOUR * perms}, "nearest neighbours"))
    rare = min(MAX_RELATION, max(2, len(pool) // 10))  # a term more notes share is no topic
    topical = topical_neighbours([terms(n, w) for n, w in zip(pool, words)], [at[a] for a in sorted(anchors)], neighbours, rare)
    raw += [({paths[a]} | {paths[b] for b in found}, TOPIC) for a, found in sorted(topical.items())]
    rank = _Rank(view, at, near)
    groups = [g for m, reason in raw if len(m) > 1 and m & anchors for g in rank.cap(m, reason, anchors, max_group)]
    groups += [Group((p,), ("falls due",), (p,), min_size=1) for p in sorted(anchors & set(due))]
    return dedupe(groups)


class _Rank:
    """Orders a relation's members: the most similar to the anchor first (status notes:
    the most recently updated, since a newer status is what supersedes an older one)."""

    def __init__(self, view: StoreView, at: Mapping[str, int], near: Mapping[str, np.ndarray]) -> None:
        self.view, self.at, self.near = view, at, near

    def cap(self, paths: set[str], reason: str, anchors: set[str], cap: int) -> list[Group]:
        """The relation as one group when small enough; otherwise one group per anchor:
        the anchor and its ``cap - 1`` most related members, labelled as cut."""
        mine = sorted(paths & anchors)
        members = sorted(paths)
        by_time = reason in NEWEST_FIRST
        if by_time:
            newest = sorted(members, key=lambda p: (-note_time(self.view.notes[p]), p))
        if len(paths) <= cap:
            rest = [p for p in (newest if by_time else self._similar(members, mine)) if p not in anchors]
            return [Group(tuple(mine + rest), (reason,), tuple(mine))]
        label = f"{reason} ({cap} of {len(paths)}, most related first)"
        out = []
        for a in mine:
            ranked = self._nearest_in_time(members, a) if by_time else self._similar(members, [a], limit=cap)
            chosen = (a, *[p for p in ranked if p != a][: cap - 1])
            out.append(Group(chosen, (label,), tuple(p for p in chosen if p in anchors)))
        return out

    def _nearest_in_time(self, members: list[str], anchor: str) -> list[str]:
        """Members newest first, and among notes of one time (a checkout gives every file the
        same mtime) the nearest to the anchor in path order: week7 next to week6 and week8."""
        at = {p: i for i, p in enumerate(members)}
        return sorted(members, key=lambda p: (-note_time(self.view.notes[p]), abs(at[p] - at[anchor]), p))

    def _similar(self, members: list[str], anchors: list[str], limit: int | None = None) -> list[str]:
        """Members by their best estimated similarity to the anchors, ties by path."""
        idx = np.fromiter((self.at[p] for p in members), dtype=np.int64, count=len(members))
        best = np.max([self.near[a][idx] for a in anchors], axis=0).astype(np.int16)
        order = np.argsort(-best, kind="stable")  # members are sorted: ties stay in path order
        return [members[int(i)] for i in order[:limit]]


def dedupe(groups: list[Group]) -> list[Group]:
    """Equal groups become one (reasons joined); a group inside another is dropped."""
    by_set: dict[frozenset[str], Group] = {}
    for g in groups:
        key = frozenset(g.paths)
        old = by_set.get(key)
        if old is not None:
            g = replace(old, reasons=tuple(dict.fromkeys(old.reasons + g.reasons)), min_size=min(old.min_size, g.min_size))
        by_set[key] = g
    kept = [g for k, g in by_set.items() if not any(k < other for other in by_set)]
    return sorted(kept, key=lambda g: (g.anchors, g.paths))
