"""One writer per store: apply, revert and recovery hold the store's lease."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.apply.applying import apply
from daemon.service.holders import holder_is_dead, this_holder
from daemon.service.leases import StoreBusyError
from daemon.service.passes.run import run_pass
from daemon.service.apply.recovery import recover
from daemon.service.proposals import decide


def _accepted_merge(app, root):
    store = adhoc_store(root, "deepcode")
    report = run_pass(app, store)
    merge = next(o for o in report.outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept")
    return store, merge.id


def _hold(app, store, holder, clock, minutes=2):
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store.name).id
        taken, blocker = repo.acquire_lease(conn, store_id, holder, clock(), dt.timedelta(minutes=minutes))
    assert taken and blocker is None
    return store_id


def test_apply_refuses_while_another_live_holder_writes(example_store, make_app, clock, read_tree):
    """A lease held by another host's process makes apply fail as busy, writing nothing."""
    app = make_app()
    store, pid = _accepted_merge(app, example_store)
    _hold(app, store, "otherhost:4242", clock)
    before = read_tree(example_store)
    with pytest.raises(StoreBusyError, match="otherhost:4242"):
        apply(app, [pid])
    assert read_tree(example_store) == before


def test_an_expired_lease_does_not_block(example_store, make_app, clock):
    """A lease past its expiry is taken over."""
    app = make_app()
    store, pid = _accepted_merge(app, example_store)
    _hold(app, store, "otherhost:4242", clock, minutes=1)
    clock.advance(minutes=5)
    assert [r.state for r in apply(app, [pid])] == ["applied"]


def test_the_lease_is_released_after_apply(example_store, make_app, clock):
    """After an apply nobody holds the store."""
    app = make_app()
    store, pid = _accepted_merge(app, example_store)
    apply(app, [pid])
    with app.engine().connect() as conn:
        assert conn.execute(t.leases.select()).all() == []


def test_recovery_leaves_a_journal_that_a_live_holder_is_writing(example_store, make_app, clock, read_tree):
    """An unfinished journal under another live holder's lease is not rolled forward by us."""
    app = make_app()
    store, pid = _accepted_merge(app, example_store)
    store_id = _hold(app, store, "otherhost:4242", clock)
    with app.engine().begin() as conn:
        files = repo.proposal_files(conn, store_id, pid)
        steps = [{"path": p, "before": b, "after": r} for p, (b, r) in files.items() if b != r]
        repo.open_journal(conn, store_id, pid, "apply", steps, clock())
    before = read_tree(example_store)
    assert recover(app, store) == []
    assert read_tree(example_store) == before


def test_a_dead_local_holder_counts_as_gone():
    """A holder on this host whose process has exited does not hold anything."""
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    host = this_holder().rpartition(":")[0]
    assert holder_is_dead(f"{host}:{child.stdout.strip()}")
    assert not holder_is_dead(this_holder())
    assert not holder_is_dead("otherhost:1")
