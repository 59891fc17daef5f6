"""The no-op lane records a skip only where the whole pass would skip, writes exactly the rows it
writes, and at anything else steps aside having written nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from daemon.config import Config, Notify, StoreConfig, adhoc_store, parse_config
from daemon.policies.load import PolicyError
from daemon.db import quick
from daemon.service.passes import noop
from daemon.service.context import App
from daemon.service.passes.run import run_pass

REPO = Path(__file__).resolve().parents[2]
STORE = {
    "MEMORY.md": "# M\n\n- [Ports](ports.md) — ports\n- [Build](build.md) — build\n",
    "ports.md": "---\nname: Ports\n---\nThe API listens on 8080.\n",
    "build.md": "---\nname: Build\n---\nRun make before pushing.\n",
}
LATER_NS = 60 * 10**9


def _raw(path: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def _settle(db_path: Path) -> None:
    """Make every stat-cache row trusted, as if its scan had run a minute after each file's last change."""
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE stat_cache SET scanned_ns = max(mtime_ns, ctime_ns) + ?", (LATER_NS,))


def _passed(app, store: StoreConfig, db_path: Path) -> None:  # noqa: ANN001
    assert run_pass(app, store).status == "completed"
    _settle(db_path)


def _twin(db_path: Path, twin: Path) -> None:
    """A copy of the database with what its WAL holds (SQLite's backup), in WAL mode as dreamd keeps it."""
    with sqlite3.connect(db_path) as source, sqlite3.connect(twin) as copy:
        source.backup(copy)
        copy.execute("PRAGMA journal_mode=WAL")


def _counts(db_path: Path) -> tuple[int, int]:
    return _raw(db_path, "SELECT (SELECT count(*) FROM passes), (SELECT count(*) FROM events)")[0]


@pytest.fixture
def store(make_store) -> StoreConfig:  # noqa: ANN001
    return adhoc_store(make_store(STORE), "deepcode")


def test_the_lane_writes_the_rows_the_whole_pass_writes_for_a_skip(store, make_app, db_path, tmp_path, clock):
    """Two copies of one database, one skipped by the whole pass, one by the lane: the pass and
    event rows are the same, byte for byte as SQLite stores them (times, JSON, ids)."""
    _passed(make_app(), store, db_path)
    twin = tmp_path / "twin.db"
    _twin(db_path, twin)
    clock.advance(hours=1)
    whole = run_pass(make_app(), store)
    lane = noop.skip_if_unchanged(App(config=Config(), db_url=f"sqlite:///{twin}", clock=clock), store)
    assert whole.status == lane.status == "skipped" and (whole.pass_id, whole.notes, whole.stats) == (lane.pass_id, lane.notes, lane.stats)
    for table in ("passes", "events"):
        assert _raw(twin, f"SELECT * FROM {table} ORDER BY id") == _raw(db_path, f"SELECT * FROM {table} ORDER BY id")


def test_with_a_policy_the_lane_records_what_the_whole_pass_records(store, make_app, db_path, tmp_path, clock):
    """A store with a policy and nothing waiting: the skipped pass's stats carry the policy's
    (empty) outcome in both, under the policy's actor."""
    config = parse_config({"stores": [{"name": "s", "path": str(store.root), "preset": "deepcode", "policy": str(REPO / "policies" / "default.toml")}]})
    configured = config.stores["s"]
    _passed(make_app(config), configured, db_path)
    twin = tmp_path / "twin.db"
    _twin(db_path, twin)
    clock.advance(hours=1)
    whole = run_pass(make_app(config), configured)
    lane = noop.skip_if_unchanged(App(config=config, db_url=f"sqlite:///{twin}", clock=clock), configured)
    assert whole.status == lane.status == "skipped" and whole.stats == lane.stats and lane.stats["policy"]["actor"].startswith("policy:")
    assert _raw(twin, "SELECT * FROM passes ORDER BY id") == _raw(db_path, "SELECT * FROM passes ORDER BY id")


def test_a_broken_policy_fails_the_lane_as_it_fails_the_whole_pass(store, make_app, db_path, tmp_path, clock):
    """A policy file broken after the config was read: the lane steps aside and the whole pass raises."""
    policy = tmp_path / "policy.toml"
    shutil.copy(REPO / "policies" / "default.toml", policy)
    config = parse_config({"stores": [{"name": "s", "path": str(store.root), "preset": "deepcode", "policy": str(policy)}]})
    _passed(make_app(config), config.stores["s"], db_path)
    policy.write_text("[[rules]\n")
    clock.advance(hours=1)
    before = _counts(db_path)
    assert noop.skip_if_unchanged(make_app(config), config.stores["s"]) is None
    assert _counts(db_path) == before
    with pytest.raises(PolicyError):
        noop.pass_over(make_app(config), config.stores["s"])


# What the whole pass would act on, as the statement that makes it so in the database.
IN_THE_DATABASE = {
    "racily clean rows": "UPDATE stat_cache SET scanned_ns = max(mtime_ns, ctime_ns)",  # read in the tick of the last change
    "a pass running or dead": "UPDATE passes SET status = 'running' WHERE id = (SELECT max(id) FROM passes)",
    # even an expired one: the whole pass takes it over, and says so
    "a lease": "INSERT INTO leases VALUES (1, 'elsewhere:1', '2000-01-01 00:00:00.000000', '2000-01-01 00:00:00.000000', '2000-01-01 00:00:00.000000')",
    "a due time passed": "UPDATE passes SET next_due_at = '2025-03-01 12:30:00.000000'",
    "another planner": "UPDATE passes SET planner = 'an older planner'",
    "a replaced folder": "UPDATE stores SET root_identity = '1:2'",
    "an older schema": "UPDATE alembic_version SET version_num = '0008_manifest_deltas'",
}
# What the whole pass would act on in the store itself.
IN_THE_STORE = {
    "an edited note": lambda root: (root / "ports.md").write_text("---\nname: Ports\n---\nThe API listens on 8081.\n"),
    "a new note": lambda root: (root / "new.md").write_text("---\nname: New\n---\nA note written since.\n"),
    "a note gone": lambda root: (root / "build.md").unlink(),
}


def _change(what: str, root: Path, db_path: Path) -> None:
    if what in IN_THE_STORE:
        IN_THE_STORE[what](root)
        return
    with sqlite3.connect(db_path) as conn:
        conn.execute(IN_THE_DATABASE[what])


@pytest.mark.parametrize("what", [*IN_THE_DATABASE, *IN_THE_STORE])
def test_the_lane_steps_aside_and_writes_nothing(what, store, make_app, db_path, clock):
    """Whatever the whole pass would act on (a change, a racily clean file, a running or dead
    pass, a lease, a due time, a new planner, a replaced folder, another schema), the lane
    returns None and the database is as it was."""
    _passed(make_app(), store, db_path)
    _change(what, store.root, db_path)
    clock.advance(hours=1)
    before = _counts(db_path), _raw(db_path, "SELECT * FROM stat_cache ORDER BY path")
    assert noop.skip_if_unchanged(make_app(), store) is None
    assert (_counts(db_path), _raw(db_path, "SELECT * FROM stat_cache ORDER BY path")) == before


def test_proposals_waiting_keep_the_lane_away_only_when_something_looks_at_them(example_store, make_app, db_path, clock):
    """Pending proposals: without a policy or notify command the lane skips; with a notify
    command the whole pass runs (it tells of them again)."""
    store = adhoc_store(example_store, "deepcode")
    _passed(make_app(), store, db_path)
    clock.advance(hours=1)
    assert noop.skip_if_unchanged(make_app(), store).status == "skipped"
    assert noop.skip_if_unchanged(make_app(Config(notify=Notify(command=("true",)))), store) is None


def test_a_change_in_the_database_between_looking_and_recording_is_not_written_over(store, make_app, db_path, clock):
    """record_skip refuses when a lease, a pass or an event came after look: nothing is written."""
    _passed(make_app(), store, db_path)
    conn = quick.connect(f"sqlite:///{db_path}")
    try:
        looked = quick.look(conn, store.name)
        _change("a lease", store.root, db_path)
        before = _counts(db_path)
        assert quick.record_skip(conn, looked, surface="cli", actor="human:t", runner="h:1", now=clock(), root_hash="r", planner="p", stats={}, reason="x") is None
        assert _counts(db_path) == before
    finally:
        conn.close()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///{db}?mode=ro", "postgresql+psycopg://u@127.0.0.1/d", "sqlite:///{missing}"])
def test_only_a_sqlite_file_named_plainly_is_taken_by_the_lane(url, store, make_app, db_path, tmp_path):
    """A server, a memory database, a URL with options, a file that is not there: no connection."""
    _passed(make_app(), store, db_path)
    assert quick.connect(url.format(db=db_path, missing=tmp_path / "none.db")) is None


def test_the_lane_knows_the_schema_the_migrations_end_at():
    """quick.HEAD_REVISION is the newest migration's revision (the lane reads no other schema)."""
    from daemon.db.migrating import alembic_config

    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [quick.HEAD_REVISION]


def test_the_lane_counts_the_proposals_every_pass_calls_open():
    """What the lane counts as waiting is core.proposals.OPEN, which it spells out to stay light."""
    from daemon.core.proposals import OPEN

    assert quick.WAITING == OPEN


def test_a_named_store_is_the_one_resolve_store_finds(store, make_app, db_path):
    """pass_named finds a registered folder by any path to it, with the registered preset."""
    _passed(make_app(), store, db_path)
    found, report = noop.pass_named(make_app(), None, str(store.root / "."), None)
    assert (found.name, found.preset, report.status) == (store.name, "deepcode", "skipped")


def test_a_database_another_writer_holds_is_left_to_the_whole_pass_after_a_second(store, make_app, db_path, clock):
    """Another process holds the write lock: the lane waits about a second for it, not the
    whole pass's five, then steps aside having written nothing (the whole pass waits and says so)."""
    import time

    _passed(make_app(), store, db_path)
    clock.advance(hours=1)
    before = _counts(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        assert noop.skip_if_unchanged(make_app(), store) is None
        assert 0.9 <= time.monotonic() - started < 4
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _counts(db_path) == before


def test_a_dry_run_never_takes_the_lane_and_records_nothing(store, make_app, db_path, clock):
    """On a store the lane would skip, a dry run still writes nothing at all: no skipped pass,
    no event (the lane records one, so a dry run must never go through it)."""
    _passed(make_app(), store, db_path)
    clock.advance(hours=1)
    before = _counts(db_path)
    _, report = noop.pass_named(make_app(), None, str(store.root), None, dry_run=True)
    assert (report.status, report.pass_id) == ("dry-run", None)
    assert _counts(db_path) == before
    assert noop.skip_if_unchanged(make_app(), store).status == "skipped"  # the lane would have taken it


def _steps(conn: sqlite3.Connection, work) -> int:  # noqa: ANN001
    """How many SQLite virtual-machine steps ``work()`` takes (counted, not timed)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        work()
    finally:
        conn.set_progress_handler(None, 1)
    return steps


def test_what_the_lane_asks_of_a_store_costs_the_same_after_thousands_of_passes(store, make_app, db_path, clock):
    """The last completed pass and whether one runs are found by index: after 3,000 more
    skipped passes, the lane's look at the store takes no more steps than after 30."""
    _passed(make_app(), store, db_path)
    conn = quick.connect(f"sqlite:///{db_path}")
    add = "INSERT INTO passes (store_id, status, surface, actor, started_at) SELECT store_id, 'skipped', surface, actor, started_at FROM passes WHERE id = 1"
    try:
        looked = []
        for more in (30, 2970):  # 30 skipped passes, then 3,000
            for _ in range(more):
                conn.execute(add)
            looked.append(_steps(conn, lambda: quick.look(conn, store.name)))
    finally:
        conn.close()
    assert looked[1] <= looked[0] + 50
