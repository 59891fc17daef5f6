"""Passes in child processes: ``python -m daemon ... worker --serve``, kept in a small pool.

Why processes: a pass over a large store, and above all an LLM pass (litellm costs ~200 MB
and seconds to import), must not stay resident in a daemon that idles for hours; and a
worker that crashes or is killed by the OOM killer takes only its own pass down.

Why a pool: a thousand small stores on one schedule would otherwise pay a thousand
interpreter start-ups (and imports) a round. A worker serves one pass at a time, for as
many passes as it is allowed (``max_passes``), until its peak memory passes ``max_mb``, or
until it has been idle ``idle_s``; then it is let go and the next pass starts a new one.

The protocol is JSON lines. The daemon sends ``{"store", "config", "unchanged"}`` (the
config text it is running on, so a file edited but not reloaded, or reloaded and refused,
never reaches a pass: sent to a worker once, then null while it stays the same, as a
thousand stores' config would cost every pass its length twice over; and what its watches
say the store still is, or null: see watch.py);
the worker answers ``{"started": store}`` at once, then one result line (``status``,
``pass_id``, ``stats``, ``seen``, or ``error`` and ``exit``) with ``last`` set when it will
exit after it. A worker that ends before answering ``started`` never began the pass: the
pass is given to a new worker. One that ends after it died during the pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from daemon.scheduler.notify import SYSTEMD_VARS

MAX_PASSES = 50  # passes a worker serves before it is replaced
MAX_MB = 400  # a worker whose peak RSS passed this is replaced after its pass
IDLE_S = 60.0  # an idle worker is let go after this long


@dataclass
class WorkerResult:
    store: str
    code: int  # the pass's exit code (0: done); negative: the worker was killed by that signal
    report: dict[str, Any] = field(default_factory=dict)  # the worker's result line
    error: str = ""  # why the pass failed
    died: bool = False  # the worker process ended during the pass

    def describe(self) -> str:
        if self.code < 0:
            return f"worker killed by {signal.Signals(-self.code).name}"
        if self.error:
            return self.error
        return f"worker exited with {self.code}"


def worker_command(config_path: str | None, db_url: str | None, debug: bool, *, dead: str | None = None, serve: tuple[int, int] | None = None) -> list[str]:
    """The worker's command line: with ``serve`` (max passes, max MB), a worker serving
    passes; else only open (and migrate) the database, or with ``dead`` close the passes of
    dead workers, saying why."""
    command = [sys.executable, "-m", "daemon"]
    if config_path:
        command += ["--config", config_path]
    if db_url:
        command += ["--db", db_url]
    if debug:
        command.append("--debug")
    if serve:
        return [*command, "worker", "--serve", "--max-passes", str(serve[0]), "--max-mb", str(serve[1])]
    return [*command, "worker", *(["--close-dead", dead] if dead else ["--check-database"])]


def _worker_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SYSTEMD_VARS}


def run_to_end(command: list[str], config_text: str) -> int:
    """Run a short database-only worker to its end; its exit code (0: done)."""
    return subprocess.run(command, input=config_text, stdout=subprocess.DEVNULL, text=True, env=_worker_env()).returncode


class _NeverStarted(Exception):
    """The worker ended before it took the pass (``code``: how it ended)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Worker:
    """A worker process serving passes one at a time."""

    def __init__(self, command: list[str]) -> None:
        # stderr is inherited: the worker's JSON log lines go where the daemon's go (journald)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=_worker_env())
        self.passes = 0
        self.config_sent: str | None = None  # the config text this worker runs on
        self.idle_since = time.monotonic()
        self.last = False  # it said it exits after its last answer

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def reusable(self) -> bool:
        return not self.last and self.process.poll() is None

    def run(self, store: str, config_text: str, on_start: Callable[[Worker], None], unchanged: dict[str, Any] | None = None) -> WorkerResult:
        """One pass over ``store``; raises _NeverStarted when the worker was gone before it took it."""
        config = None if config_text == self.config_sent else config_text
        self.config_sent = config_text
        try:
            self.process.stdin.write(json.dumps({"store": store, "config": config, "unchanged": unchanged}) + "\n")  # type: ignore[union-attr]
            self.process.stdin.flush()  # type: ignore[union-attr]
            started = self.process.stdout.readline()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            started = ""
        if not started:
            raise _NeverStarted(self.close())
        self.passes += 1
        on_start(self)
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        self.idle_since = time.monotonic()
        if not line:  # it died during the pass
            code = self.close()
            return WorkerResult(store, code, {}, "", died=True)
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            report = {}
        report = report if isinstance(report, dict) else {}
        self.last = bool(report.get("last"))
        return WorkerResult(store, int(report.get("exit", 0)), report, str(report.get("error", "")))

    def terminate(self) -> None:
        """Ask the worker to stop at its next safe point (never inside a store write)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()

    def close(self) -> int:
        """Let the worker go (it exits at the end of its input) and reap it; its exit code."""
        try:
            self.process.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


class WorkerPool:
    """Idle workers waiting for the next pass; a pass takes one, or starts one."""

    def __init__(self, command: list[str], idle_s: float = IDLE_S) -> None:
        self.command = command
        self.idle_s = idle_s
        self._idle: list[Worker] = []
        self._lock = threading.Lock()
        self.started = 0  # workers started so far

    def run(self, store: str, config_text: str, busy: dict[str, Worker], lock: threading.RLock, on_start: Callable[[Worker], None], may_retry: Callable[[], bool],
            unchanged: dict[str, Any] | None = None) -> tuple[Worker, WorkerResult]:  # fmt: skip
        """One pass in a pooled worker (``busy[store]`` holds it meanwhile, under ``lock``);
        ``on_start(worker)`` once the worker has taken the pass. A worker found gone before it
        took the pass (it died idle) is replaced once, if ``may_retry()`` still says so.
        ``unchanged``: what the daemon's watches say the store still is (see watch.py)."""
        for attempt in (1, 2):
            worker = self._take()
            with lock:
                busy[store] = worker
            try:
                result = worker.run(store, config_text, on_start, unchanged)
            except _NeverStarted as gone:
                if attempt == 1 and may_retry():
                    continue
                return worker, WorkerResult(store, gone.code)
            finally:
                with lock:
                    busy.pop(store, None)
            self._give_back(worker)
            return worker, result
        raise AssertionError("unreachable")

    def _take(self) -> Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.reusable:
                    return worker
                worker.close()
            self.started += 1
        return Worker(self.command)

    def _give_back(self, worker: Worker) -> None:
        if worker.reusable:
            with self._lock:
                self._idle.append(worker)
        else:
            worker.close()

    def let_go_idle(self, now: float | None = None) -> None:
        """Close workers idle for longer than ``idle_s`` (all of them with ``now`` = inf)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            leaving = [w for w in self._idle if now - w.idle_since >= self.idle_s]
            self._idle = [w for w in self._idle if w not in leaving]
        for worker in leaving:
            worker.close()

    def close(self) -> None:
        self.let_go_idle(float("inf"))
