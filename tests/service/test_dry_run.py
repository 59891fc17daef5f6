"""Invariant 1 for dry runs: ``run_pass(dry_run=True)`` writes nothing, not the store, not the database."""

from __future__ import annotations

from daemon.config import adhoc_store
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide


def test_dry_run_without_database_creates_none_and_leaves_store(example_store, db_path, make_app, snapshot_tree):
    """A dry run with no database yet creates no database file or folder and changes no store byte or mtime."""
    store = adhoc_store(example_store, "deepcode")
    before = snapshot_tree(example_store)
    report = run_pass(make_app(), store, dry_run=True)
    assert report.status == "dry-run"
    assert report.count("pending") == 5
    assert snapshot_tree(example_store) == before
    assert not db_path.parent.exists()


def test_dry_run_with_quiescent_database_changes_no_db_byte_mtime_or_listing(example_store, db_path, make_app, snapshot_tree, clock):
    """With a database from an earlier (closed) pass, a dry run leaves db, -wal/-shm and the folder listing as they were."""
    store = adhoc_store(example_store, "deepcode")
    first = make_app()
    run_pass(first, store)
    first.close()
    store_before, db_before = snapshot_tree(example_store), snapshot_tree(db_path.parent)
    assert sorted(db_before) == ["state.db"]
    clock.advance(days=1)
    report = run_pass(make_app(), store, dry_run=True)
    assert [o.state for o in report.outcomes] == ["duplicate"] * 5
    assert snapshot_tree(example_store) == store_before
    assert snapshot_tree(db_path.parent) == db_before


def test_dry_run_beside_an_open_database_sees_its_wal_and_writes_nothing(example_store, db_path, make_app, snapshot_tree, clock):
    """While another App holds the database open (data still in -wal), a dry run sees its tombstones and writes neither db nor WAL."""
    store = adhoc_store(example_store, "deepcode")
    holder = make_app()
    first = run_pass(holder, store)
    decide(holder, first.outcomes[0].id, "reject", "keep both")
    assert (db_path.parent / "state.db-wal").stat().st_size > 0
    before = snapshot_tree(db_path.parent)
    clock.advance(days=1)
    report = run_pass(make_app(), store, dry_run=True)
    assert [o.state for o in report.outcomes] == ["suppressed"] + ["duplicate"] * 4
    after = snapshot_tree(db_path.parent)
    assert sorted(after) == sorted(before) == ["state.db", "state.db-shm", "state.db-wal"]
    for name in ("state.db", "state.db-wal"):
        assert after[name] == before[name]


def test_dry_run_records_no_pass_event_or_proposal(example_store, make_app, clock):
    """A dry run after a real pass adds no pass, proposal or event rows."""
    from sqlalchemy import func, select

    from daemon.db import schema as t

    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    run_pass(app, store)

    def counts() -> list[int]:
        with app.engine().connect() as conn:
            return [conn.scalar(select(func.count()).select_from(table)) for table in (t.passes, t.proposals, t.events, t.blobs, t.snapshots)]

    before = counts()
    clock.advance(days=1)
    run_pass(make_app(), store, dry_run=True)
    assert counts() == before
