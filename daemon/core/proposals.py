"""Proposals: what a planner suggests (Draft), what dreamd stores (Proposal), and its states.

A planner produces a ``Draft``: intent only (which notes, why, with what evidence). The
change builder turns it into files, the diff engine into a unified diff, validation into
``pending`` or ``refused``. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from daemon.core.errors import ProposalError
from daemon.core.hashing import hash_text

MERGE = "merge"
SUPERSEDE = "supersede"
SOFT_EXPIRE = "soft-expire"
REINDEX = "reindex"
RELINK = "relink"  # point references that dangle at the note that replaced theirs
RELOCATE = "relocate"  # move notes already retired out of the agent's sight, bytes unchanged
KINDS = (MERGE, SUPERSEDE, SOFT_EXPIRE, REINDEX, RELINK, RELOCATE)
RETIRING = (MERGE, SUPERSEDE, SOFT_EXPIRE)

PENDING = "pending"
ACCEPTED = "accepted"
REJECTED = "rejected"
APPLIED = "applied"
STALE = "stale"
REFUSED = "refused"
SUPPRESSED = "suppressed"
REVERTED = "reverted"
STATES = (PENDING, ACCEPTED, REJECTED, APPLIED, STALE, REFUSED, SUPPRESSED, REVERTED)
OPEN = (PENDING, ACCEPTED)  # still to be applied: what a duplicate, a policy and a notify command look at

# The only legal moves. refused, suppressed, rejected and reverted are final: a change that
# is wanted again comes back as a new proposal from a later pass (a person may still take a
# rejection back: TAKE_BACK).
TRANSITIONS: dict[str, frozenset[str]] = {
    PENDING: frozenset({ACCEPTED, REJECTED, STALE}),
    ACCEPTED: frozenset({APPLIED, STALE, REJECTED}),
    APPLIED: frozenset({REVERTED}),
    STALE: frozenset(),
    REJECTED: frozenset(),
    REFUSED: frozenset(),
    SUPPRESSED: frozenset(),
    REVERTED: frozenset(),
}


# A decision a person takes back makes the proposal pending again, outside TRANSITIONS: the
# command that does it, named wherever a state's next moves are.
TAKE_BACK = {ACCEPTED: "unaccept", REJECTED: "unreject"}


def check_transition(current: str, new: str, proposal_id: int | None = None) -> None:
    """Raise ProposalError unless ``current -> new`` is a legal move."""
    if new not in TRANSITIONS.get(current, frozenset()):
        label = f"proposal {proposal_id}" if proposal_id is not None else "proposal"
        allowed = ", ".join(sorted(TRANSITIONS.get(current, ())))
        if current in TAKE_BACK:
            back = f"pending again through dreamd {TAKE_BACK[current]}" + (f" {proposal_id}" if proposal_id is not None else "")
            allowed = f"{allowed}, or {back}" if allowed else back
        raise ProposalError(
            f"{label} is {current}; it cannot become {new}",
            hint=f"from {current} it can become: {allowed or 'nothing (final state)'}",
        )


@dataclass(frozen=True)
class Evidence:
    """Which lines of which note support a proposal. ``derived``: dreamd chose these lines
    (the model's own quote was not in the note), so the planner lowered the confidence."""

    path: str
    start: int
    end: int
    quote: str
    derived: bool = False

    def as_dict(self) -> dict[str, object]:
        plain: dict[str, object] = {"path": self.path, "start": self.start, "end": self.end, "quote": self.quote}
        return {**plain, "derived": True} if self.derived else plain


@dataclass(frozen=True)
class Draft:
    """A planner's suggestion, before it becomes files and a diff.

    - merge: ``retire`` notes fold into ``survivor``; ``survivor_data`` is the survivor's
      new bytes, or None when it stays as it is (exact duplicates).
    - supersede: ``survivor`` is the newer note, ``retire`` the older ones.
    - soft-expire: ``retire`` the expired notes, ``reason`` why.
    - reindex: ``index_drop`` / ``index_add`` entries, ``index_repoint`` entries whose note
      exists under another name (listed path -> the note's path: the line stays, its link
      changes), ``index_compact`` to bring the index within its agent's load limit, ``create``
      notes for index lines that are the only record of what they name (a Cline task without
      its file); no existing note changes.
    - relink: ``relink`` maps what dangling references point at (a path, or a name as
      written) to the live note that replaced it, or to None to unlink them (words kept);
      ``relink_in`` limits it to the references of those notes (empty: every note).

    ``held``: why only a person may accept it, whatever a policy says (two distinct records
    a merge would fold into one); the change's facts carry it.
    - relocate: ``retire`` the notes, already marked retired, that move to the archive.
    """

    kind: str
    source: str
    confidence: float
    title: str
    rationale: str
    evidence: tuple[Evidence, ...] = ()
    retire: tuple[str, ...] = ()
    survivor: str | None = None
    survivor_data: bytes | None = None
    reason: str = ""
    index_drop: tuple[str, ...] = ()
    index_add: tuple[str, ...] = ()
    index_compact: bool = False
    create: tuple[tuple[str, bytes], ...] = ()
    relink: tuple[tuple[str, str | None], ...] = ()
    relink_in: tuple[str, ...] = ()
    index_repoint: tuple[tuple[str, str], ...] = ()
    lossy: bool = False
    held: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown proposal kind {self.kind!r}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError("confidence must be within 0..1")

    @property
    def notes(self) -> tuple[str, ...]:
        """Every note the draft is about, survivor first."""
        head = (self.survivor,) if self.survivor else ()
        return head + tuple(p for p in self.retire if p != self.survivor)


@dataclass(frozen=True)
class Dangling:
    """A reference a change leaves pointing at no live note, and why it was not rewritten."""

    source: str
    line: int
    syntax: str
    written: str
    why: str

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "line": self.line, "syntax": self.syntax, "written": self.written, "why": self.why}


@dataclass(frozen=True)
class ReadFacts:
    """What a change does to what the agent reads: references kept, index within its limit.

    ``holds`` says why no policy may accept the change (a person still may).
    """

    rewritten: int = 0  # references rewritten to point at the surviving note
    unlinked: int = 0  # dangling references turned into plain words
    dangling: tuple[Dangling, ...] = ()  # references the change leaves dangling
    index_limit: str | None = None  # the agent's load limit of the index the change edits
    unloaded_before: int = 0  # index entries the agent does not load, before the change
    unloaded_after: int = 0  # and after it
    pushed_out: tuple[str, ...] = ()  # notes whose entry the agent loaded before and not after
    hooks_shortened: int = 0  # existing index entries whose hook was shortened to fit the limit
    held: tuple[str, ...] = ()  # what the planner said only a person may decide (Draft.held)

    @property
    def holds(self) -> tuple[str, ...]:
        reasons = list(self.held)
        if self.dangling:
            n = len(self.dangling)
            reasons.append(f"leaves {n} dangling reference{'s' if n != 1 else ''}")
        if self.unlinked:
            reasons.append(f"unlinks {self.unlinked} reference{'s' if self.unlinked != 1 else ''} whose target is unknown")
        if self.pushed_out:
            reasons.append(f"pushes {len(self.pushed_out)} index entr{'ies' if len(self.pushed_out) != 1 else 'y'} past what the agent loads ({self.index_limit})")
        elif self.unloaded_after > self.unloaded_before:
            reasons.append(f"leaves the index over what the agent loads ({self.index_limit})")
        return tuple(reasons)

    def as_dict(self) -> dict[str, object]:
        return {
            "v": 1, "rewritten": self.rewritten, "unlinked": self.unlinked,
            "dangling": [d.as_dict() for d in self.dangling], "index_limit": self.index_limit,
            "unloaded_before": self.unloaded_before, "unloaded_after": self.unloaded_after,
            "pushed_out": list(self.pushed_out), "hooks_shortened": self.hooks_shortened, "held": list(self.held), "holds": list(self.holds),
        }  # fmt: skip

    @classmethod
    def from_dict(cls, raw: dict[str, object] | None) -> ReadFacts:
        if not raw:
            return cls()
        dangling = tuple(Dangling(**{k: d[k] for k in ("source", "line", "syntax", "written", "why")}) for d in raw.get("dangling", ()))  # type: ignore[union-attr, index]
        return cls(
            rewritten=int(raw.get("rewritten", 0)), unlinked=int(raw.get("unlinked", 0)), dangling=dangling,  # type: ignore[arg-type]
            index_limit=raw.get("index_limit"), unloaded_before=int(raw.get("unloaded_before", 0)),  # type: ignore[arg-type]
            unloaded_after=int(raw.get("unloaded_after", 0)), pushed_out=tuple(raw.get("pushed_out", ())),  # type: ignore[arg-type]
            hooks_shortened=int(raw.get("hooks_shortened", 0)), held=tuple(raw.get("held", ())),  # type: ignore[arg-type]
        )  # fmt: skip


def read_lines(reads: Mapping[str, Any]) -> list[str]:
    """A proposal's stored read facts (``ReadFacts.as_dict``) as the lines ``dreamd show`` and
    the review pages print: references rewritten, the index against what the agent loads,
    hooks shortened, why no policy may accept it, each reference left dangling."""
    lines = []
    if reads.get("rewritten"):
        lines.append(f"references: {reads['rewritten']} rewritten to point at the note that stays")
    if reads.get("index_limit") and not (reads.get("unloaded_before") or reads.get("unloaded_after")):
        lines.append(f"index: within what the agent loads ({reads['index_limit']})")
    elif reads.get("index_limit"):
        lines.append(
            f"index: the agent loads {reads['index_limit']}; entries it cannot see: "
            f"{reads.get('unloaded_before', 0)} before, {reads.get('unloaded_after', 0)} after"
        )
    if reads.get("hooks_shortened"):
        lines.append(f"index: {reads['hooks_shortened']} entry hooks shortened at a word boundary to fit")
    for reason in reads.get("holds", []):
        lines.append(f"holds: {reason} (no policy may accept this; a person may)")
    for d in reads.get("dangling", []):
        lines.append(f"dangling: {d['source']}:{d['line']} {d['syntax']} {d['written']!r}: {d['why']}")
    return lines


@dataclass(frozen=True)
class Change:
    """A draft made concrete: files before and after.

    ``base`` maps every file read or written to its hash before (None: absent).
    ``result`` maps the same paths to their hash after (None: removed; equal to base:
    read but unchanged). ``data`` holds the bytes of both sides, by hash.
    """

    base: dict[str, str | None]
    result: dict[str, str | None]
    data: dict[str, bytes] = field(repr=False)
    reads: ReadFacts = field(default_factory=ReadFacts)

    @property
    def written(self) -> list[str]:
        return sorted(p for p in self.result if self.result[p] != self.base.get(p))

    def before(self, path: str) -> bytes | None:
        h = self.base.get(path)
        return None if h is None else self.data[h]

    def after(self, path: str) -> bytes | None:
        h = self.result.get(path)
        return None if h is None else self.data[h]


def change_key(kind: str, base: dict[str, str | None], result: dict[str, str | None], extra: tuple[str, ...] = ()) -> str:
    """The content key of a change: what a tombstone remembers after a rejection."""
    payload = json.dumps(
        {"v": 1, "kind": kind, "base": base, "result": result, "extra": list(extra)},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hash_text(payload)
