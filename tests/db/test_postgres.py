"""PostgreSQL-only behaviour. Skipped unless DREAMD_TEST_PG_URL is set (see conftest.py).

The migration and append-only tests run on PostgreSQL too, through the ``backend_url``
fixture; this module holds what only PostgreSQL has.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, select, text
from sqlalchemy.exc import IntegrityError

from daemon.core.errors import StateError
from daemon.db import repo
from daemon.db.engine import open_engine
from daemon.db.schema import events, leases, stores

from .helpers import NOW, add_store


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = open_engine(pg_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("table", ["events", "blobs", "tombstones"])
def test_truncate_is_refused(pg_engine, table):
    # TRUNCATE skips row triggers; a statement trigger refuses it. CASCADE gets past the
    # foreign keys that reference blobs, so the trigger is what refuses.
    with pytest.raises(IntegrityError, match="append-only|never updated or deleted"):
        with pg_engine.begin() as conn:
            conn.exec_driver_sql(f"TRUNCATE {table} CASCADE")


def test_times_come_back_as_utc_whatever_the_session_zone(pg_engine):
    written = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    with pg_engine.begin() as conn:
        add_store(conn, created_at=written)
    with pg_engine.connect() as conn:
        conn.exec_driver_sql("SET TIME ZONE 'America/New_York'")
        read = conn.execute(select(stores.c.created_at)).scalar_one()
    assert read == written
    assert read.utcoffset() == timedelta(0)


def test_an_unmigrated_database_is_a_state_error_on_use(pg_url):
    engine = open_engine(pg_url, migrate=False)
    with pytest.raises(StateError, match="has no dreamd tables"):
        with engine.connect() as conn:
            conn.execute(select(stores.c.id)).all()
    engine.dispose()


def test_an_unreachable_server_is_a_state_error_without_the_password():
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://dreamd:s3cret@127.0.0.1:1/dreamd?connect_timeout=2"
    with pytest.raises(StateError) as info:
        open_engine(url)
    assert "s3cret" not in info.value.one_line()
    assert "127.0.0.1" in info.value.one_line()


def _wait_until_blocked(engine: Engine, pid: int) -> None:
    """Wait until backend ``pid`` waits on a lock another transaction holds."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            waiting = conn.scalar(text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid})
        if waiting == "Lock":
            return
        time.sleep(0.02)
    pytest.fail(f"backend {pid} never waited on a lock")


def _race(engine: Engine, first: Callable[[Connection], Any], second: Callable[[Connection], Any], *, commit: bool = True) -> tuple[Any, Any]:
    """Run ``first`` in an open transaction; run ``second`` in another transaction until it
    waits on ``first``'s locks; then commit (or roll back) ``first``. Returns both results,
    the second being the exception it raised if it raised one."""
    outcome: dict[str, Any] = {}

    def run_second(conn: Connection) -> None:
        try:
            with conn.begin():
                outcome["second"] = second(conn)
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            outcome["second"] = exc

    with engine.connect() as one, engine.connect() as two:
        pid = int(two.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())
        two.rollback()
        tx = one.begin()
        got = first(one)
        thread = threading.Thread(target=run_second, args=(two,))
        thread.start()
        try:
            _wait_until_blocked(engine, pid)
        finally:
            tx.commit() if commit else tx.rollback()
            thread.join(10)
    assert not thread.is_alive()
    return got, outcome["second"]


@pytest.mark.parametrize("first_commits", [True, False], ids=["first-commits", "first-rolls-back"])
def test_two_first_takers_of_a_lease_never_both_hold_it_nor_crash(pg_engine, first_commits):
    """No lease row yet: SELECT ... FOR UPDATE locks nothing, so both takers go on to insert
    it. The second waits for the first; it is then told who holds the store (or takes it,
    when the first gave up), never a duplicate-key error."""
    with pg_engine.begin() as conn:
        store_id = add_store(conn)
    ttl = timedelta(minutes=2)
    first, second = _race(
        pg_engine,
        lambda conn: repo.acquire_lease(conn, store_id, "host-a:1", NOW, ttl),
        lambda conn: repo.acquire_lease(conn, store_id, "host-b:2", NOW, ttl),
        commit=first_commits,
    )
    assert first == (True, None)
    assert second == ((False, "host-a:1") if first_commits else (True, None))
    with pg_engine.connect() as conn:
        holder = conn.scalar(select(leases.c.holder).where(leases.c.store_id == store_id))
    assert holder == ("host-a:1" if first_commits else "host-b:2")


def test_two_transactions_adding_events_to_one_store_both_succeed(pg_engine):
    """A pass refused as busy records its event while the lease holder records its own."""
    with pg_engine.begin() as conn:
        store_id = add_store(conn)

    def add(actor: str) -> Callable[[Connection], int]:
        return lambda conn: repo.add_event(conn, store_id, "pass.skipped", actor, "cli", NOW)

    first, second = _race(pg_engine, add("human:a"), add("human:b"))
    if isinstance(second, Exception):
        raise second
    assert sorted([first, second]) == [1, 2]
    with pg_engine.connect() as conn:
        assert sorted(conn.scalars(select(events.c.seq).where(events.c.store_id == store_id))) == [1, 2]


def test_processes_opening_a_new_database_at_once_migrate_it_once(pg_url):
    """An advisory lock serialises the upgrade: every opener succeeds, the schema is whole."""
    import subprocess
    import sys

    code = "import sys; from daemon.db.engine import open_engine; open_engine(sys.argv[1]).dispose()"
    openers = [subprocess.Popen([sys.executable, "-c", code, pg_url], stderr=subprocess.PIPE, text=True) for _ in range(6)]
    results = [(o.wait(120), o.stderr.read()) for o in openers]
    assert all(status == 0 for status, _ in results), [err[-500:] for status, err in results if status]
    engine = open_engine(pg_url, migrate=False)
    try:
        from daemon.db.migrating import pending_migrations

        assert pending_migrations(engine) == []
    finally:
        engine.dispose()


def test_two_transactions_storing_the_same_blob_both_succeed(pg_engine):
    """Blobs are shared by all stores: passes over two stores holding the same bytes race."""
    first, second = _race(pg_engine, lambda conn: repo.put_blobs(conn, {"h1": b"same"}), lambda conn: repo.put_blobs(conn, {"h1": b"same"}))
    if isinstance(second, Exception):
        raise second
    assert (first, second) == (1, 1)
    with pg_engine.connect() as conn:
        assert repo.get_blobs(conn, ["h1"]) == {"h1": b"same"}
