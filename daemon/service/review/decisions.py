"""What the review pages decide, apply and take back, each bound to what the page showed.

A form carries a key of what its page showed of a proposal (``shown_key``: its base and
result hashes and its diff); a decision, an apply or a batch accept is refused, nothing done,
when a proposal is no longer that or no longer in a state that allows it. A batch accept is
all or none (``decide_all``), as ``dreamd accept`` over a selection. The pages' decisions are
kept in order (``Decided``) so the last one can be taken back: an accept by ``unaccept``, a
rejection by ``unreject``, each an event, as the CLI records them. An apply goes through
``service.apply``, as ``dreamd apply ID`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from daemon.core.errors import ProposalError
from daemon.core.hashing import hash_text
from daemon.core.proposals import ACCEPTED, PENDING, REJECTED
from daemon.service.apply import ApplyResult, apply
from daemon.service.context import App
from daemon.service.proposals import ProposalView, decide, decide_all, get_proposal, unaccept, unreject

BATCH_SHOWN = 5  # ids a notice names before "and N more"


def shown_key(view: ProposalView) -> str:
    """What a form binds to: the proposal's base and result hashes and its diff."""
    return hash_text(json.dumps({"base": view.base, "result": view.result, "diff": view.diff}, sort_keys=True))


def batch_key(views: list[ProposalView]) -> str:
    """What the "accept every proposal shown" form binds to: each proposal shown, in order."""
    return hash_text(json.dumps([[view.id, shown_key(view)] for view in views]))


def named(ids: tuple[int, ...] | list[int]) -> str:
    """``#3``, ``#3, #4 and #5``, or the first few and how many more."""
    shown = [f"#{pid}" for pid in ids[:BATCH_SHOWN]]
    more = len(ids) - len(shown)
    if more:
        return ", ".join(shown) + f" and {more} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"


def decide_shown(app: App, proposal_id: int, decision: str, key: str, reason: str | None) -> ProposalView:
    """Decide the proposal only if it is still what the page showed and may still be decided."""
    view = get_proposal(app, proposal_id)
    verb = f"{decision}ed"
    if not key or key != shown_key(view):
        raise ProposalError(f"proposal #{proposal_id} is not the one this page showed; nothing was {verb}")
    allowed = (PENDING,) if decision == "accept" else (PENDING, ACCEPTED)
    if view.state not in allowed:
        why = f" ({view.state_reason})" if view.state_reason else ""
        raise ProposalError(f"proposal #{proposal_id} is {view.state}{why}; nothing was {verb}")
    return decide(app, proposal_id, decision, reason)


def accept_shown(app: App, ids: list[int], key: str, shown: list[ProposalView]) -> list[int]:
    """Accept every proposal of ``shown`` (the pending ones the page's filters match now), all
    or none, if they are still the ones the page showed (``ids`` and ``key``)."""
    if not ids:
        raise ProposalError("the page showed no pending proposal; nothing was accepted")
    if [view.id for view in shown] != ids or key != batch_key(shown):
        now = f"{len(shown)} pending proposal{'s match' if len(shown) != 1 else ' matches'} the filters now" if shown else "no pending proposal matches the filters now"
        raise ProposalError(f"the proposals shown changed since the page was drawn ({now}); nothing was accepted", hint="reload the page")
    return decide_all(app, ids, "accept").ids


def apply_shown(app: App, proposal_id: int, key: str) -> ApplyResult:
    """Apply the proposal through ``service.apply`` if it is still what the page showed and accepted."""
    view = get_proposal(app, proposal_id)
    if not key or key != shown_key(view):
        raise ProposalError(f"proposal #{proposal_id} is not the one this page showed; nothing was written")
    if view.state != ACCEPTED:
        why = f" ({view.state_reason})" if view.state_reason else ""
        raise ProposalError(f"proposal #{proposal_id} is {view.state}{why}; only an accepted proposal is applied; nothing was written")
    return apply(app, [proposal_id])[0]


@dataclass(frozen=True)
class Decided:
    """One decision made on the pages: the proposals it decided (a batch accept: several), and how."""

    ids: tuple[int, ...]
    decision: str  # "accept" | "reject"

    @property
    def what(self) -> str:
        """What an undo form names, so an undo drawn before a later decision cannot take that one back."""
        return f"{self.decision}:{','.join(map(str, self.ids))}"

    @property
    def label(self) -> str:
        return f"{self.decision}ed {named(self.ids)}"


def take_back(app: App, decided: Decided) -> list[ProposalView]:
    """Take a decision of the pages back: every proposal it decided is pending again, or, when
    one of them has moved on since (applied, stale, decided again), none is."""
    state = ACCEPTED if decided.decision == "accept" else REJECTED
    views = [get_proposal(app, pid) for pid in decided.ids]
    moved = [view for view in views if view.state != state]
    if moved:
        said = ", ".join(f"#{view.id} is {view.state}" for view in moved)
        raise ProposalError(f"the {decided.decision} of {named(decided.ids)} cannot be taken back: {said}; nothing was taken back", hint=_hint(moved[0]))
    undo = unaccept if decided.decision == "accept" else unreject
    return [undo(app, pid) for pid in decided.ids]


def _hint(view: ProposalView) -> str | None:
    if view.state == "applied":
        return f"dreamd revert {view.id} undoes the apply"
    return None
