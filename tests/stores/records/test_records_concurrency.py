"""A Dexto store under a live writer and a crash: stale, never lost; all-old or all-new."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time

import structlog

import dexto_db
from conftest import T
from daemon.config import Config, adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.context import App
from daemon.service.review.audit import event_log, verify
from daemon.service.passes.run import run_pass
from daemon.service.apply.recovery import recover
from daemon.service.apply.resolving import resolve
from daemon.service.proposals import decide, get_proposal
from test_records_service import NEAR

SURVIVOR, RETIRED = "memory:item:nearAAAAAAAA", "memory:item:nearBBBBBBBB"

# What Dexto does: INSERT OR REPLACE inside a write transaction that it holds for a while.
DEXTO_WRITER = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (sys.argv[2], sys.argv[3], 1))
print("locked", flush=True)
time.sleep(float(sys.argv[4]))
conn.execute("COMMIT")
"""

APPLY = r"""
import sys
from daemon.config import Config
from daemon.service.apply.applying import apply
from daemon.service.context import App
apply(App(config=Config(), db_url=sys.argv[1]), [int(sys.argv[2])])
"""


def _near_db(path):
    return dexto_db.create(path, [
        dexto_db.memory("nearAAAAAAAA", NEAR, T, tags=["release"]),
        dexto_db.memory("nearBBBBBBBB", NEAR + "\nHotfixes skip the freeze.", T + 5),
        dexto_db.memory("otherCCCCCCC", "Staging is reset every Monday.", T + 9),
    ])  # fmt: skip


def _accepted(app, db):
    (merge,) = [o for o in run_pass(app, adhoc_store(db, "dexto")).outcomes if o.state == "pending"]
    decide(app, merge.id, "accept")
    return merge.id


def _dexto_value(ident: str, content: str) -> str:
    (value,) = dexto_db.stringify([dexto_db.memory(ident, content, T + 5, updated=T + 99_000)])
    return value


def test_dexto_writing_the_retired_memory_while_holding_the_lock_makes_apply_stale(tmp_path, make_app):
    """Dexto holds its write lock while replacing the retired memory: apply waits, finds it changed, rolls back, and is stale."""
    db = _near_db(tmp_path / "agent.db")
    app = make_app()
    pid = _accepted(app, db)
    value = _dexto_value("nearBBBBBBBB", "Hotfixes skip the freeze, except in December.")
    writer = subprocess.Popen([sys.executable, "-c", DEXTO_WRITER, str(db), RETIRED, value, "0.6"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "locked\n"
    with structlog.testing.capture_logs() as logs:
        (result,) = apply(app, [pid])
    writer.wait(timeout=10)
    assert (result.state, result.detail) == ("stale", f"{RETIRED} changed since it was read; nothing was written")
    assert dexto_db.values(db)[RETIRED] == value
    assert dexto_db.values(db)[SURVIVOR] == dexto_db.stringify([dexto_db.memory("nearAAAAAAAA", NEAR, T, tags=["release"])])[0]
    assert [e["type"] for e in event_log(app) if e["proposal_id"] == pid][-2:] == ["journal.rolled_back", "proposal.stale"]
    (held,) = [e for e in logs if e["event"] == "records.transaction"]
    assert held["outcome"] == "rolled-back" and held["held_ms"] < 100


def test_an_apply_holds_the_write_lock_for_milliseconds(tmp_path, make_app):
    """The one transaction of a two-record merge commits within 100 ms of taking the lock."""
    db = _near_db(tmp_path / "agent.db")
    app = make_app()
    pid = _accepted(app, db)
    with structlog.testing.capture_logs() as logs:
        assert [r.state for r in apply(app, [pid])] == ["applied"]
    (held,) = [e for e in logs if e["event"] == "records.transaction"]
    assert held["outcome"] == "committed" and held["held_ms"] < 100


def test_a_lock_held_past_dreamds_wait_is_an_error_and_the_proposal_stays_accepted(tmp_path, make_app):
    """Dexto holding its lock longer than dreamd waits: apply raises one store error, writes nothing, and can be retried."""
    import pytest

    from daemon.core.errors import StoreError

    db = _near_db(tmp_path / "agent.db")
    app = make_app()
    pid = _accepted(app, db)
    before = dexto_db.values(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="is locked by another writer"):
            apply(app, [pid])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert dexto_db.values(db) == before
    assert get_proposal(app, pid).state == "accepted"
    assert [r.state for r in apply(app, [pid])] == ["applied"]


def _journal_open(state_db) -> bool:
    conn = sqlite3.connect(f"file:{state_db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT count(*) FROM journal").fetchone()[0] > 0
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _start_apply(db_url, state_db, pid) -> subprocess.Popen:
    """Apply in another process, returned once its journal is open."""
    child = subprocess.Popen([sys.executable, "-c", APPLY, db_url, str(pid)])
    deadline = time.monotonic() + 30
    while not _journal_open(state_db) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    return child


def _kill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)


def _setup(folder):
    db = _near_db(folder / "agent.db")
    state_db = folder / "state.db"
    app = App(config=Config(), db_url=f"sqlite:///{state_db}")
    return db, state_db, app, _accepted(app, db)


LIVE = {SURVIVOR, "memory:item:otherCCCCCCC"}


def test_kill_9_while_apply_waits_for_the_lock_leaves_all_old_and_recovery_applies_all(tmp_path):
    """Killed with its journal open and its transaction not begun: every record is old; recovery makes them all new."""
    db, state_db, app, pid = _setup(tmp_path)
    old = dexto_db.values(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        child = _start_apply(f"sqlite:///{state_db}", state_db, pid)
        time.sleep(0.3)  # waiting in BEGIN IMMEDIATE
        _kill(child)
        assert dexto_db.values(db) == old
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert recover(app, adhoc_store(db, "dexto")) == [pid]
    assert (set(dexto_db.values(db)), get_proposal(app, pid).state) == (LIVE, "applied")
    app.close()


def test_kill_9_after_the_transaction_committed_leaves_all_new_and_recovery_records_it(tmp_path):
    """Killed after its commit but before the state database recorded it: every record is new; recovery finishes as applied."""
    db, state_db, app, pid = _setup(tmp_path)
    state = sqlite3.connect(state_db, isolation_level=None, timeout=10)
    child = _start_apply(f"sqlite:///{state_db}", state_db, pid)
    state.execute("BEGIN IMMEDIATE")  # the child can write the agent's database, not record that it did
    try:
        deadline = time.monotonic() + 20
        while RETIRED in dexto_db.values(db) and time.monotonic() < deadline:
            time.sleep(0.002)
        _kill(child)
    finally:
        state.execute("ROLLBACK")
        state.close()
    assert set(dexto_db.values(db)) == LIVE
    assert "Hotfixes skip the freeze." in dexto_db.values(db)[SURVIVOR]
    assert get_proposal(app, pid).state == "accepted"
    assert recover(app, adhoc_store(db, "dexto")) == [pid]
    assert get_proposal(app, pid).state == "applied"
    app.close()


def test_kill_9_at_random_moments_of_apply_leaves_records_all_old_or_all_new(tmp_path):
    """Killed a random few milliseconds after its journal opened, apply leaves the two records all-old or all-new; recovery ends all-new."""
    rng = random.Random(12)
    for trial in range(3):
        folder = tmp_path / str(trial)
        folder.mkdir()
        db, state_db, app, pid = _setup(folder)
        old = dexto_db.values(db)
        child = _start_apply(f"sqlite:///{state_db}", state_db, pid)
        time.sleep(rng.uniform(0, 0.05))
        _kill(child)
        now = dexto_db.values(db)
        assert now == old or (set(now) == LIVE and now[SURVIVOR] != old[SURVIVOR])
        recover(app, adhoc_store(db, "dexto"))
        if get_proposal(app, pid).state == "accepted":
            apply(app, [pid])
        assert (set(dexto_db.values(db)), get_proposal(app, pid).state) == (LIVE, "applied")
        app.close()


def test_a_survivor_dexto_rewrote_after_a_crash_is_a_conflict_that_resolve_ends_losing_nothing(tmp_path):
    """Killed after commit, then Dexto rewrites the survivor: recovery cannot tell who deleted the other record, so
    verify names the conflict, and resolve re-inserts the deleted value exactly and keeps Dexto's."""
    db, state_db, app, pid = _setup(tmp_path)
    state = sqlite3.connect(state_db, isolation_level=None, timeout=10)
    child = _start_apply(f"sqlite:///{state_db}", state_db, pid)
    state.execute("BEGIN IMMEDIATE")
    try:
        deadline = time.monotonic() + 20
        while RETIRED in dexto_db.values(db) and time.monotonic() < deadline:
            time.sleep(0.002)
        _kill(child)
    finally:
        state.execute("ROLLBACK")
        state.close()
    old = dexto_db.values(db) | {RETIRED: dexto_db.stringify([dexto_db.memory("nearBBBBBBBB", NEAR + "\nHotfixes skip the freeze.", T + 5)])[0]}
    dexto = _dexto_value("nearAAAAAAAA", "Releases moved to Wednesdays.")
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (SURVIVOR, dexto, 1))
    conn.close()
    assert recover(app, adhoc_store(db, "dexto")) == []
    assert verify(app, adhoc_store(db, "dexto")).problems == [
        f"journal 1 (apply of proposal {pid}) is conflict: a file holds neither its old nor its new bytes",
        f"{SURVIVOR}: modified since dreamd last recorded the store",
        f"{RETIRED}: removed since dreamd last recorded the store",
    ]
    resolution = resolve(app, 1)
    assert (resolution.restored, resolution.kept) == ([RETIRED], [SURVIVOR])
    assert dexto_db.values(db) == {**old, SURVIVOR: dexto}
    assert get_proposal(app, pid).state == "stale"
    app.close()


def test_a_record_dexto_changed_before_dreamds_commit_rolls_the_journal_back_and_apply_goes_stale(tmp_path):
    """Killed before its transaction, then Dexto rewrites the retired memory: recovery writes nothing, the next apply is stale."""
    db, state_db, app, pid = _setup(tmp_path)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        child = _start_apply(f"sqlite:///{state_db}", state_db, pid)
        time.sleep(0.3)
        _kill(child)
        dexto = _dexto_value("nearBBBBBBBB", "Hotfixes skip the freeze, except in December.")
        holder.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (RETIRED, dexto, 1))
        holder.execute("COMMIT")
    finally:
        holder.close()
    edited = dexto_db.values(db)
    assert recover(app, adhoc_store(db, "dexto")) == []
    assert [e["type"] for e in event_log(app) if e["proposal_id"] == pid][-1] == "journal.rolled_back"
    assert [r.state for r in apply(app, [pid])] == ["stale"]
    assert dexto_db.values(db) == edited
    app.close()
