"""Daemons of two hosts sharing one PostgreSQL database never pass over the same store at
once; on one host, a second daemon of that database is refused.

Two hosts are two state directories here (each host keeps its own), on this one machine."""

from __future__ import annotations

from daemon.db import schema as t
from daemon.db.engine import open_engine

from .conftest import wait_for, write_config


def _write_store(make_store, notes: int = 250):
    files = {f"n-{i:03d}.md": f"# N {i}\n\n" + " ".join(f"w{(i * 13 + j) % 700}" for j in range(200)) + "\n" for i in range(notes)}
    return make_store(files, name="shared")


def test_two_daemons_take_turns_on_a_shared_store(pg_url, tmp_path, make_store, start_daemon):
    root = _write_store(make_store)
    engine = open_engine(pg_url)  # migrated once, before the daemons start
    configs = [write_config(tmp_path / f"config-{n}.toml", pg_url, [{"name": "shared", "path": str(root), "preset": "generic", "every": "1s", "jitter": "0s"}]) for n in (1, 2)]
    daemons = [start_daemon(config, env={"XDG_STATE_HOME": str(tmp_path / f"host-{n}")}) for n, config in enumerate(configs, 1)]

    def passes():
        with engine.connect() as conn:
            return list(conn.execute(t.passes.select().order_by(t.passes.c.id)))

    def busy_twice():
        # an edit a moment makes every pass a real one (an unchanged store is skipped in
        # milliseconds, and two daemons a fixed phase apart might then never meet)
        note = root / "n-000.md"
        note.write_text(note.read_text() + "more\n")
        return sum(p.status == "skipped" and "store busy" in (p.error or "") for p in passes()) >= 2

    try:
        wait_for(busy_twice, timeout=120, what="a daemon finding the store busy")
        assert [d.stop() for d in daemons] == [0, 0]
        rows = passes()
    finally:
        engine.dispose()
    runners = {p.runner.rpartition(":")[0] for p in rows}
    assert len(runners) == 1 and len({p.runner for p in rows}) >= 2  # (pooled) workers of both daemons, one host
    worked = sorted((p.started_at, p.finished_at, p.id) for p in rows if p.status == "completed" or (p.status == "skipped" and "store busy" not in (p.error or "")))
    assert worked and all(p.status in ("completed", "skipped") for p in rows)
    busy = [p for p in rows if p.status == "skipped" and "store busy" in (p.error or "")]
    assert all("being written by" in p.error for p in busy)
    # a pass that did the work held the lease throughout: such passes never overlap
    for (_, end, first), (start, _, second) in zip(worked, worked[1:]):
        assert end <= start, f"passes {first} and {second} overlapped"


def test_a_second_daemon_of_the_database_on_one_host_is_refused(pg_url, tmp_path, make_store, start_daemon):
    """With one state directory, a second ``dreamd run`` on the same PostgreSQL database exits
    4 in one line naming the first daemon's pid, and the first goes on."""
    root = make_store({"a.md": "# A\n\nsome words here\n"}, name="one")
    config = write_config(tmp_path / "config.toml", pg_url, [{"name": "one", "path": str(root), "preset": "generic", "every": "1h", "jitter": "0s"}])
    first = start_daemon(config)
    engine = open_engine(pg_url)
    try:
        wait_for(lambda: _completed(engine), timeout=60, what="the first daemon's pass")
    finally:
        engine.dispose()
    second = start_daemon(config)
    assert second.process.wait(30) == 4
    assert second.log().startswith(f"error[daemon-running]: a daemon already runs on this state database: pid {first.process.pid} on host ")
    assert len(second.log().splitlines()) == 1
    assert first.process.poll() is None and first.stop() == 0


def _completed(engine):
    with engine.connect() as conn:
        return [p for p in conn.execute(t.passes.select()) if p.status == "completed"]
