"""Invariant 6: every change is an append-only event, including changes dreamd did not make."""

from __future__ import annotations

import getpass

import pytest
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError

from daemon.config import adhoc_store
from daemon.db import schema as t
from daemon.service.apply.applying import apply, revert
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

HUMAN = f"human:{getpass.getuser()}"


def _rows(app):
    with app.engine().connect() as conn:
        return [tuple(r) for r in conn.execute(select(t.events).order_by(t.events.c.id))]


@pytest.mark.parametrize("statement", ["update", "delete"])
def test_events_table_refuses_update_and_delete_through_the_app_engine(example_store, make_app, statement):
    """UPDATE or DELETE on events through the app's own engine fails with the trigger's message and changes no row."""
    app = make_app()
    run_pass(app, adhoc_store(example_store, "deepcode"))
    before = _rows(app)
    assert len(before) == 6
    query = update(t.events).values(actor="human:mallory") if statement == "update" else delete(t.events)
    with pytest.raises(IntegrityError, match="events are append-only"):
        with app.engine().begin() as conn:
            conn.execute(query.where(t.events.c.seq == 1))
    assert _rows(app) == before


def test_external_edits_are_recorded_at_the_next_pass_as_external_unknown(example_store, make_app, clock):
    """Adding, editing and deleting notes outside dreamd gives one store.changed event by external:unknown naming each file."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    run_pass(app, store)
    (example_store / "new-note.md").write_text("A fresh note.\n")
    (example_store / "architecture.md").write_text("Two services now.\n")
    (example_store / "style-rules.md").unlink()
    clock.advance(hours=1)
    report = run_pass(app, store)
    assert report.external_changes == {"added": ["new-note.md"], "removed": ["style-rules.md"], "modified": ["architecture.md"]}
    changed = [e for e in event_log(app) if e["type"] == "store.changed"]
    assert len(changed) == 1
    event = changed[0]
    assert (event["actor"], event["surface"], event["pass_id"]) == ("external:unknown", "cli", report.pass_id)
    assert {k: event["payload"][k] for k in ("added", "removed", "modified", "counts")} == {
        "added": ["new-note.md"], "removed": ["style-rules.md"], "modified": ["architecture.md"],
        "counts": {"added": 1, "removed": 1, "modified": 1},
    }  # fmt: skip


def test_dreamds_own_apply_and_revert_are_not_reported_as_external(example_store, make_app, clock):
    """A pass after an apply, and after its revert, records no store.changed event."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    report = run_pass(app, store)
    pid = report.outcomes[0].id
    decide(app, pid, "accept")
    clock.advance(minutes=1)
    apply(app, [pid])
    clock.advance(minutes=1)
    run_pass(app, store)
    clock.advance(minutes=1)
    revert(app, pid)
    clock.advance(minutes=1)
    run_pass(app, store)
    assert [e for e in event_log(app, limit=1000) if e["type"] == "store.changed"] == []


def test_external_edit_before_an_apply_is_still_recorded(example_store, make_app, clock):
    """An unrelated external edit made before an apply is logged as store.changed by external:unknown, not folded into the apply."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    report = run_pass(app, store)
    pid = report.outcomes[0].id
    decide(app, pid, "accept")
    (example_store / "architecture.md").write_text("Edited by hand.\n")
    clock.advance(minutes=1)
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    clock.advance(minutes=1)
    run_pass(app, store)
    changed = [e for e in event_log(app, limit=1000) if e["type"] == "store.changed"]
    assert [(e["actor"], e["payload"]["modified"]) for e in changed] == [("external:unknown", ["architecture.md"])]


def test_a_whole_flow_is_logged_with_actors_and_per_store_sequence(example_store, make_store, make_app, clock):
    """Pass, proposals, decisions, apply and revert each leave an event with the right actor; seq counts 1.. per store."""
    store = adhoc_store(example_store, "deepcode")
    other = adhoc_store(make_store({"x.md": "x\n", "y.md": "x\n"}, name="other"), "generic")
    app = make_app()
    report = run_pass(app, store)
    run_pass(app, other)
    first, second = report.outcomes[0].id, report.outcomes[1].id
    decide(app, first, "accept")
    decide(app, second, "reject", "no")
    clock.advance(minutes=1)
    apply(app, [first])
    revert(app, first)
    events = event_log(app, limit=1000)
    mine = [e for e in events if e["store"] == store.name]
    assert [e["seq"] for e in mine] == list(range(1, len(mine) + 1))
    theirs = [e for e in events if e["store"] == other.name]
    assert [e["seq"] for e in theirs] == list(range(1, len(theirs) + 1))
    assert [(e["type"], e["actor"]) for e in mine if e["proposal_id"] in (first, second)] == [
        ("proposal.pending", "detector:exact-duplicate@5"),
        ("proposal.pending", "detector:exact-duplicate@5"),
        ("proposal.accepted", HUMAN),
        ("proposal.rejected", HUMAN),
        ("proposal.applied", HUMAN),
        ("proposal.reverted", HUMAN),
    ]
    assert [e["type"] for e in mine if e["proposal_id"] is None] == ["pass.completed"]
    with app.engine().connect() as conn:
        assert conn.scalar(select(func.count()).select_from(t.events)) == len(events)
