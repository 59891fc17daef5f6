"""A pass stores its proposals a batch per transaction: what the database already holds of
the batch's change keys is read once, and its events are numbered from one read; each
proposal still gets its own rows and event, in order, as when they were stored one by one."""

from __future__ import annotations

import dataclasses

from sqlalchemy import event, select

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.passes.run import run_pass
from daemon.service.passes.storing import store_planned


def _first_pass(app, root):
    report = run_pass(app, adhoc_store(root, "deepcode"))
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, report.store).id
    return report, store_id


def _new(planned, key):
    """The same planned proposal under a change key no pass made."""
    return dataclasses.replace(planned, key=key)


def _seqs(app, store_id):
    with app.engine().connect() as conn:
        return list(conn.scalars(select(t.events.c.seq).where(t.events.c.store_id == store_id).order_by(t.events.c.id)))


def test_a_batchs_second_proposal_of_a_change_is_a_duplicate_of_its_first(example_store, make_app, clock):
    app = make_app()
    report, store_id = _first_pass(app, example_store)
    planned = next(o.planned for o in report.outcomes if o.state == "pending")
    with app.engine().begin() as conn:
        first, second = store_planned(app, conn, store_id, None, [_new(planned, "k-1"), _new(planned, "k-1")], clock())
    assert first.state == "pending" and first.id is not None
    assert (second.state, second.id, second.note) == ("duplicate", first.id, f"already proposed as #{first.id}")
    with app.engine().begin() as conn:  # and in the next batch too, from the database
        (third,) = store_planned(app, conn, store_id, None, [_new(planned, "k-1")], clock())
    assert (third.state, third.id) == ("duplicate", first.id)


def test_a_rejected_change_is_suppressed_and_an_open_one_a_duplicate(example_store, make_app, clock):
    app = make_app()
    report, store_id = _first_pass(app, example_store)
    pending = [o for o in report.outcomes if o.state == "pending"]
    with app.engine().begin() as conn:
        repo.add_tombstone(conn, store_id, "change", "k-rejected", clock(), proposal_id=pending[0].id, reason="rejected")
    with app.engine().begin() as conn:
        outcomes = store_planned(app, conn, store_id, None, [_new(pending[0].planned, "k-rejected"), pending[1].planned], clock())
    assert [o.state for o in outcomes] == ["suppressed", "duplicate"]
    assert outcomes[1].id == pending[1].id


def test_events_of_a_batch_are_numbered_on_without_gaps(example_store, make_app, clock):
    app = make_app()
    report, store_id = _first_pass(app, example_store)
    planned = next(o.planned for o in report.outcomes if o.state == "pending")
    before = _seqs(app, store_id)
    with app.engine().begin() as conn:
        store_planned(app, conn, store_id, None, [_new(planned, f"k-{i}") for i in range(5)], clock())
    repo_seq = _seqs(app, store_id)
    assert repo_seq == list(range(1, len(before) + 6))
    with app.engine().begin() as conn:  # an event added afterwards the ordinary way numbers on from them
        assert repo.add_event(conn, store_id, "note", "human:ana", "cli", clock()) == len(before) + 6


def test_storing_costs_statements_per_batch_not_per_lookup(example_store, make_app, clock):
    """50 proposals: one insert and one event each, and a fixed few for the batch (the
    lookups, the lock, the newest event number, every file row at once)."""
    app = make_app()
    report, store_id = _first_pass(app, example_store)
    planned = next(o.planned for o in report.outcomes if o.state == "pending")
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731 - (conn, cursor, statement, ...)
    event.listen(app.engine(), "before_cursor_execute", listener)
    try:
        with app.engine().begin() as conn:
            outcomes = store_planned(app, conn, store_id, None, [_new(planned, f"k-{i}") for i in range(50)], clock())
    finally:
        event.remove(app.engine(), "before_cursor_execute", listener)
    assert [o.state for o in outcomes] == ["pending"] * 50
    assert len(statements) <= 2 * 50 + 8, statements[:10]  # and BEGIN and COMMIT
