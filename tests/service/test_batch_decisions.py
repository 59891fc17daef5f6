"""Deciding many at once, all or none, and taking a rejection back."""

from __future__ import annotations

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import ProposalError
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.passes.run import run_pass
from daemon.service.proposals import Selection, decide, decide_all, get_proposal, select_pending, unreject


def _pending(app, root):
    report = run_pass(app, adhoc_store(root, "deepcode"))
    return [o for o in report.outcomes if o.state == "pending"]


def test_a_batch_with_one_bad_id_decides_nothing(example_store, make_app):
    app = make_app()
    first, second, *_ = _pending(app, example_store)
    decide(app, second.id, "reject", "no")
    with pytest.raises(ProposalError, match=rf"nothing was accepted: #999 does not exist, #{second.id} is rejected"):
        decide_all(app, [first.id, 999, second.id], "accept")
    assert get_proposal(app, first.id).state == "pending"


def test_a_batch_decides_every_id_in_one_go(example_store, make_app):
    app = make_app()
    ids = [o.id for o in _pending(app, example_store)]
    assert decide_all(app, ids, "accept", actor="human:ana").ids == ids
    assert {get_proposal(app, i).state for i in ids} == {"accepted"}


def test_filters_select_pending_proposals(example_store, make_app):
    app = make_app()
    pending = _pending(app, example_store)
    merges = [o.id for o in pending if o.planned.draft.kind == "merge"]
    assert select_pending(app, Selection(kind="merge")) == merges
    exact = [o.id for o in pending if o.planned.draft.source.startswith("detector:exact-duplicate@")]
    assert select_pending(app, Selection(source="detector:exact-duplicate@")) == exact
    assert select_pending(app, Selection(min_confidence=1.01)) == []
    assert select_pending(app, Selection(pass_id=1)) == [o.id for o in pending]
    assert select_pending(app, Selection(pass_id=2)) == []


def test_a_rejection_taken_back_lifts_its_tombstone_and_is_pending_again(example_store, make_app, clock):
    app = make_app()
    first, *_ = _pending(app, example_store)
    decide(app, first.id, "reject", "by mistake")
    with app.engine().connect() as conn:
        store_id = repo.proposal_store(conn, first.id)
        assert repo.has_tombstone(conn, store_id, "change", first.planned.key)
    view = unreject(app, first.id)
    assert view.state == "pending"
    with app.engine().connect() as conn:
        assert not repo.has_tombstone(conn, store_id, "change", first.planned.key)
        assert "proposal.unrejected" in [e.type for e in conn.execute(t.events.select())]
    with pytest.raises(ProposalError, match="is pending, not rejected"):
        unreject(app, first.id)
    decide(app, first.id, "accept")
    assert get_proposal(app, first.id).state == "accepted"


def test_reverting_a_pass_reverts_its_applied_proposals_newest_first(example_store, make_app, read_tree):
    from daemon.service.apply.applying import apply, revert_pass
    from daemon.service.review.audit import event_log

    app = make_app()
    before = read_tree(example_store)
    ids = [o.id for o in _pending(app, example_store)]
    decide_all(app, ids, "accept")
    assert {r.state for r in apply(app, ids)} == {"applied"}
    done = revert_pass(app, 1)
    assert [r.proposal_id for r in done] == sorted(ids, reverse=True) and {r.state for r in done} == {"reverted"}
    assert read_tree(example_store) == before
    reverted = [e["proposal_id"] for e in event_log(app) if e["type"] == "proposal.reverted"]
    assert reverted == sorted(ids, reverse=True)
    with pytest.raises(ProposalError, match="has no applied proposal"):
        revert_pass(app, 1)
