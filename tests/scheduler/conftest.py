"""A real ``dreamd run`` in a subprocess, a systemd notify socket to listen on, and polling."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


class NotifySocket:
    """A datagram socket standing in for systemd's; a thread collects what the daemon sends
    (like systemd, it keeps reading: a Unix datagram queue holds only a few messages)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.05)
        self.messages: list[str] = []
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while not self.closed.is_set():
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                return

    def drain(self) -> list[str]:
        time.sleep(0.1)
        return list(self.messages)

    def close(self) -> None:
        self.closed.set()
        self.reader.join()
        self.sock.close()

    def lines(self) -> list[str]:
        return [line for message in self.drain() for line in message.splitlines()]


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[NotifySocket]:
    listener = NotifySocket(tmp_path / "notify.sock")
    yield listener
    listener.close()


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "condition") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class DaemonProcess:
    def __init__(self, config: Path, log: Path, env: dict[str, str], *args: str) -> None:
        self.log_path = log
        command = [sys.executable, "-m", "daemon", "--config", str(config), "run", *args]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"), env=env)

    def log(self) -> str:
        return self.log_path.read_text()

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def stop(self, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the daemon did not stop within {timeout}s; its log ends:\n{self.log()[-3000:]}") from None


@pytest.fixture
def start_daemon(tmp_path: Path) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def start(config: Path, *args: str, notify: NotifySocket | None = None, watchdog_usec: int | None = None, env: dict[str, str] | None = None) -> DaemonProcess:
        """``env``: variables that differ from this process's (another host's state directory)."""
        env = {**os.environ, **(env or {})}
        if notify is not None:
            env["NOTIFY_SOCKET"] = str(notify.path)
        if watchdog_usec is not None:
            env["WATCHDOG_USEC"] = str(watchdog_usec)
        daemon = DaemonProcess(config, tmp_path / f"daemon-{len(started)}.log", env, *args)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        if daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()


def write_config(path: Path, db: str, stores: list[dict[str, str]]) -> Path:
    lines = [f'db = "{db}"']
    for store in stores:
        lines.append("[[stores]]")
        lines += [f'{key} = "{value}"' for key, value in store.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
