"""The daemon: one APScheduler job per store, each pass in a pooled worker process.

The main thread owns signals and systemd's watchdog; APScheduler's BackgroundScheduler
fires jobs in a small thread pool, and each job only waits on its worker. Stopping is
pause → drain → shut down, in that order: with nothing left to submit, APScheduler's
``shutdown(wait=True)`` cannot race a job being submitted as it closes its executor.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon import logs
from daemon.config import Config, StoreConfig, config_from_text, read_config_text
from daemon.core.errors import ConfigError, DreamdError
from daemon.locations import default_db_url
from daemon.service import daemon_state
from daemon.scheduler.notify import Notifier
from daemon.scheduler.watch import Watches
from daemon.scheduler.worker import IDLE_S, MAX_MB, MAX_PASSES, Worker, WorkerPool, WorkerResult, run_to_end, worker_command

log = logs.get_logger("dreamd.daemon")

MISFIRE_GRACE_S = 3600  # a run missed by up to an hour (busy, suspended) still happens, once
TICK_S = 0.25  # how often the main thread looks at its flags; signals only set flags
# While passes run, the state file and systemd's STATUS= are brought up to date by the main thread
# at most this often: each is built from every store, so writing them at every pass's start
# and end cost a round of passes over a thousand stores quadratic time.
PUBLISH_S = 1.0


@dataclass(frozen=True)
class RunOptions:
    config_path: Path
    db_url: str | None = None  # --db, handed on to workers
    debug: bool = False
    stop_timeout: float = 120.0  # SIGTERM: how long running passes may take to finish
    kill_after: float = 10.0  # then: how long a worker told to stop may take before SIGKILL
    max_parallel: int = 2  # passes at once (one per store at most)
    worker_passes: int = MAX_PASSES  # passes one worker process serves before it is replaced
    worker_mb: int = MAX_MB  # a worker whose peak RSS passed this is replaced after its pass
    worker_idle_s: float = IDLE_S  # an idle worker is let go after this long
    watch: bool = True  # watch the stores (inotify) so that a pass over a quiet one makes no stat


class Daemon:
    def __init__(self, options: RunOptions, notifier: Notifier | None = None) -> None:
        self.options = options
        self.notifier = notifier or Notifier()
        self.config, self._config_text = self._load()  # a bad config at start is an error, not a daemon
        # the database its workers open (as context.resolve_db_url picks it): one daemon each
        self.db_url = options.db_url or os.environ.get("DREAMD_DB") or self.config.db_url or default_db_url()
        self._lock = threading.RLock()
        self._workers: dict[str, Worker] = {}
        self._active_jobs = 0  # job threads not yet returned; shutdown waits for none
        self._here = threading.local()  # each job thread's App for its own skips (_skip_here)
        self._lane_apps: list[Any] = []  # every such App, closed at shutdown
        self._last: dict[str, dict[str, Any]] = {}
        self._stop_requests = 0
        self._reload_requested = False
        self._stopping = False
        self._started = dt.datetime.now(dt.timezone.utc)
        self._next_beat = 0.0
        self._changed = False  # a pass started or ended since the state was last published
        self._next_publish = 0.0
        self.scheduler: Any = None
        self.watches: Watches | None = None
        serving = worker_command(str(options.config_path), options.db_url, options.debug, serve=(options.worker_passes, options.worker_mb))
        self.pool = WorkerPool(serving, idle_s=options.worker_idle_s)

    # -- lifecycle ---------------------------------------------------------------------

    def run(self) -> int:
        with daemon_state.DatabaseHold(self.db_url, self._started):  # a second daemon of this database stops here
            self._open_database()
            if self.options.watch:
                self.watches = Watches.open()
                self._track()
            self._install_signals()
            self.scheduler = self._make_scheduler()
            self.scheduler.start(paused=True)  # READY=1 goes out before the first pass starts
            log.info("daemon.started", pid=os.getpid(), stores=sorted(self.config.stores), config=str(self.options.config_path))
            self.notifier.ready(self._publish(send=False))
            self.scheduler.resume()
            self._loop()
            self._shutdown()
        return 0

    def _make_scheduler(self) -> Any:
        """One job per store: missed runs coalesced into one, never two passes of a store at
        once, a run up to an hour late still made."""
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler

        scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=self.options.max_parallel)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": MISFIRE_GRACE_S},
        )
        self.scheduler = scheduler
        for store in self.config.stores.values():
            self._add_job(store)
        return scheduler

    def _open_database(self) -> None:
        """Open (and migrate) the state database once, before READY, in a short-lived worker:
        an unreachable or too-new database fails the start with its one-line error instead
        of failing every pass, workers never race to migrate a new database, and the
        daemon itself never imports the database layer (it stays ~30 MB)."""
        command = worker_command(str(self.options.config_path), self.options.db_url, self.options.debug)
        code = run_to_end(command, self._config_text)
        if code != 0:
            raise SystemExit(code)  # the worker has said why on stderr, in one line

    def _install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, self._on_reload)

    def _on_stop(self, signum: int, frame: Any) -> None:
        self._stop_requests += 1  # a second request stops running passes without waiting

    def _on_reload(self, signum: int, frame: Any) -> None:
        self._reload_requested = True

    def _loop(self) -> None:
        """Until asked to stop: feed the watchdog, reload on SIGHUP."""
        while not self._stop_requests:
            self._beat()
            if self._reload_requested:
                self._reload_requested = False
                self._reload()
            self._publish_changes()
            self.pool.let_go_idle()
            if self.watches is not None:  # read events as they come: the kernel's queue is bounded
                self.watches.drain()
            time.sleep(TICK_S)

    def _publish_changes(self) -> None:
        """Publish what passes changed, once per PUBLISH_S at most."""
        if self._changed and time.monotonic() >= self._next_publish:
            self._changed = False
            self._next_publish = time.monotonic() + PUBLISH_S
            self._publish()

    def _beat(self) -> None:
        interval = self.notifier.watchdog_interval
        if interval and time.monotonic() >= self._next_beat:
            self.notifier.watchdog()
            self._next_beat = time.monotonic() + interval

    def _shutdown(self) -> None:
        """Pause, let running passes finish (up to stop_timeout), stop the rest, shut down."""
        with self._lock:
            self._stopping = True
            running = sorted(self._workers)
        self.scheduler.pause()
        log.info("daemon.stopping", running=running, stop_timeout=self.options.stop_timeout)
        self.notifier.stopping(f"stopping; waiting for {len(running)} running pass(es)")
        self._drain(time.monotonic() + self.options.stop_timeout, until_second_request=True)
        with self._lock:
            workers = list(self._workers.items())
        for store, worker in workers:
            log.warning("pass.stopping", store=store, worker_pid=worker.pid)
            worker.terminate()
        self._drain(time.monotonic() + self.options.kill_after)
        with self._lock:
            workers = list(self._workers.items())
        for store, worker in workers:
            log.error("pass.killed", store=store, worker_pid=worker.pid)
            worker.kill()
        self._drain(float("inf"))
        self.pool.close()
        self.scheduler.shutdown(wait=True)
        for app in self._lane_apps:  # their job threads have ended
            app.close()
        if self.watches is not None:
            self.watches.close()
        daemon_state.remove_state(self.db_url, os.getpid())
        log.info("daemon.stopped")

    def _drain(self, deadline: float, until_second_request: bool = False) -> None:
        """Wait until no job thread is left (its worker ended and it has recorded the pass)."""
        while time.monotonic() < deadline:
            with self._lock:
                if not self._active_jobs:
                    return
            if until_second_request and self._stop_requests > 1:
                return
            self._beat()
            time.sleep(TICK_S)

    # -- config ------------------------------------------------------------------------

    def _load(self) -> tuple[Config, str]:
        path = self.options.config_path
        text = read_config_text(path)  # a FIFO swapped in is refused, never read
        config = config_from_text(text, path)
        if not config.stores:
            raise ConfigError(f"config {path} has no [[stores]] to schedule")
        return config, text

    def _reload(self) -> None:
        """SIGHUP: apply a new config; an invalid one keeps the running one, and says why."""
        self.notifier.reloading()
        try:
            config, text = self._load()
        except DreamdError as exc:
            log.error("config.reload_failed", error=exc.one_line(), kept=sorted(self.config.stores))
            self.notifier.ready(self._publish(note=f"reload refused: {exc}", send=False))
            return
        old = self.config.stores
        removed = sorted(set(old) - set(config.stores))
        added = sorted(set(config.stores) - set(old))
        changed = sorted(n for n in set(old) & set(config.stores) if old[n].schedule != config.stores[n].schedule)
        with self._lock:
            self.config, self._config_text = config, text
        self._track()
        for name in removed + changed:
            self.scheduler.remove_job(name)
        for name in added + changed:
            self._add_job(config.stores[name])
        log.info("config.reloaded", added=added, removed=removed, rescheduled=changed)
        self.notifier.ready(self._publish(send=False))

    def _track(self) -> None:
        """Watch the configured stores' folders (watch.py); a store dropped is let go."""
        if self.watches is not None:
            self.watches.track({name: store.watched_folders() for name, store in self.config.stores.items()})

    def _add_job(self, store: StoreConfig) -> None:
        """An interval store runs its first pass now; a cron store waits for its time."""
        first = {"next_run_time": dt.datetime.now(dt.timezone.utc)} if store.schedule.every else {}
        self.scheduler.add_job(self._pass_job, store.schedule.trigger(), args=[store.name], id=store.name, name=store.name, **first)

    # -- passes ------------------------------------------------------------------------

    def _pass_job(self, name: str) -> None:
        """One scheduled pass: a worker process runs it; this thread waits and records."""
        with self._lock:
            if self._stopping or name not in self.config.stores:
                return
            self._active_jobs += 1
        try:
            self._run_worker(name)
        except OSError as exc:  # no worker could be started (fork limits, memory): try next time
            log.error("pass.not_started", store=name, error=f"{exc.__class__.__name__}: {exc}")
        finally:
            with self._lock:
                self._active_jobs -= 1

    def _run_worker(self, name: str) -> None:
        with self._lock:
            config, config_text = self.config, self._config_text
        def started(worker: Worker) -> None:
            log.info("pass.started", store=name, worker_pid=worker.pid, worker_passes=worker.passes)
            self._changed = True

        unchanged = self.watches.claim(name) if self.watches is not None else None
        line = self._skip_here(name, config, config_text, unchanged) if unchanged is not None else None
        if line is not None:
            result, where = WorkerResult(name, 0, line), {"worker_pid": None}
        else:
            worker, result = self.pool.run(name, config_text, self._workers, self._lock, started, may_retry=lambda: not self._stopping, unchanged=unchanged)
            where = {"worker_pid": worker.pid, "worker_passes": worker.passes}
        if self.watches is not None:
            self.watches.passed(name, result.report.get("seen") if result.code == 0 else None)
        if result.died:  # it may have left its pass "running"
            self._record_death(result)
        self._last[name] = _summary(result)
        log_method = log.info if result.code == 0 else log.error
        log_method("pass.finished", store=name, **where, **self._last[name])
        self._changed = True  # the main thread publishes it (see PUBLISH_S)

    def _skip_here(self, name: str, config: Config, config_text: str, unchanged: dict[str, Any]) -> dict[str, Any] | None:
        """A store the watches saw no change in is skipped by the daemon itself, through the
        no-op lane (the standard library's sqlite3 and one kept connection per job thread;
        no worker started, no file of the store read): a round of unchanged stores then
        costs the same per store whether there are 20 or 1,000, where two worker starts
        (0.12 s of CPU each) weighed on every round. Whatever the lane cannot vouch for
        (None) goes to a worker's whole pass, as before."""
        from daemon.service.context import App
        from daemon.service.passes import watched_skip

        here = self._here
        if getattr(here, "text", None) != config_text:  # a reloaded config: a new App for it
            old = getattr(here, "app", None)
            here.app, here.text = App(config=config, db_url=self.db_url, surface="daemon", actor="daemon"), config_text
            with self._lock:
                self._lane_apps = [app for app in self._lane_apps if app is not old] + [here.app]
            if old is not None:
                old.close()
        return watched_skip(here.app, name, unchanged)

    def _record_death(self, result: WorkerResult) -> None:
        """A worker that died may have left its pass "running": a short worker closes it as
        failed now (the daemon itself only records watched skips, through the no-op lane)."""
        why = f"the worker running it died ({result.describe()})"
        command = worker_command(str(self.options.config_path), self.options.db_url, self.options.debug, dead=why)
        if run_to_end(command, self._config_text) != 0:  # the next pass over the store closes it instead
            log.error("pass.death_unrecorded", store=result.store)

    # -- status ------------------------------------------------------------------------

    def _publish(self, note: str = "", send: bool = True) -> str:
        """Write the state file for ``dreamd status`` and return systemd's one-line STATUS."""
        with self._lock:
            stores = {}
            for name, store in sorted(self.config.stores.items()):
                # while stopping, APScheduler's locks belong to shutdown: no next runs anyway
                job = self.scheduler.get_job(name) if self.scheduler and not self._stopping else None
                next_run = getattr(job, "next_run_time", None)
                stores[name] = {
                    "schedule": store.schedule.describe(),
                    "next_run": next_run.isoformat() if next_run else None,
                    "running": name in self._workers,
                    "last": self._last.get(name),
                }
            data = {"pid": os.getpid(), "started_at": self._started.isoformat(), "config": str(self.options.config_path), "stores": stores}
        try:
            daemon_state.write_state(self.db_url, data)
        except OSError as exc:
            log.warning("status.unwritable", error=exc.__class__.__name__)
        line = _status_line(stores, note)
        if send:
            self.notifier.status(line)
        return line


def _summary(result: WorkerResult) -> dict[str, Any]:
    report = result.report
    stats = report.get("stats") or {}
    summary = {"status": report.get("status", "failed"), "pass_id": report.get("pass_id"), "at": dt.datetime.now(dt.timezone.utc).isoformat()}
    summary.update({k: stats[k] for k in ("pending", "refused", "notes") if k in stats})
    if result.code != 0:
        summary.update(status="failed", error=result.describe())
    return summary


def _status_line(stores: dict[str, dict[str, Any]], note: str) -> str:
    running = [n for n, s in stores.items() if s["running"]]
    upcoming = sorted((s["next_run"], n) for n, s in stores.items() if s["next_run"])
    parts = [f"{len(stores)} store(s)"]
    if running:
        parts.append(f"passing: {', '.join(running)}")
    done = sorted(((s["last"]["at"], n, s["last"]) for n, s in stores.items() if s["last"]), key=lambda item: item[0])
    if done:
        _, name, last = done[-1]
        parts.append(f"last: {name} {last['status']}" + (f", {last['pending']} new" if last.get("pending") else ""))
    if upcoming:
        parts.append(f"next: {upcoming[0][1]} at {upcoming[0][0][:16]}")
    if note:
        parts.append(note)
    return "; ".join(parts)
