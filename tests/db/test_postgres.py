"""PostgreSQL-only behaviour. Skipped unless DREAMD_TEST_PG_URL is set (see conftest.py).

The migration and append-only tests run on PostgreSQL too, through the ``backend_url``
fixture; this module holds what only PostgreSQL has.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from daemon.core.errors import StateError
from daemon.db.engine import open_engine
from daemon.db.schema import stores

from .helpers import add_store


@pytest.fixture
def pg_engine(pg_url: str) -> Iterator[Engine]:
    engine = open_engine(pg_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("table", ["events", "blobs"])
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
