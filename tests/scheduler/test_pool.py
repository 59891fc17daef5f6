"""Pooled pass workers: one process serves several passes, is replaced when it has done its
share, died or idled, and a worker found dead before it took a pass costs no pass."""

from __future__ import annotations

import os
import signal
import threading

from daemon.scheduler.runner import Daemon, RunOptions
from daemon.scheduler.worker import WorkerPool, worker_command

from .conftest import wait_for, write_config

NOTE = "# Ports\n\nThe API listens on 8080 and the admin console on 9090.\n"


def _stores(tmp_path, make_store, names):
    return [{"name": n, "path": str(make_store({"MEMORY.md": "# Memory\n", "ports.md": NOTE, "ports-copy.md": NOTE}, name=n)), "preset": "deepcode"} for n in names]


def _pool(config, db_url, max_passes=50, idle_s=60.0):
    return WorkerPool(worker_command(str(config), db_url, False, serve=(max_passes, 400)), idle_s=idle_s)


def _run(pool, store, config):
    busy: dict = {}
    return pool.run(store, config.read_text(), busy, threading.RLock(), lambda worker: None, may_retry=lambda: True)


def test_one_worker_serves_several_passes(tmp_path, make_store, db_url):
    """Two passes over two stores run in the same worker process, and both complete."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a", "b"]))
    pool = _pool(config, db_url)
    try:
        first, done_a = _run(pool, "a", config)
        second, done_b = _run(pool, "b", config)
    finally:
        pool.close()
    assert (done_a.report["status"], done_b.report["status"]) == ("completed", "completed")
    assert first is second and first.passes == 2 and pool.started == 1


def test_a_worker_that_did_its_share_is_replaced(tmp_path, make_store, db_url):
    """With max_passes 1, the second pass starts a second worker; the first has exited."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a", "b"]))
    pool = _pool(config, db_url, max_passes=1)
    try:
        first, _ = _run(pool, "a", config)
        second, done = _run(pool, "b", config)
    finally:
        pool.close()
    assert first is not second and pool.started == 2 and done.report["status"] == "completed"
    assert first.process.poll() == 0


def test_skipped_passes_do_not_wear_a_worker_out(tmp_path, make_store, db_url):
    """With max_passes 1, passes skipped as unchanged after the first are all served by the
    first worker (a new worker for each would cost an interpreter start per unchanged store)."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a"]))
    pool = _pool(config, db_url, max_passes=2)
    try:
        first, done = _run(pool, "a", config)
        skips = [_run(pool, "a", config) for _ in range(3)]
    finally:
        pool.close()
    assert done.report["status"] == "completed" and [r.report["status"] for _, r in skips] == ["skipped"] * 3
    assert {id(w) for w, _ in skips} == {id(first)} and pool.started == 1


RECORDER = """
import json, sys
with open(sys.argv[1], "a") as kept:
    for line in sys.stdin:
        kept.write(line)
        kept.flush()
        store = json.loads(line)["store"]
        print(json.dumps({"started": store}), flush=True)
        print(json.dumps({"store": store, "status": "skipped", "exit": 0}), flush=True)
"""


def test_a_worker_is_sent_the_config_text_once_and_again_when_it_changed(tmp_path):
    """What the daemon writes to a worker: the config text with its first pass, null while the
    text stays the same (a thousand stores' config is not sent a thousand times), the new text after a reload."""
    import json
    import sys

    from daemon.scheduler.worker import Worker

    kept = tmp_path / "requests.jsonl"
    worker = Worker([sys.executable, "-c", RECORDER, str(kept)])
    try:
        for text in ("[[stores]] # one", "[[stores]] # one", "[[stores]] # two", "[[stores]] # two"):
            assert worker.run("s", text, lambda w: None).report["status"] == "skipped"
    finally:
        worker.close()
    sent = [json.loads(line)["config"] for line in kept.read_text().splitlines()]
    assert sent == ["[[stores]] # one", None, "[[stores]] # two", None]


def test_a_worker_that_died_idle_costs_no_pass(tmp_path, make_store, db_url):
    """An idle worker killed by SIGKILL (the OOM killer) is replaced, and the pass still completes."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a"]))
    pool = _pool(config, db_url)
    try:
        first, _ = _run(pool, "a", config)
        os.kill(first.pid, signal.SIGKILL)
        first.process.wait(30)
        second, done = _run(pool, "a", config)
    finally:
        pool.close()
    assert second is not first and pool.started == 2
    assert (done.died, done.code) == (False, 0)


def test_a_worker_killed_during_its_pass_is_a_dead_pass(tmp_path, make_store, db_url):
    """SIGKILL once the worker has taken the pass: the result says it died, by that signal."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a"]))
    pool = _pool(config, db_url)
    busy: dict = {}
    try:
        worker, result = pool.run("a", config.read_text(), busy, threading.RLock(), lambda w: os.kill(w.pid, signal.SIGKILL), may_retry=lambda: True)
    finally:
        pool.close()
    assert (result.died, result.code, result.describe()) == (True, -signal.SIGKILL, "worker killed by SIGKILL")
    assert busy == {}


def test_idle_workers_are_let_go(tmp_path, make_store, db_url):
    """A worker idle for longer than idle_s is closed and exits 0 at the end of its input."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a"]))
    pool = _pool(config, db_url, idle_s=0.0)
    worker, _ = _run(pool, "a", config)
    pool.let_go_idle()
    assert worker.process.poll() == 0


def test_the_daemon_passes_several_stores_in_one_worker(tmp_path, make_store, db_url):
    """Three stores, one pass at a time: every pass completes, and one worker process ran them all."""
    from daemon.db import schema as t
    from daemon.db.engine import open_engine

    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a", "b", "c"]))
    daemon = Daemon(RunOptions(config_path=config, db_url=db_url, max_parallel=1))
    daemon._open_database()
    try:
        for name in ("a", "b", "c"):
            daemon._pass_job(name)
    finally:
        daemon.pool.close()
    engine = open_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(t.passes.select()).all()
    finally:
        engine.dispose()
    assert [r.status for r in rows] == ["completed"] * 3
    assert len({r.runner for r in rows}) == 1 and daemon.pool.started == 1
    wait_for(lambda: daemon._last and all(daemon._last[n]["status"] == "completed" for n in ("a", "b", "c")), what="the passes recorded")


def test_a_worker_forked_from_a_large_process_measures_only_its_own_memory(tmp_path, make_store, db_url):
    """A worker started by a process far past the memory limit is not replaced for it: its peak is its own."""
    config = write_config(tmp_path / "config.toml", db_url, _stores(tmp_path, make_store, ["a", "b"]))
    ballast = bytearray(300 * 1024 * 1024)
    ballast[:: 4096] = b"\x01" * len(ballast[:: 4096])  # resident, not just reserved
    pool = WorkerPool(worker_command(str(config), db_url, False, serve=(50, 250)))
    try:
        first, _ = _run(pool, "a", config)
        second, _ = _run(pool, "b", config)
    finally:
        pool.close()
        del ballast
    assert first is second and pool.started == 1
