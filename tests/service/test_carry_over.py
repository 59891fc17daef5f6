"""Review survives an unrelated edit: an accept that went stale only because the agent edited
the index carries over to the same change proposed again, with the same index lines; any
other difference leaves the new proposal for a person."""

from __future__ import annotations

from daemon.config import adhoc_store
from daemon.db import schema as t
from daemon.service.apply.applying import apply
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal


def _accepted(app, root):
    store = adhoc_store(root, "deepcode")
    merge = next(o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept", actor="human:ana")
    return store, merge


def _again(app, store, clock, first):
    """The next pass, and its proposals of the same change as ``first`` (duplicates aside)."""
    clock.advance(minutes=1)
    report = run_pass(app, store)
    return report, [o for o in report.outcomes if o.planned.key == first.planned.key and o.state != "duplicate"]


def test_an_accept_carries_over_an_unrelated_index_edit(example_store, make_app, clock):
    app = make_app()
    store, merge = _accepted(app, example_store)
    index = example_store / "MEMORY.md"
    index.write_text(index.read_text() + "\nA line the agent added at the end.\n")
    report, (again,) = _again(app, store, clock, merge)
    assert merge.id in report.stale and get_proposal(app, merge.id).state == "stale"
    assert again.state == "accepted" and again.id != merge.id
    assert again.note == f"carried over from #{merge.id}: only MEMORY.md changed, and the same lines of it change"
    view = get_proposal(app, again.id)
    assert [(d["decision"], d["actor"]) for d in view.decisions] == [("accept", "human:ana")]
    (event,) = [e for e in event_log(app) if e["type"] == "proposal.carried"]
    assert event["proposal_id"] == again.id and event["payload"]["from"] == merge.id
    assert [r.state for r in apply(app, [again.id])] == ["applied"]
    assert "A line the agent added at the end." in index.read_text()


def test_an_edit_to_a_note_it_merges_is_never_carried_over(example_store, make_app, clock):
    app = make_app()
    store, merge = _accepted(app, example_store)
    retired = merge.planned.draft.retire[0]
    (example_store / retired).write_text((example_store / retired).read_text() + "\n")  # same body, other bytes
    index = example_store / "MEMORY.md"
    index.write_text(index.read_text() + "\nA line the agent added.\n")
    _, found = _again(app, store, clock, merge)
    assert all(o.state != "accepted" for o in found)


def test_an_index_edit_to_the_lines_the_proposal_changes_is_not_carried_over(example_store, make_app, clock):
    """The agent rewrote the very entry the merge removes: the index lines differ, so the new
    proposal waits for a person."""
    app = make_app()
    store, merge = _accepted(app, example_store)
    retired = merge.planned.draft.retire[0]
    index = example_store / "MEMORY.md"
    lines = index.read_text().splitlines(keepends=True)
    index.write_text("".join(line.replace("—", "- (edited) —") if f"({retired})" in line else line for line in lines))
    _, found = _again(app, store, clock, merge)
    assert found and all(o.state == "pending" for o in found)


def test_a_pending_proposal_carries_nothing(example_store, make_app, clock):
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    first = next(o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge")
    index = example_store / "MEMORY.md"
    index.write_text(index.read_text() + "\nAnother line.\n")
    _, found = _again(app, store, clock, first)
    assert get_proposal(app, first.id).state == "stale"
    assert found and all(o.state == "pending" for o in found)
    with app.engine().connect() as conn:
        assert not [e for e in conn.execute(t.events.select()) if e.type == "proposal.carried"]
