"""A pass's planned proposals into the database, many in one transaction.

Whether a planned proposal is new, a duplicate of one still open, or a change people
rejected before is read for the whole batch at once (``Prior``: three queries, not three
per proposal), and the batch's events are numbered from one read of the store's newest
event (``repo.Events``). Each proposal is still its own rows and its own event.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection

from daemon.core.proposals import ACCEPTED, OPEN, PENDING, STALE, SUPPRESSED
from daemon.db import repo
from daemon.service.context import App
from daemon.service.passes.report import Outcome

if TYPE_CHECKING:
    from daemon.service.passes.proposing import Planned

DUPLICATE = "duplicate"


@dataclass
class Prior:
    """What the database holds of some change keys: the proposals still open (pending or
    accepted), the rejected changes, the newest stale proposals. Kept current as a batch
    is stored, so a batch's second proposal of a key is a duplicate of its first."""

    open: dict[str, int]
    rejected: set[str]
    stale: dict[str, Any]

    @classmethod
    def read(cls, conn: Connection, store_id: int, items: Sequence[Planned]) -> Prior:
        keys = sorted({item.key for item in items if item.state == PENDING})
        return cls(
            repo.open_proposals_with_keys(conn, store_id, keys),
            repo.tombstoned(conn, store_id, "change", keys),
            repo.latest_with_keys(conn, store_id, keys, STALE),
        )

    def known(self, item: Planned) -> tuple[str, int | None, str | None]:
        """What earlier passes and decisions make of a planned proposal: (state, id, note).
        Already open as another proposal: a duplicate; rejected before: suppressed."""
        if item.state != PENDING:
            return item.state, None, item.reason
        existing = self.open.get(item.key)
        if existing is not None:
            return DUPLICATE, existing, f"already proposed as #{existing}"
        if item.key in self.rejected:
            return SUPPRESSED, None, "the same change was rejected before"
        return PENDING, None, item.reason


def store_planned(app: App, conn: Connection, store_id: int, pass_id: int, items: Sequence[Planned], now: dt.datetime, *, index: str | None = None) -> list[Outcome]:
    """Record ``items`` in order (a duplicate is reported, not recorded) and say what became of each.
    ``index``: the store's index, whose edits alone do not undo an accept (``_carry_over``)."""
    if not items:
        return []
    prior = Prior.read(conn, store_id, items)
    events = repo.Events(conn, store_id)
    files: list[dict[str, Any]] = []
    outcomes = []
    for item in items:
        state, existing, note = prior.known(item)
        if state == DUPLICATE:
            outcomes.append(Outcome(item.slim(), state, existing, note))
            continue
        proposal_id = repo.insert_proposal(conn, store_id, proposal_values(item, state, note, pass_id, now))
        if item.change is not None:  # base bytes are stored with the pass's snapshot; results rebuild from the diff
            files += repo.proposal_file_rows(proposal_id, {p: (item.change.base[p], item.change.result[p]) for p in item.change.result})
        payload = {"kind": item.draft.kind, "state": state, "paths": item.paths, "reason": note, "confidence": item.draft.confidence}
        events.add(f"proposal.{state}", item.draft.source, app.surface, now, payload, pass_id=pass_id, proposal_id=proposal_id)
        if state == PENDING and index is not None and (carried := _carry_over(app, conn, store_id, proposal_id, item, index, now, prior, events)):
            state, note = ACCEPTED, carried
        if state in OPEN:
            prior.open.setdefault(item.key, proposal_id)
        outcomes.append(Outcome(item.slim(), state, proposal_id, note))
    repo.add_proposal_files(conn, files)
    return outcomes


def _carry_over(app: App, conn: Connection, store_id: int, proposal_id: int, item: Planned, index: str, now: dt.datetime, prior: Prior, events: repo.Events) -> str | None:  # noqa: PLR0913
    """Keep an accept that went stale only because the agent edited the index.

    When an accepted proposal went stale because its index changed (nothing else), and this
    pass proposes the same change (same key) with the same index lines removed and added,
    the reviewed change is exactly the new one: the accept carries over, recorded as a
    decision by the same actor and an event. Anything else is left for a person.
    """
    from daemon.core.patch import edit_lines

    old = prior.stale.get(item.key)
    if old is None or old.state_reason != f"changed since proposed: {index}":
        return None
    decisions = repo.decisions_of(conn, store_id, [old.id]).get(old.id, [])
    if not decisions or decisions[-1].decision != "accept" or not old.diff or not item.diff:
        return None
    if edit_lines(old.diff, index) != edit_lines(item.diff, index):
        return None
    accepted = decisions[-1]
    reason = f"carried over from #{old.id}: only {index} changed, and the same lines of it change"
    repo.set_state(conn, store_id, proposal_id, ACCEPTED, now, reason)
    repo.add_decision(conn, store_id, proposal_id, decision="accept", actor=accepted.actor, surface=accepted.surface, reason=reason, bound_key=item.key, decided_at=now)
    payload = {"from": old.id, "decision": "accept", "by": accepted.actor, "reason": reason, "bound_key": item.key}
    events.add("proposal.carried", app.actor, app.surface, now, payload, proposal_id=proposal_id)
    return reason


def proposal_values(item: Planned, state: str, note: str | None, pass_id: int | None, now: dt.datetime) -> dict[str, Any]:
    draft = item.draft
    return {
        "pass_id": pass_id, "kind": draft.kind, "state": state, "source": draft.source,
        "confidence": draft.confidence, "lossy": draft.lossy, "title": draft.title,
        "rationale": draft.rationale, "evidence": {"v": 1, "items": [e.as_dict() for e in draft.evidence]},
        "change_key": item.key, "diff": item.diff, "state_reason": note, "created_at": now, "updated_at": now,
        "reads": item.change.reads.as_dict() if item.change is not None else None,
    }  # fmt: skip
