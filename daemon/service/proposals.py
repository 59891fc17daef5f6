"""Reading proposals and deciding on them: list, show, accept, reject.

A decision binds to the proposal's change key (its base and result hashes); rejecting also
tombstones that key, so a later pass that finds the same change records it as suppressed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Connection

from daemon.core.errors import ProposalError
from daemon.core.proposals import ACCEPTED, APPLIED, PENDING, REJECTED, STALE, check_transition
from daemon.db import repo
from daemon.service.context import App
from daemon.service.workspace import store_kind
from daemon.service.workspace import store_name as store_name_of


@dataclass(frozen=True)
class ProposalView:
    """A stored proposal as faces show it (the ``--json`` contract)."""

    id: int
    store: str
    kind: str
    state: str
    source: str
    confidence: float
    lossy: bool
    title: str
    rationale: str
    evidence: list[dict[str, Any]]
    base: dict[str, str | None]
    result: dict[str, str | None]
    diff: str
    state_reason: str | None
    reads: dict[str, Any] | None
    pass_id: int | None
    created_at: str
    updated_at: str
    decisions: list[dict[str, Any]] = field(default_factory=list)
    store_kind: str = "files"  # or "records": paths are record keys (see workspace.store_kind)

    @property
    def paths(self) -> list[str]:
        return sorted(self.result)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "store": self.store, "store_kind": self.store_kind, "kind": self.kind, "state": self.state,
            "paths": self.paths, "source": self.source, "confidence": self.confidence,
            "lossy": self.lossy, "title": self.title, "rationale": self.rationale,
            "evidence": self.evidence, "base": self.base, "result": self.result, "diff": self.diff,
            "state_reason": self.state_reason, "reads": self.reads, "pass_id": self.pass_id,
            "created_at": self.created_at, "updated_at": self.updated_at, "decisions": self.decisions,
        }  # fmt: skip


def locate(app: App, proposal_id: int) -> tuple[int, int]:
    """(store id, proposal id) for an id a person typed."""
    with app.engine().connect() as conn:
        store_id = repo.proposal_store(conn, proposal_id)
    if store_id is None:
        raise ProposalError(f"no proposal #{proposal_id}", hint="dreamd proposals lists them")
    return store_id, proposal_id


def _views(conn: Connection, store: Any, rows: list[Any]) -> list[ProposalView]:
    """Views of many proposals of ``store`` (its row) with two extra queries in all, not two per proposal."""
    ids = [row.id for row in rows]
    files = repo.files_of(conn, store.id, ids)
    decisions = repo.decisions_of(conn, store.id, ids)
    kind = store_kind(store.preset)
    return [replace(_view(store.name, row, files.get(row.id, {}), decisions.get(row.id, [])), store_kind=kind) for row in rows]


def _view(store_name: str, row: Any, files: dict[str, tuple[str | None, str | None]], decided: list[Any]) -> ProposalView:
    decisions = [
        {"decision": d.decision, "actor": d.actor, "surface": d.surface, "reason": d.reason, "at": d.decided_at.isoformat()}
        for d in decided
    ]
    return ProposalView(
        id=row.id, store=store_name, kind=row.kind, state=row.state, source=row.source,
        confidence=row.confidence, lossy=row.lossy, title=row.title, rationale=row.rationale,
        evidence=list(row.evidence.get("items", [])), base={p: b for p, (b, _) in files.items()},
        result={p: r for p, (_, r) in files.items()}, diff=row.diff, state_reason=row.state_reason, reads=row.reads,
        pass_id=row.pass_id, created_at=row.created_at.isoformat(), updated_at=row.updated_at.isoformat(),
        decisions=decisions,
    )  # fmt: skip


def list_proposals(app: App, store_name: str | None = None, states: list[str] | None = None) -> list[ProposalView]:
    """Proposals of every store, or of the one ``store_name`` names (by name or by any path to it)."""
    store_name = store_name_of(app, store_name)
    found: list[ProposalView] = []
    with app.engine().connect() as conn:
        for store in repo.all_stores(conn):
            if store_name and store.name != store_name:
                continue
            found += _views(conn, store, repo.list_proposals(conn, store.id, states))
    return found


def get_proposal(app: App, proposal_id: int) -> ProposalView:
    store_id, _ = locate(app, proposal_id)
    with app.engine().connect() as conn:
        store = repo.store_by_id(conn, store_id)
        return _views(conn, store, [repo.get_proposal(conn, store_id, proposal_id)])[0]


def decide(app: App, proposal_id: int, decision: str, reason: str | None = None, *, actor: str | None = None) -> ProposalView:
    """Accept or reject one proposal, as ``actor`` (default ``app.actor``) through ``app.surface``."""
    decide_all(app, [proposal_id], decision, reason, actor=actor)
    return get_proposal(app, proposal_id)


@dataclass(frozen=True)
class Decided:
    """What a batch decision did: every id given, in order, and those of them that already
    stood so (left as they were)."""

    ids: list[int]
    already: list[int] = field(default_factory=list)


def decide_all(app: App, proposal_ids: list[int], decision: str, reason: str | None = None, *, actor: str | None = None, again_ok: bool = False) -> Decided:
    """Accept or reject every proposal given, or none of them: each id is checked first (it
    exists, it may make that move), and one error names every one that cannot.

    ``again_ok``: a proposal already accepted (for an accept) or rejected (for a reject) is
    left as it is, without a new decision or event, instead of failing the batch: a command
    run twice does no harm. A review or a web page asks without it, so that a proposal
    someone decided meanwhile is never counted as its own decision."""
    actor = actor or app.actor
    new_state = ACCEPTED if decision == "accept" else REJECTED
    ids = list(dict.fromkeys(proposal_ids))
    now = app.clock()
    with app.engine().begin() as conn:
        rows, already, problems, errors = [], [], [], []
        for proposal_id in ids:
            store_id = repo.proposal_store(conn, proposal_id)
            if store_id is None:
                problems.append(f"#{proposal_id} does not exist")
                errors.append(ProposalError(f"no proposal #{proposal_id}", hint="dreamd proposals lists them"))
                continue
            row = repo.get_proposal(conn, store_id, proposal_id)
            if again_ok and row.state == new_state:
                already.append(proposal_id)
                continue
            try:
                check_transition(row.state, new_state, proposal_id)
            except ProposalError as exc:
                problems.append(f"#{proposal_id} is {row.state}")
                errors.append(exc)
                continue
            rows.append((store_id, row))
        if len(ids) == 1 and errors:
            raise errors[0]
        if problems:
            raise ProposalError(f"nothing was {decision}ed: {', '.join(problems)}", hint="dreamd proposals --state pending lists what can be decided")
        for store_id, row in rows:
            repo.set_state(conn, store_id, row.id, new_state, now, reason)
            repo.add_decision(conn, store_id, row.id, decision=decision, actor=actor, surface=app.surface, reason=reason, bound_key=row.change_key, decided_at=now)
            if new_state == REJECTED:
                repo.add_tombstone(conn, store_id, "change", row.change_key, now, proposal_id=row.id, reason=reason)
            repo.add_event(conn, store_id, f"proposal.{new_state}", actor, app.surface, now, {"reason": reason, "bound_key": row.change_key}, proposal_id=row.id)
    return Decided(ids, already)


@dataclass(frozen=True)
class Selection:
    """Which pending proposals a batch decision means (every given filter must match)."""

    store: str | None = None
    kind: str | None = None
    source: str | None = None  # exact, or a prefix ending in ":" or "@" ("detector:", "detector:near@")
    min_confidence: float | None = None
    pass_id: int | None = None

    def matches(self, view: ProposalView, pass_id: int | None) -> bool:
        source_ok = self.source is None or view.source == self.source or (self.source[-1:] in (":", "@") and view.source.startswith(self.source))
        return (
            (self.kind is None or view.kind == self.kind) and source_ok
            and (self.min_confidence is None or view.confidence >= self.min_confidence)
            and (self.pass_id is None or pass_id == self.pass_id)
        )  # fmt: skip


def select_pending(app: App, selection: Selection) -> list[int]:
    """Ids of the pending proposals a selection matches, oldest first."""
    return [v.id for v in list_proposals(app, selection.store, [PENDING]) if selection.matches(v, v.pass_id)]


def unreject(app: App, proposal_id: int, reason: str | None = None) -> ProposalView:
    """Take a rejection back: the tombstone is lifted, so the change may be proposed again, and
    the proposal itself is pending again (apply still checks every byte it was made from)."""

    def lift(conn: Connection, store_id: int, row: Any, now: dt.datetime) -> None:
        # appended, not deleted: tombstones are append-only, and the rejection stays in the history
        repo.lift_change_tombstone(conn, store_id, row.change_key, now, proposal_id=row.id, reason=reason)
        # and in the proposal's decisions, as an unaccept is: show lists what was taken back
        repo.add_decision(conn, store_id, row.id, decision="unreject", actor=app.actor, surface=app.surface, reason=reason, bound_key=row.change_key, decided_at=now)

    return _take_back(app, proposal_id, REJECTED, "unrejected", reason, "rejection taken back", lift)


def unaccept(app: App, proposal_id: int, reason: str | None = None) -> ProposalView:
    """Take an accept back before it is applied: the proposal is pending again and the accept
    no longer stands (so no later pass carries it over); the event records who took it back."""

    def withdraw(conn: Connection, store_id: int, row: Any, now: dt.datetime) -> None:
        # recorded, not deleted: the accept stays in the history, and no pass carries over an
        # accept whose latest decision is this one (see storing._carry_over)
        repo.add_decision(conn, store_id, proposal_id, decision="unaccept", actor=app.actor, surface=app.surface, reason=reason, bound_key=row.change_key, decided_at=now)

    return _take_back(app, proposal_id, ACCEPTED, "unaccepted", reason, "acceptance taken back", withdraw)


def _take_back(app: App, proposal_id: int, state: str, event: str, reason: str | None, default: str, undo: Callable[[Connection, int, Any, dt.datetime], None]) -> ProposalView:
    """A decision taken back in one transaction: ``undo`` its trace, pending again, an event."""
    store_id, _ = locate(app, proposal_id)
    now = app.clock()
    with app.engine().begin() as conn:
        row = repo.get_proposal(conn, store_id, proposal_id)
        if row.state != state:
            hint = f"it is applied: dreamd revert {proposal_id} undoes it" if row.state == APPLIED else None
            raise ProposalError(f"proposal {proposal_id} is {row.state}, not {state}; nothing to take back", hint=hint)
        undo(conn, store_id, row, now)
        repo.set_state(conn, store_id, proposal_id, PENDING, now, reason or default)
        repo.add_event(conn, store_id, f"proposal.{event}", app.actor, app.surface, now, {"reason": reason, "bound_key": row.change_key}, proposal_id=proposal_id)
    return get_proposal(app, proposal_id)


def mark_stale(app: App, conn: Connection, store_id: int, proposal_id: int, reason: str, now: dt.datetime) -> None:
    """A proposal that can no longer be applied as reviewed: state, reason and event together."""
    check_transition(repo.get_proposal(conn, store_id, proposal_id).state, STALE, proposal_id)
    repo.set_state(conn, store_id, proposal_id, STALE, now, reason)
    repo.add_event(conn, store_id, "proposal.stale", app.actor, app.surface, now, {"reason": reason}, proposal_id=proposal_id)
