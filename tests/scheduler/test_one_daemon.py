"""One daemon per state database: a second ``dreamd run`` on it is refused in one line naming
the first, whose state file (``dreamd status``) it leaves alone; real daemon processes."""

from __future__ import annotations

import json
import os
import signal

import pytest

from .conftest import wait_for, write_config


@pytest.fixture
def config(tmp_path, example_store):
    db = f"sqlite:///{tmp_path / 'state' / 'state.db'}"
    return write_config(tmp_path / "config.toml", db, [{"name": "demo", "path": str(example_store), "preset": "deepcode", "every": "1h", "jitter": "0s"}])


def _status(cli, config):
    done = cli("--config", str(config), "status", "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def _ready(cli, config):
    """The daemon has published its schedule (its state file is written), once its worker has
    migrated the database (a read before that is refused: exit 4)."""
    done = cli("--config", str(config), "status", "--json")
    shown = json.loads(done.out) if done.code == 0 else None
    return shown if shown and shown["daemon"] and shown["stores"][0]["next_run"] else None


def test_a_second_daemon_on_the_same_database_is_refused_in_one_line(config, start_daemon, notify_socket, cli):
    """Exit 4, one line naming the first daemon's pid and host, no READY=1 sent, and the first runs on."""
    first = start_daemon(config)
    wait_for(lambda: _ready(cli, config), what="the first daemon's schedule")
    second = start_daemon(config, notify=notify_socket)
    assert second.process.wait(30) == 4
    line = f"error[daemon-running]: a daemon already runs on this state database: pid {first.process.pid} on host {os.uname().nodename}, since "
    assert second.log().startswith(line) and second.log().endswith(" (stop that one first; one daemon per state database)\n")
    assert len(second.log().splitlines()) == 1
    assert "READY=1" not in notify_socket.lines()
    assert first.process.poll() is None
    assert first.stop() == 0


def test_the_refused_daemon_leaves_the_first_ones_status_alone(config, start_daemon, cli):
    """After a second daemon is refused, ``status`` still shows the first running with its next run."""
    first = start_daemon(config)
    wait_for(lambda: _ready(cli, config), what="the first daemon's schedule")
    assert start_daemon(config).process.wait(30) == 4
    shown = _status(cli, config)
    assert shown["daemon"]["pid"] == first.process.pid and shown["stores"][0]["next_run"]
    assert first.stop() == 0
    assert _status(cli, config)["daemon"] is None


def test_a_daemon_on_another_database_runs_beside_it(tmp_path, config, example_store, make_store, start_daemon, cli):
    """Two databases, one state directory: both daemons run, and each ``status`` names its own."""
    other_db = f"sqlite:///{tmp_path / 'other' / 'state.db'}"
    other = write_config(tmp_path / "other.toml", other_db, [{"name": "else", "path": str(make_store({"a.md": "# A\n\nwords\n"}, name="else")), "preset": "generic", "every": "1h", "jitter": "0s"}])
    first, second = start_daemon(config), start_daemon(other)
    assert wait_for(lambda: _ready(cli, config), what="the first")["daemon"]["pid"] == first.process.pid
    assert wait_for(lambda: _ready(cli, other), what="the second")["daemon"]["pid"] == second.process.pid
    assert [first.stop(), second.stop()] == [0, 0]


def test_a_daemon_killed_outright_leaves_no_lock_behind(config, start_daemon, cli):
    """SIGKILL gives the daemon no time to clean up; the next one on the database starts anyway."""
    first = start_daemon(config)
    wait_for(lambda: _ready(cli, config), what="the first daemon's schedule")
    first.signal(signal.SIGKILL)
    first.process.wait(30)
    second = start_daemon(config)
    assert wait_for(lambda: (_ready(cli, config) or {}).get("daemon", {}).get("pid") == second.process.pid, what="the new daemon's schedule")
    assert second.stop() == 0
