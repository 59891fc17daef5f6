"""A pass whose process dies is closed as failed; a long pass keeps its lease alive."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.leases import holding_store
from daemon.service.passes.orphans import close_dead_passes
from daemon.service.passes.run import run_pass


def _dead_runner() -> str:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    import socket

    return f"{socket.gethostname()}:{child.stdout.strip()}"


def test_a_pass_whose_process_died_is_closed_as_failed_by_the_next_pass(example_store, make_app, clock):
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    with app.engine().begin() as conn:
        store_id = repo.ensure_store(conn, store.name, str(store.root), store.preset, clock())
        dead = repo.start_pass(conn, store_id, "daemon", "daemon", clock(), runner=_dead_runner())
    report = run_pass(app, store)
    with app.engine().connect() as conn:
        rows = {r.id: r for r in conn.execute(t.passes.select())}
        events = [e.type for e in conn.execute(t.events.select().where(t.events.c.pass_id == dead))]
    assert rows[dead].status == "failed" and "process running it died" in rows[dead].error
    assert rows[report.pass_id].status == "completed"
    assert events == ["pass.failed"]


def test_a_live_or_foreign_runner_is_left_running(example_store, make_app, clock):
    """Only a local process known to be gone counts: another host's pass is not ours to close."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    with app.engine().begin() as conn:
        store_id = repo.ensure_store(conn, store.name, str(store.root), store.preset, clock())
        mine = repo.start_pass(conn, store_id, "cli", "x", clock(), runner=f"{os.uname().nodename}:{os.getpid()}")
        foreign = repo.start_pass(conn, store_id, "cli", "x", clock(), runner="elsewhere:1")
    assert close_dead_passes(app, store_id) == []
    with app.engine().connect() as conn:
        assert {r.id for r in repo.running_passes(conn, store_id)} == {mine, foreign}


def test_a_sigkilled_pass_process_is_recorded_failed(tmp_path, make_store):
    """A real ``dreamd pass`` killed with SIGKILL mid-pass: the next pass closes its row."""
    files = {f"note-{i:04d}.md": f"# Note {i}\n\n" + " ".join(f"word{(i * 7 + j) % 900}" for j in range(60)) + "\n" for i in range(600)}
    root = make_store(files)
    db = f"sqlite:///{tmp_path / 'state.db'}"
    command = [sys.executable, "-m", "daemon", "--db", db, "pass", "--store", str(root), "--preset", "generic"]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    from daemon.db.engine import open_engine

    engine = open_engine(db)
    try:
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                if repo.running_passes(conn):
                    break
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait()
        with engine.connect() as conn:
            assert [r.status for r in conn.execute(t.passes.select())] == ["running"]
        again = subprocess.run(command, capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        with engine.connect() as conn:
            statuses = [(r.status, r.error or "") for r in conn.execute(t.passes.select().order_by(t.passes.c.id))]
    finally:
        engine.dispose()
    assert statuses[0][0] == "failed" and "died" in statuses[0][1]
    assert statuses[1][0] == "completed"


def test_the_heartbeat_keeps_a_long_pass_lease_alive(example_store, make_app):
    """With a real clock, a lease held longer than its ttl is renewed, not lost."""
    app = make_app()
    app.clock = lambda: dt.datetime.now(dt.timezone.utc)
    store = adhoc_store(example_store, "deepcode")
    with app.engine().begin() as conn:
        store_id = repo.ensure_store(conn, store.name, str(store.root), store.preset, app.clock())
    ttl = dt.timedelta(seconds=1.2)  # renewed every 0.4 s: only a stall of over 1.2 s on a loaded machine could lose it
    with holding_store(app, store_id, store.name, ttl=ttl, heartbeat=True):
        time.sleep(3.0)  # over twice the ttl: the lease outlived it only by being renewed
        with app.engine().connect() as conn:
            lease = conn.execute(t.leases.select()).one()
        assert lease.expires_at > app.clock()
        assert lease.heartbeat_at > lease.acquired_at
    with app.engine().connect() as conn:
        assert conn.execute(t.leases.select()).all() == []
