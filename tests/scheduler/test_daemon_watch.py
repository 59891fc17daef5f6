"""``dreamd run`` watching its stores, for real: a quiet store's passes are skipped on the
watches' word, and a write the watches did not see (the daemon down, restarting, or its
event queue overflowed) is found by the next pass, never skipped as unchanged."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from .conftest import wait_for, write_config
from .test_daemon import _by_store

WATCHED = '"watched": true'
NEW_NOTE = "A fact written while nobody was looking: the cache lives in /var/cache/app.\n"


def _config(tmp_path: Path, db_url: str, stores: dict[str, Path]) -> Path:
    return write_config(tmp_path / "config.toml", db_url, [{"name": name, "path": str(root), "preset": "deepcode", "every": "1s", "jitter": "0s"} for name, root in stores.items()])


def _db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'state.db'}"


def _watched_skips(daemon, store: str) -> int:  # noqa: ANN001
    return sum(1 for line in daemon.log().splitlines() if '"pass.skipped"' in line and WATCHED in line and f'"store": "{store}"' in line)


def _roots(db_url: str, store: str) -> list[tuple[str, str]]:
    return [(row.status, row.root_hash) for row in _by_store(db_url).get(store, [])]


def _found_after(db_url: str, store: str, seen: int, old_root: str) -> bool:
    """Whether a pass after the first ``seen`` passes recorded the store's new root hash (it looked)."""
    return any(status == "completed" and root != old_root for status, root in _roots(db_url, store)[seen:])


def _skipping(start_daemon, config: Path, store: str = "demo"):  # noqa: ANN001, ANN202
    """A daemon started on ``config``, once it has skipped a pass over ``store`` on the watches' word."""
    daemon = start_daemon(config)
    wait_for(lambda: _watched_skips(daemon, store) >= 1, what="a skip on the watches' word")
    return daemon


def test_a_quiet_store_is_skipped_on_the_watches_word(tmp_path, example_store, start_daemon):
    """Every pass after the first over an unchanged store is skipped without a walk (logged watched)."""
    db_url = _db(tmp_path)
    daemon = start_daemon(_config(tmp_path, db_url, {"demo": example_store}))
    wait_for(lambda: _watched_skips(daemon, "demo") >= 2, what="two skips on the watches' word")
    assert daemon.stop() == 0
    statuses = [status for status, _ in _roots(db_url, "demo")]
    assert statuses[0] == "completed" and set(statuses[1:]) == {"skipped"}


def test_the_daemon_records_a_quiet_stores_skip_itself_without_a_worker(tmp_path, example_store, start_daemon):
    """A skip on the watches' word is the daemon's own (its pid is the pass's runner, no worker
    is started for it and none is named as having run it); the first pass, which has to
    read the store, ran in a worker."""
    import json
    import sqlite3

    db_url = _db(tmp_path)
    daemon = start_daemon(_config(tmp_path, db_url, {"demo": example_store}))
    wait_for(lambda: _watched_skips(daemon, "demo") >= 3, what="three skips on the watches' word")
    assert daemon.stop() == 0
    with sqlite3.connect(tmp_path / "state" / "state.db") as conn:
        runners = conn.execute("SELECT status, runner FROM passes ORDER BY id").fetchall()
    pids = [int(runner.rsplit(":", 1)[1]) for _, runner in runners]
    assert runners[0][0] == "completed" and pids[0] != daemon.process.pid
    skips = [pid for (status, _), pid in zip(runners, pids, strict=True) if status == "skipped"]
    assert len(skips) >= 3 and set(skips) == {daemon.process.pid}
    lines = [json.loads(line) for line in daemon.log().splitlines() if line.startswith("{")]
    assert sum(1 for line in lines if line.get("event") == "pass.started") == 1  # the first pass's worker only
    finished = [line for line in lines if line.get("event") == "pass.finished"]
    assert [line["worker_pid"] is None for line in finished] == [False] + [True] * (len(finished) - 1)


def test_a_note_written_between_passes_is_passed_over(tmp_path, example_store, start_daemon):
    """A note written after skips on the watches' word: the next pass walks the store and records it."""
    db_url = _db(tmp_path)
    daemon = _skipping(start_daemon, _config(tmp_path, db_url, {"demo": example_store}))
    seen = len(_roots(db_url, "demo"))
    (example_store / "cache.md").write_text(NEW_NOTE)
    wait_for(lambda: _found_after(db_url, "demo", seen, _roots(db_url, "demo")[0][1]), what="a pass that found the new note")
    assert daemon.stop() == 0


def test_a_note_written_while_the_daemon_was_down_is_found_by_its_first_pass(tmp_path, example_store, start_daemon):
    """Stopped after skips on the watches' word, a note written, started again: its first pass walks and records it."""
    db_url = _db(tmp_path)
    config = _config(tmp_path, db_url, {"demo": example_store})
    assert _skipping(start_daemon, config).stop() == 0
    seen, old_root = len(_roots(db_url, "demo")), _roots(db_url, "demo")[0][1]
    (example_store / "cache.md").write_text(NEW_NOTE)
    second = start_daemon(config)
    wait_for(lambda: len(_roots(db_url, "demo")) > seen and _roots(db_url, "demo")[seen][0] != "running", what="the restarted daemon's first pass")
    assert _roots(db_url, "demo")[seen][0] == "completed" and _found_after(db_url, "demo", seen, old_root)
    assert second.stop() == 0


def test_a_note_written_during_a_restart_is_found(tmp_path, example_store, start_daemon):
    """A note written after the old daemon was told to stop, while a new one starts: found, not skipped."""
    db_url = _db(tmp_path)
    config = _config(tmp_path, db_url, {"demo": example_store})
    old = _skipping(start_daemon, config)
    old.signal(signal.SIGTERM)
    (example_store / "cache.md").write_text(NEW_NOTE)
    assert old.stop() == 0
    seen, old_root = len(_roots(db_url, "demo")), _roots(db_url, "demo")[0][1]
    new = start_daemon(config)
    wait_for(lambda: _found_after(db_url, "demo", seen, old_root), what="a pass that found the note")
    assert WATCHED not in new.log().split('"pass.completed"')[0]  # nothing was skipped on a word before it
    assert new.stop() == 0


def test_a_note_written_past_the_event_queue_limit_is_found(tmp_path, make_store, start_daemon):
    """While the daemon is stopped (SIGSTOP) one store's churn fills the kernel's event queue
    and a note written to another store is dropped from it: the overflow makes every store's
    next pass walk, and the note is found."""
    busy = make_store({"a.md": "# A\n\nOne fact.\n", "b.md": "# B\n\nAnother fact.\n"}, name="busy")
    calm = make_store({"c.md": "# C\n\nA third fact.\n"}, name="calm")
    db_url = _db(tmp_path)
    daemon = start_daemon(_config(tmp_path, db_url, {"busy": busy, "calm": calm}))
    wait_for(lambda: _watched_skips(daemon, "calm") >= 1 and _watched_skips(daemon, "busy") >= 1, what="skips on the watches' word")
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    daemon.signal(signal.SIGSTOP)
    try:
        files = [busy / "a.md", busy / "b.md"]
        for i in range(limit + 10):  # alternating names: the kernel merges only identical events in a row
            os.utime(files[i % 2], ns=(10**18 + i, 10**18 + i))
        seen, old_root = len(_roots(db_url, "calm")), _roots(db_url, "calm")[0][1]
        (calm / "cache.md").write_text(NEW_NOTE)
    finally:
        daemon.signal(signal.SIGCONT)
    wait_for(lambda: _found_after(db_url, "calm", seen, old_root), what="a pass over the calm store that found the note")
    assert '"watch.overflow"' in daemon.log()
    assert daemon.stop() == 0


def test_without_watches_every_pass_walks(tmp_path, example_store, start_daemon):
    """``run --no-watch``: passes over a quiet store are skipped by the stat walk, never on a watch's word."""
    db_url = _db(tmp_path)
    daemon = start_daemon(_config(tmp_path, db_url, {"demo": example_store}), "--no-watch")
    wait_for(lambda: len(_roots(db_url, "demo")) >= 4, what="four passes")
    assert daemon.stop() == 0
    assert _watched_skips(daemon, "demo") == 0 and '"pass.skipped"' in daemon.log()
