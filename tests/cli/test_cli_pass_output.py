"""What a pass prints is what became of its proposals: the states after its policy ran, one
summary line, and a store another run holds is said to be busy with exit 12."""

from __future__ import annotations

import datetime as dt
import re

from daemon.config import load_config
from daemon.db import repo
from daemon.service.context import App


def _hold(db_url, store_name):
    """Another live process holds the store's lease."""
    app = App(config=load_config(None), db_url=db_url)
    with app.engine().begin() as conn:
        now = dt.datetime.now(dt.timezone.utc)
        repo.acquire_lease(conn, repo.find_store(conn, store_name).id, "otherhost:4242", now, dt.timedelta(hours=1))
    app.close()


def test_a_pass_prints_the_states_its_policy_left(example_store, tmp_path, cli, db_url):
    """Under the default policy with apply = "accepted", what the policy applied prints as
    [applied], what it held as [pending], and the summary counts both."""
    config = tmp_path / "config.toml"
    config.write_text(f'[[stores]]\nname = "mem"\npath = "{example_store}"\npreset = "deepcode"\npolicy = "default"\napply = "accepted"\n')
    done = cli("--config", str(config), "--db", db_url, "pass", "mem")
    assert done.code == 0, done.err
    states = re.findall(r"^#\d+ \S+ \[(\w+)\]", done.out, re.MULTILINE)
    assert "applied" in states and "pending" in states
    summary = done.out.strip().splitlines()[-1]
    assert summary == f"mem: pass #1: 11 notes, {states.count('pending')} pending, {states.count('applied')} applied"
    listed = cli("--config", str(config), "--db", db_url, "proposals", "--state", "applied")
    assert len(listed.out.strip().splitlines()) == states.count("applied")


def test_summary_prints_only_the_last_line(example_store, cli, db_url):
    done = cli("--db", db_url, "pass", "--store", str(example_store), "--preset", "deepcode", "--summary")
    assert (done.code, done.out) == (0, f"{example_store}: pass #1: 11 notes, 6 pending\n")


def test_a_busy_store_says_so_and_exits_12(example_store, tmp_path, cli, db_url):
    config = tmp_path / "config.toml"
    config.write_text(f'[[stores]]\nname = "mem"\npath = "{example_store}"\npreset = "deepcode"\n')
    assert cli("--config", str(config), "--db", db_url, "pass", "mem").code == 0
    _hold(db_url, "mem")
    done = cli("--config", str(config), "--db", db_url, "pass", "mem")
    assert done.code == 12 and done.out == ""
    assert done.err.startswith("mem: skipped, ") and "otherhost:4242" in done.err
