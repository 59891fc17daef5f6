"""The notify protocol without libsystemd: datagrams on $NOTIFY_SOCKET, watchdog at half."""

from __future__ import annotations

import os
import socket
import uuid

from daemon.scheduler.notify import Notifier


def test_messages_arrive_on_the_socket(notify_socket):
    notifier = Notifier({"NOTIFY_SOCKET": str(notify_socket.path)})
    assert notifier.ready("1 store(s)")
    assert notifier.watchdog()
    assert notifier.stopping("stopping")
    assert notify_socket.drain() == ["READY=1\nSTATUS=1 store(s)", "WATCHDOG=1", "STOPPING=1\nSTATUS=stopping"]


def test_an_abstract_socket_address_is_understood():
    name = f"dreamd-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(1)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).status("hello")
        assert sock.recv(100) == b"STATUS=hello"


def test_outside_systemd_nothing_is_sent():
    assert Notifier({}).ready("x") is False
    assert Notifier({}).watchdog_interval is None


def test_a_vanished_socket_is_not_fatal(tmp_path):
    assert Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")}).watchdog() is False


def test_watchdog_interval_is_half_and_only_for_this_process():
    assert Notifier({"WATCHDOG_USEC": "30000000"}).watchdog_interval == 15.0
    assert Notifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}).watchdog_interval == 15.0
    assert Notifier({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "0"}).watchdog_interval is None


def test_a_listener_that_stopped_reading_does_not_stall_the_sender(tmp_path):
    """A full datagram queue drops the message after a short timeout instead of blocking."""
    path = tmp_path / "full.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        notifier = Notifier({"NOTIFY_SOCKET": str(path)})
        sent = [notifier.watchdog() for _ in range(_queue_length() + 3)]
    assert sent[0] is True and sent[-1] is False


def _queue_length() -> int:
    """How many datagrams a Unix socket queues before a sender blocks (10 by default)."""
    try:
        return int(open("/proc/sys/net/unix/max_dgram_qlen").read())
    except (OSError, ValueError):
        return 10
