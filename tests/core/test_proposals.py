"""Proposal states move only along legal transitions."""

from __future__ import annotations

import pytest

from daemon.core.errors import ProposalError
from daemon.core.proposals import STATES, TRANSITIONS, Draft, check_transition

LEGAL = {(a, b) for a, targets in TRANSITIONS.items() for b in targets}


@pytest.mark.parametrize("current", STATES)
@pytest.mark.parametrize("new", STATES)
def test_only_legal_transitions_pass(current, new):
    """check_transition accepts exactly the table's moves."""
    if (current, new) in LEGAL:
        check_transition(current, new)
    else:
        with pytest.raises(ProposalError):
            check_transition(current, new)


def test_final_states_have_no_way_out():
    """Rejected, refused, suppressed, stale and reverted proposals never move again."""
    assert all(not TRANSITIONS[s] for s in ("rejected", "refused", "suppressed", "stale", "reverted"))


def test_draft_rejects_unknown_kind_and_bad_confidence():
    """A planner cannot build a draft of an unknown kind or out-of-range confidence."""
    with pytest.raises(ValueError):
        Draft(kind="delete", source="x", confidence=1.0, title="t", rationale="r")
    with pytest.raises(ValueError):
        Draft(kind="merge", source="x", confidence=1.5, title="t", rationale="r")
