"""The decide step of a pass: a store's policy accepts, rejects or holds each new proposal.

Decisions are recorded like a person's, with the policy as actor (``policy:<name>@<hash>``),
bound to the proposal's hashes. Held proposals stay pending for review, and each later pass
lets the policy decide them again (budgets renew, policies change). With the
store's ``apply = "accepted"``, what the policy accepted is applied at the end of the pass,
through the same compare-and-swap and journal as ``dreamd apply``.
"""

from __future__ import annotations

from typing import Any

from daemon.config import StoreConfig
from daemon.db import repo
from daemon.policies.engine import budget_spent, evaluate
from daemon.policies.facts import facts_of
from daemon.policies.load import load_policy
from daemon.policies.model import HOLD, Counts, Decision, Facts
from daemon.service.context import App
from daemon.service import recorded
from daemon.service.passes.report import PolicyOutcome
from daemon.service.proposals import decide, get_proposal, locate


def load_facts(app: App, proposal_id: int) -> tuple[Any, Facts]:
    """(view, facts) of a stored proposal, from its recorded base and its rebuilt result."""
    view = get_proposal(app, proposal_id)
    store_id, _ = locate(app, proposal_id)
    with app.engine().connect() as conn:
        _, blobs = recorded.proposal_bytes(conn, store_id, proposal_id)
    return view, facts_of(view, blobs, app.clock())


def decide_by_policy(app: App, store: StoreConfig, store_id: int, proposal_ids: list[int]) -> PolicyOutcome:
    """Let the store's policy decide each pending proposal, within its limits."""
    assert store.policy is not None
    policy = load_policy(store.policy)
    outcome = PolicyOutcome(policy.actor)
    now = app.clock()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    with app.engine().connect() as conn:
        today = repo.decisions_since(conn, store_id, policy.actor, "accept", midnight)
    accepted_now = 0
    for proposal_id in proposal_ids:
        counts = Counts(this_pass=accepted_now, today=today + accepted_now)
        spent = budget_spent(policy, counts)
        if spent:  # everything else holds, whatever its facts: no need to load them
            outcome.decisions.update({pid: Decision(HOLD, None, None, spent, policy.actor) for pid in proposal_ids if pid not in outcome.decisions})
            break
        _, facts = load_facts(app, proposal_id)
        verdict = evaluate(policy, facts, counts)
        outcome.decisions[proposal_id] = verdict
        if verdict.decision in ("accept", "reject"):
            decide(app, proposal_id, verdict.decision, verdict.reason, actor=policy.actor)
            accepted_now += verdict.decision == "accept"
    if store.apply == "accepted":
        from daemon.service.apply import apply

        accepted = [pid for pid, d in outcome.decisions.items() if d.decision == "accept"]
        for result in apply(app, accepted) if accepted else []:
            (outcome.applied if result.state == "applied" else outcome.stale).append(result.proposal_id)
    return outcome

