"""One pass in a child process: ``python -m daemon ... worker STORE``.

Why a process: a pass over a large store, and above all an LLM pass (litellm costs ~200 MB
and seconds to import), must not stay resident in a daemon that idles for hours; and a
worker that crashes or is killed by the OOM killer takes only its own pass down. The
daemon hands the worker the config text it is running on (stdin), so a config file that
was edited but not reloaded, or reloaded and refused, never reaches a pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from daemon.scheduler.notify import SYSTEMD_VARS


@dataclass
class WorkerResult:
    store: str
    code: int  # the worker's exit code; negative: killed by that signal
    report: dict[str, Any] = field(default_factory=dict)  # the worker's one JSON line
    error: str = ""  # the worker's last stderr line when it failed

    def describe(self) -> str:
        if self.code < 0:
            return f"worker killed by {signal.Signals(-self.code).name}"
        if self.error:
            return self.error
        return f"worker exited with {self.code}"


def worker_command(store: str | None, config_path: str | None, db_url: str | None, debug: bool, *, dead: str | None = None) -> list[str]:
    """The worker's command line: a pass over ``store``; with no store, only open (and
    migrate) the database, or with ``dead`` close the passes of dead workers, saying why."""
    command = [sys.executable, "-m", "daemon"]
    if config_path:
        command += ["--config", config_path]
    if db_url:
        command += ["--db", db_url]
    if debug:
        command.append("--debug")
    if store:
        return [*command, "worker", store]
    return [*command, "worker", *(["--close-dead", dead] if dead else ["--check-database"])]


def _worker_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in SYSTEMD_VARS}


def run_to_end(command: list[str], config_text: str) -> int:
    """Run a short database-only worker to its end; its exit code (0: done)."""
    return subprocess.run(command, input=config_text, stdout=subprocess.DEVNULL, text=True, env=_worker_env()).returncode


class Worker:
    """A running worker; ``wait()`` collects its report."""

    def __init__(self, store: str, command: list[str], config_text: str) -> None:
        self.store = store
        env = _worker_env()
        # stderr is inherited: the worker's JSON log lines go where the daemon's go (journald)
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._config_text = config_text

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self) -> WorkerResult:
        out, _ = self.process.communicate(self._config_text)
        lines = [line for line in out.splitlines() if line.strip()]
        report: dict[str, Any] = {}
        if lines:
            try:
                report = json.loads(lines[-1])
            except json.JSONDecodeError:
                report = {}
        code = self.process.returncode
        return WorkerResult(self.store, code, report if isinstance(report, dict) else {}, str(report.get("error", "")) if isinstance(report, dict) else "")

    def terminate(self) -> None:
        """Ask the worker to stop at its next safe point (never inside a store write)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
