"""The new detectors' proposals wait for a person: no shipped policy accepts them."""

from __future__ import annotations

import pytest

from daemon.core.proposals import SOFT_EXPIRE, SUPERSEDE
from daemon.planners.context import source_of
from daemon.planners.detectors import citation_drift, status_chain, stub
from daemon.policies.engine import evaluate
from daemon.policies.load import SHIPPED, load_policy, shipped_policy
from daemon.policies.model import Facts

DRAFTS = [
    (SUPERSEDE, source_of(status_chain.StatusChains()), status_chain.CONFIDENCE),
    (SOFT_EXPIRE, source_of(citation_drift.CitationDrift()), citation_drift.CONFIDENCE),
    (SOFT_EXPIRE, source_of(stub.StubNotes()), stub.CONFIDENCE),
]


@pytest.mark.parametrize("policy", SHIPPED)
@pytest.mark.parametrize(("kind", "source", "confidence"), DRAFTS)
def test_no_shipped_policy_accepts_them(policy, kind, source, confidence):
    """Each shipped policy holds a status-chain supersede, a citation-drift expiry and a stub expiry."""
    facts = Facts(kind=kind, source=source, confidence=confidence, lossy=False, notes=("old.md",), retire=("old.md",))
    assert evaluate(load_policy(shipped_policy(policy)), facts).decision == "hold"
