"""The daemon's pass worker: SIGTERM in the middle of applies never leaves a torn store."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from daemon.db import repo
from daemon.db import schema as t
from daemon.db.engine import open_engine

from .conftest import wait_for

POLICY = """
name = "apply-all-exact"
[limits]
max_per_pass = 1000
max_per_day = 1000
[[rules]]
reason = "exact duplicates lose nothing"
decide = "accept"
kind = "merge"
source = "detector:exact-duplicate@*"
lossy = false
"""


def _duplicates_store(make_store, pairs: int):
    files = {}
    for i in range(pairs):
        body = f"# Topic {i}\n\nThe build for component {i} uses flag -O{i % 3} and cache key k{i * 31}.\n"
        files[f"topic-{i:03d}.md"] = body
        files[f"topic-{i:03d}-copy.md"] = body
    return make_store(files, name="dups")


def _states(engine) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(t.proposals.select()).all()
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    return counts


def test_sigterm_during_applies_finishes_the_write_in_progress_and_stops(tmp_path, make_store, cli):
    root = _duplicates_store(make_store, pairs=120)
    (tmp_path / "policy.toml").write_text(POLICY)
    db = f"sqlite:///{tmp_path / 'state.db'}"
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{db}"\n[[stores]]\nname = "dups"\npath = "{root}"\npreset = "generic"\npolicy = "policy.toml"\napply = "accepted"\n')
    command = [sys.executable, "-m", "daemon", "--config", str(config), "worker", "--serve"]
    log = tmp_path / "worker.log"
    with log.open("w") as stderr:  # the daemon hands over its config text with each pass
        worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
    worker.stdin.write(json.dumps({"store": "dups", "config": config.read_text()}) + "\n")
    worker.stdin.flush()
    wait_for(lambda: (tmp_path / "state.db").exists(), what="the database")
    engine = open_engine(db)
    try:
        wait_for(lambda: _states(engine).get("applied", 0) >= 3, timeout=120, what="applies under way")
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 10, log.read_text()[-2000:]
        started, report = map(json.loads, out.strip().splitlines())
        assert started == {"started": "dups"}
        assert report["status"] == "failed" and "error[stopped]" in report["error"] and report["last"] is True
        states = _states(engine)
        assert 3 <= states["applied"] < 120, states  # stopped part-way, between two applies
        assert states["applied"] + states.get("accepted", 0) == 120
        with engine.connect() as conn:
            assert repo.unfinished_journals(conn, 1) == []
            assert conn.execute(t.leases.select()).all() == []
            (pass_row,) = conn.execute(t.passes.select()).all()
        assert pass_row.status == "failed" and "asked to stop" in pass_row.error
    finally:
        engine.dispose()
    verified = cli("--config", str(config), "verify", "dups")
    assert verified.code == 0, verified.out
    _assert_each_proposal_all_or_nothing(db, root)


def _assert_each_proposal_all_or_nothing(db: str, root) -> None:
    """Applied proposals' files hold their results; accepted ones' files are untouched."""
    from daemon.core.hashing import hash_bytes

    engine = open_engine(db)
    try:
        with engine.connect() as conn:
            for row in conn.execute(t.proposals.select()).all():
                files = repo.proposal_files(conn, row.store_id, row.id)
                want = {path: (result if row.state == "applied" else base) for path, (base, result) in files.items()}
                have = {path: hash_bytes((root / path).read_bytes()) if (root / path).exists() else None for path in files}
                assert have == want, (row.id, row.state)
    finally:
        engine.dispose()


def test_sigterm_to_the_daemon_during_applies_exits_0_with_no_torn_proposal(tmp_path, make_store, start_daemon):
    """The same through ``dreamd run``: the daemon forwards the stop to its worker."""
    root = _duplicates_store(make_store, pairs=120)
    (tmp_path / "policy.toml").write_text(POLICY)
    db = f"sqlite:///{tmp_path / 'state.db'}"
    config = tmp_path / "config.toml"
    config.write_text(f'db = "{db}"\n[[stores]]\nname = "dups"\npath = "{root}"\npreset = "generic"\npolicy = "policy.toml"\napply = "accepted"\nevery = "1h"\njitter = "0s"\n')
    daemon = start_daemon(config, "--stop-timeout", "0")
    wait_for(lambda: (tmp_path / "state.db").exists(), what="the database")
    engine = open_engine(db)
    try:
        wait_for(lambda: _states(engine).get("applied", 0) >= 3, timeout=120, what="applies under way")
        assert daemon.stop() == 0
        states = _states(engine)
        with engine.connect() as conn:
            assert repo.unfinished_journals(conn, 1) == []
    finally:
        engine.dispose()
    assert states["applied"] < 120, states
    _assert_each_proposal_all_or_nothing(db, root)
