"""Proposals: what a planner suggests (Draft), what dreamd stores (Proposal), and its states.

A planner produces a ``Draft``: intent only (which notes, why, with what evidence). The
change builder turns it into files, the diff engine into a unified diff, validation into
``pending`` or ``refused``. Nothing here does I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from daemon.core.errors import ProposalError
from daemon.core.hashing import hash_text

MERGE = "merge"
SUPERSEDE = "supersede"
SOFT_EXPIRE = "soft-expire"
REINDEX = "reindex"
KINDS = (MERGE, SUPERSEDE, SOFT_EXPIRE, REINDEX)

PENDING = "pending"
ACCEPTED = "accepted"
REJECTED = "rejected"
APPLIED = "applied"
STALE = "stale"
REFUSED = "refused"
SUPPRESSED = "suppressed"
REVERTED = "reverted"
STATES = (PENDING, ACCEPTED, REJECTED, APPLIED, STALE, REFUSED, SUPPRESSED, REVERTED)

# The only legal moves. refused, suppressed, rejected and reverted are final: a change that
# is wanted again comes back as a new proposal from a later pass.
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


def check_transition(current: str, new: str, proposal_id: int | None = None) -> None:
    """Raise ProposalError unless ``current -> new`` is a legal move."""
    if new not in TRANSITIONS.get(current, frozenset()):
        label = f"proposal {proposal_id}" if proposal_id is not None else "proposal"
        allowed = ", ".join(sorted(TRANSITIONS.get(current, ()))) or "nothing (final state)"
        raise ProposalError(
            f"{label} is {current}; it cannot become {new}",
            hint=f"from {current} it can become: {allowed}",
        )


@dataclass(frozen=True)
class Evidence:
    """Which lines of which note support a proposal."""

    path: str
    start: int
    end: int
    quote: str

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "start": self.start, "end": self.end, "quote": self.quote}


@dataclass(frozen=True)
class Draft:
    """A planner's suggestion, before it becomes files and a diff.

    - merge: ``retire`` notes fold into ``survivor``; ``survivor_data`` is the survivor's
      new bytes, or None when it stays as it is (exact duplicates).
    - supersede: ``survivor`` is the newer note, ``retire`` the older ones.
    - soft-expire: ``retire`` the expired notes, ``reason`` why.
    - reindex: ``index_drop`` / ``index_add`` entries; no note changes.
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
    lossy: bool = False

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
class Change:
    """A draft made concrete: files before and after.

    ``base`` maps every file read or written to its hash before (None: absent).
    ``result`` maps the same paths to their hash after (None: removed; equal to base:
    read but unchanged). ``data`` holds the bytes of both sides, by hash.
    """

    base: dict[str, str | None]
    result: dict[str, str | None]
    data: dict[str, bytes] = field(repr=False)

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
