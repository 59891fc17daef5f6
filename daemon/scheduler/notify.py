"""The systemd notify protocol, spoken directly: one datagram to ``$NOTIFY_SOCKET``.

No libsystemd binding is needed for READY=1, STATUS=, WATCHDOG=1 and STOPPING=1: the
protocol is a newline-separated ``KEY=value`` datagram on a Unix socket (an address that
starts with ``@`` is in the abstract namespace). Outside systemd every call is a no-op.
"""

from __future__ import annotations

import os
import socket
import time

from daemon import logs

log = logs.get_logger("dreamd.notify")

# Workers must not speak for the daemon, nor think the watchdog is theirs.
SYSTEMD_VARS = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")
SEND_TIMEOUT_S = 0.5


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self.watchdog_interval = _watchdog_interval(env)

    def send(self, **fields: str) -> bool:
        """Send ``KEY=value`` lines; False (and a debug log) when there is nobody to tell."""
        if not self.address:
            return False
        message = "\n".join(f"{key}={value}" for key, value in fields.items()).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.settimeout(SEND_TIMEOUT_S)  # a listener that stopped reading must not stall the daemon
                sock.sendto(message, self.address)
        except OSError as exc:  # systemd gone or socket unwritable: never fatal for the daemon
            log.debug("notify.failed", error=exc.__class__.__name__)
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send(READY="1", STATUS=status)

    def status(self, status: str) -> bool:
        return self.send(STATUS=status)

    def watchdog(self) -> bool:
        return self.send(WATCHDOG="1")

    def stopping(self, status: str) -> bool:
        return self.send(STOPPING="1", STATUS=status)

    def reloading(self) -> bool:
        """Before a reload; ``ready()`` after it ends the reload for systemd."""
        return self.send(RELOADING="1", MONOTONIC_USEC=str(time.monotonic_ns() // 1000))


def _watchdog_interval(env: dict[str, str] | os._Environ[str]) -> float | None:
    """Half of WATCHDOG_USEC, as systemd advises; None when the watchdog is off or not ours."""
    usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    if pid.isdigit() and int(pid) != os.getpid():
        return None
    return int(usec) / 2_000_000
