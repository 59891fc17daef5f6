"""The Daemon object in-process: what a job thread does when a worker cannot start."""

from __future__ import annotations

import structlog

from daemon.scheduler import worker as worker_module
from daemon.scheduler.runner import Daemon, RunOptions

from .conftest import write_config


def test_a_worker_that_cannot_start_is_logged_and_the_job_ends_cleanly(tmp_path, example_store, monkeypatch):
    config = write_config(tmp_path / "config.toml", f"sqlite:///{tmp_path / 'state.db'}", [{"name": "demo", "path": str(example_store), "preset": "deepcode"}])
    monkeypatch.setattr(worker_module.sys, "executable", str(tmp_path / "no-such-python"))
    daemon = Daemon(RunOptions(config_path=config))
    with structlog.testing.capture_logs() as logs:
        daemon._pass_job("demo")
    assert [e["event"] for e in logs] == ["pass.not_started"] and "FileNotFoundError" in logs[0]["error"]
    assert daemon._active_jobs == 0 and daemon._workers == {}


def test_a_job_for_a_store_removed_by_a_reload_does_nothing(tmp_path, example_store):
    config = write_config(tmp_path / "config.toml", f"sqlite:///{tmp_path / 'state.db'}", [{"name": "demo", "path": str(example_store), "preset": "deepcode"}])
    daemon = Daemon(RunOptions(config_path=config))
    with structlog.testing.capture_logs() as logs:
        daemon._pass_job("gone")
    assert logs == [] and daemon._active_jobs == 0


def test_each_store_is_one_coalescing_single_instance_job_on_its_schedule(tmp_path, example_store):
    from daemon.scheduler.runner import MISFIRE_GRACE_S

    other = tmp_path / "other"
    other.mkdir()
    stores = [
        {"name": "hourly", "path": str(example_store), "preset": "deepcode", "every": "1h"},
        {"name": "sunday", "path": str(other), "preset": "deepcode", "cron": "0 3 * * 0"},
    ]
    config = write_config(tmp_path / "config.toml", f"sqlite:///{tmp_path / 'state.db'}", stores)
    scheduler = Daemon(RunOptions(config_path=config))._make_scheduler()
    scheduler.start(paused=True)  # APScheduler applies job defaults when it starts
    try:
        jobs = {job.id: job for job in scheduler.get_jobs()}
    finally:
        scheduler.shutdown(wait=False)
    assert sorted(jobs) == ["hourly", "sunday"]
    for job in jobs.values():
        assert (job.coalesce, job.max_instances, job.misfire_grace_time) == (True, 1, MISFIRE_GRACE_S)
    assert "day_of_week='sun'" in str(jobs["sunday"].trigger)
    assert jobs["hourly"].trigger.interval.total_seconds() == 3600


def test_a_reload_onto_a_fifo_is_refused_at_once_and_keeps_the_running_config(tmp_path, example_store):
    """The config swapped for a named pipe before SIGHUP: the reload is refused in one logged
    line, the running stores stay, and nothing blocks on reading the pipe."""
    import os

    config = write_config(tmp_path / "config.toml", f"sqlite:///{tmp_path / 'state.db'}", [{"name": "demo", "path": str(example_store), "preset": "deepcode"}])
    daemon = Daemon(RunOptions(config_path=config))
    daemon.config, _ = daemon._load()
    config.unlink()
    os.mkfifo(config)
    with structlog.testing.capture_logs() as logs:
        daemon._reload()
    (failed,) = [e for e in logs if e["event"] == "config.reload_failed"]
    assert "FIFO" in failed["error"] and failed["kept"] == ["demo"]
    assert sorted(daemon.config.stores) == ["demo"]
