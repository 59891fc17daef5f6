"""Invariant 1: a recorded (non-dry) pass never writes into the store it reads."""

from __future__ import annotations

from daemon.config import adhoc_store
from daemon.service.passes.run import run_pass


def test_pass_leaves_every_store_byte_mtime_and_listing(example_store, make_app, snapshot_tree):
    """A recorded pass that stores five proposals leaves the store's bytes, mtimes, modes and listing unchanged."""
    before = snapshot_tree(example_store)
    report = run_pass(make_app(), adhoc_store(example_store, "deepcode"))
    assert report.status == "completed"
    assert report.count("pending") == 5
    assert snapshot_tree(example_store) == before


def test_pass_puts_its_database_outside_the_store(example_store, db_path, make_app):
    """The database a pass writes lives at its URL, and no file of it appears in the store."""
    run_pass(make_app(), adhoc_store(example_store, "deepcode"))
    assert db_path.is_file()
    assert not any("state.db" in p.name or p.suffix in (".db", ".lock", ".journal") for p in example_store.rglob("*"))


def test_repeated_and_later_passes_leave_store_unchanged(example_store, make_app, snapshot_tree, clock):
    """Three passes (skipped, and past a TTL due time) still write nothing into the store."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    before = snapshot_tree(example_store)
    statuses = [run_pass(app, store).status]
    clock.advance(hours=1)
    statuses.append(run_pass(app, store).status)
    clock.advance(days=400)  # sprint-status.md falls due
    later = run_pass(app, store)
    statuses.append(later.status)
    assert statuses == ["completed", "skipped", "completed"]
    assert [o.planned.draft.kind for o in later.outcomes if o.state == "pending"] == ["soft-expire"]
    assert snapshot_tree(example_store) == before
