"""``dreamd run`` for real: a subprocess with a notify socket, real workers, real signals."""

from __future__ import annotations

import json
import signal

import pytest

from daemon.db import repo
from daemon.db import schema as t
from daemon.db.engine import open_engine

from .conftest import wait_for, write_config


def _passes(db_url: str) -> list:
    engine = open_engine(db_url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(t.passes.select().order_by(t.passes.c.id)))
    finally:
        engine.dispose()


def _by_store(db_url: str) -> dict[str, list]:
    engine = open_engine(db_url)
    try:
        with engine.connect() as conn:
            names = {s.id: s.name for s in repo.all_stores(conn)}
            found: dict[str, list] = {}
            for row in conn.execute(t.passes.select().order_by(t.passes.c.id)):
                found.setdefault(names[row.store_id], []).append(row)
            return found
    finally:
        engine.dispose()


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'state.db'}"


def test_the_daemon_fires_passes_and_speaks_to_systemd(tmp_path, example_store, db_url, start_daemon, notify_socket):
    config = write_config(tmp_path / "config.toml", db_url, [{"name": "demo", "path": str(example_store), "preset": "deepcode", "every": "1s", "jitter": "0s"}])
    daemon = start_daemon(config, notify=notify_socket, watchdog_usec=400_000)
    wait_for(lambda: len(_passes(db_url)) >= 3, what="three passes")
    lines = notify_socket.lines()
    assert lines[0] == "READY=1" and lines[1].startswith("STATUS=1 store(s)")
    wait_for(lambda: notify_socket.lines().count("WATCHDOG=1") >= 3, timeout=10, what="watchdog pings")
    assert any(line.startswith("STATUS=") and "last: demo" in line for line in notify_socket.lines())
    assert daemon.stop() == 0
    assert "STOPPING=1" in notify_socket.lines()
    rows = _passes(db_url)
    assert rows[0].status == "completed" and rows[0].surface == "daemon" and rows[0].actor == "daemon"
    assert {r.status for r in rows} <= {"completed", "skipped"}
    assert "daemon.stopped" in daemon.log()
    assert not list((tmp_path / "xdg-state" / "dreamd").glob("daemon-*.json"))
    # pause, drain, shut down: no job submitted into a closed pool, nothing logged as an error
    assert '"level": "error"' not in daemon.log() and "after shutdown" not in daemon.log()


def test_status_shows_the_schedule_next_run_and_last_pass(tmp_path, example_store, db_url, start_daemon, cli):
    config = write_config(tmp_path / "config.toml", db_url, [{"name": "demo", "path": str(example_store), "preset": "deepcode", "every": "1h", "jitter": "0s"}])
    daemon = start_daemon(config)
    wait_for(lambda: [r for r in _passes(db_url) if r.status == "completed"], what="a completed pass")
    def idle():
        shown = json.loads(cli("--config", str(config), "status", "--json").out)
        return shown if shown["stores"][0]["next_run"] and not shown["stores"][0]["running"] else None

    shown = wait_for(idle, what="the daemon idle with a next run")
    store = shown["stores"][0]
    assert shown["daemon"]["pid"] == daemon.process.pid
    assert store["schedule"] == "every 1h"
    assert store["last_pass"]["status"] == "completed" and store["last_pass"]["new"] == store["proposals"]["pending"] > 0
    text = cli("--config", str(config), "status").out
    assert f"pid {daemon.process.pid}" in text and "demo: every 1h; next 20" in text
    assert daemon.stop() == 0
    assert "daemon: not running on this host" in cli("--config", str(config), "status").out


def test_sighup_with_a_broken_config_keeps_the_running_one(tmp_path, example_store, make_store, db_url, start_daemon, notify_socket):
    config = write_config(tmp_path / "config.toml", db_url, [{"name": "demo", "path": str(example_store), "preset": "deepcode", "every": "1s", "jitter": "0s"}])
    daemon = start_daemon(config, notify=notify_socket)
    wait_for(lambda: len(_passes(db_url)) >= 1, what="a pass")
    good = config.read_text()
    config.write_text(good + "[[stores]]\nname = 'broken'\npreset = 'nope'\n")
    daemon.signal(signal.SIGHUP)
    wait_for(lambda: "config.reload_failed" in daemon.log(), what="the refusal in the log")
    seen = len(_passes(db_url))
    wait_for(lambda: len(_passes(db_url)) >= seen + 2, what="passes going on after the refusal")
    assert daemon.process.poll() is None
    assert any("reload refused" in line for line in notify_socket.lines())
    other = make_store({"a.md": "# A\n\nsome words here\n"}, name="other")
    config.write_text(good + f'[[stores]]\nname = "other"\npath = "{other}"\npreset = "generic"\nevery = "1s"\njitter = "0s"\n')
    daemon.signal(signal.SIGHUP)
    wait_for(lambda: "other" in _by_store(db_url), what="the added store's first pass")
    assert "config.reloaded" in daemon.log()
    assert daemon.stop() == 0


def test_a_bad_config_at_start_is_one_line_and_exit_2(tmp_path, start_daemon):
    config = tmp_path / "config.toml"
    config.write_text("[[stores]]\nname = 'a'\npath = '.'\npreset = 'generic'\ncron = '0 3 1 * 1'\n")
    daemon = start_daemon(config)
    assert daemon.process.wait(30) == 2
    assert daemon.log().strip().splitlines() == [daemon.log().strip()]
    assert "restricts both day-of-month and day-of-week" in daemon.log()


def _big_store(make_store, notes: int = 1500):
    files = {f"note-{i:04d}.md": f"# Note {i}\n\n" + " ".join(f"word{(i * 7 + j) % 900}" for j in range(300)) + "\n" for i in range(notes)}
    return make_store(files, name="big")


def test_sigterm_during_a_pass_stops_it_safely_and_exits_0(tmp_path, make_store, db_url, start_daemon, snapshot_tree):
    root = _big_store(make_store)
    before = snapshot_tree(root)
    config = write_config(tmp_path / "config.toml", db_url, [{"name": "big", "path": str(root), "preset": "generic", "every": "1h", "jitter": "0s"}])
    daemon = start_daemon(config, "--stop-timeout", "0")
    wait_for(lambda: [r for r in _passes(db_url) if r.status == "running"], what="a running pass")
    assert daemon.stop() == 0
    (row,) = _passes(db_url)
    assert row.status == "failed" and "asked to stop" in row.error
    assert snapshot_tree(root) == before
    engine = open_engine(db_url)
    with engine.connect() as conn:
        assert conn.execute(t.leases.select()).all() == []
    engine.dispose()


def test_sigterm_lets_a_running_pass_finish_within_the_stop_timeout(tmp_path, make_store, db_url, start_daemon):
    root = _big_store(make_store, notes=600)
    config = write_config(tmp_path / "config.toml", db_url, [{"name": "big", "path": str(root), "preset": "generic", "every": "1h", "jitter": "0s"}])
    daemon = start_daemon(config)
    wait_for(lambda: [r for r in _passes(db_url) if r.status == "running"], what="a running pass")
    assert daemon.stop() == 0
    assert [r.status for r in _passes(db_url)] == ["completed"]


def test_a_worker_killed_mid_pass_is_a_failed_pass_and_the_daemon_goes_on(tmp_path, make_store, db_url, start_daemon):
    root = _big_store(make_store, notes=800)
    config = write_config(tmp_path / "config.toml", db_url, [{"name": "big", "path": str(root), "preset": "generic", "every": "2s", "jitter": "0s"}])
    daemon = start_daemon(config)
    running = wait_for(lambda: [r for r in _passes(db_url) if r.status == "running"], what="a running pass")
    worker_pid = int(running[0].runner.rpartition(":")[2])
    import os

    os.kill(worker_pid, signal.SIGKILL)
    first = wait_for(lambda: [r for r in _passes(db_url) if r.id == running[0].id and r.status == "failed"], timeout=10, what="the dead pass closed")
    assert "worker killed by SIGKILL" in first[0].error
    wait_for(lambda: [r for r in _passes(db_url) if r.status == "completed"], timeout=60, what="a later pass completing")
    assert daemon.process.poll() is None
    assert daemon.stop() == 0


def test_an_unreachable_database_fails_the_start_in_one_line(tmp_path, example_store, start_daemon, notify_socket):
    """No READY=1, exit 4 (state database), one line: systemd sees a failed start."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the database folder should be\n")
    config = write_config(tmp_path / "config.toml", f"sqlite:///{blocker / 'state.db'}", [{"name": "demo", "path": str(example_store), "preset": "deepcode"}])
    daemon = start_daemon(config, notify=notify_socket)
    assert daemon.process.wait(30) == 4
    assert len(daemon.log().strip().splitlines()) == 1 and daemon.log().startswith("error[state]")
    assert "READY=1" not in notify_socket.lines()
