"""Invariant 5: one store's decisions, proposals and history never reach another's."""

from __future__ import annotations

import shutil

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, list_proposals


def test_a_rejection_in_one_store_does_not_suppress_the_same_change_in_another(example_store, tmp_path, make_app):
    """Two stores with the same notes at the same relative paths share one database."""
    twin = tmp_path / "twin"
    shutil.copytree(example_store, twin)
    app = make_app()
    first, second = adhoc_store(example_store, "deepcode"), adhoc_store(twin, "deepcode")
    merge = next(o for o in run_pass(app, first).outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "reject", "not here")
    again = next(o for o in run_pass(app, second).outcomes if o.planned.draft.retire == merge.planned.draft.retire)
    assert again.state == "pending" and again.id != merge.id
    assert {p.store for p in list_proposals(app, second.name)} == {second.name}
    assert {e["store"] for e in event_log(app, second)} == {second.name}


def test_a_decision_is_bound_to_the_change_it_was_made_on(example_store, make_app):
    """Accepting records the proposal's change key (its base and result hashes) on the
    decision and on the event, so what was accepted is what the key names."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    merge = next(o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept")
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, store.name).id
        proposal = repo.get_proposal(conn, store_id, merge.id)
        (decision,) = repo.decisions_of(conn, store_id, [merge.id])[merge.id]
    assert decision.bound_key == proposal.change_key == merge.planned.key
    (event,) = [e for e in event_log(app, store) if e["type"] == "proposal.accepted"]
    assert event["payload"]["bound_key"] == proposal.change_key
