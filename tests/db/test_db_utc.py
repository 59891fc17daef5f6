"""The UTC column type: naive datetimes are refused, aware ones come back as UTC."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import sqlite
from sqlalchemy.exc import StatementError

from daemon.db.schema import UTC, stores

from .helpers import add_store

PLUS_TWO = timezone(timedelta(hours=2))


def test_naive_datetime_is_refused():
    with pytest.raises(ValueError, match="naive"):
        UTC.process_bind_param(datetime(2026, 1, 1, 12, 0), sqlite.dialect())


def test_naive_datetime_is_refused_on_insert(sqlite_engine):
    with pytest.raises(StatementError) as info:
        with sqlite_engine.begin() as conn:
            add_store(conn, created_at=datetime(2026, 1, 1, 12, 0))
    assert isinstance(info.value.orig, ValueError)


def test_aware_datetime_round_trips_as_aware_utc(sqlite_engine):
    written = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=PLUS_TWO)
    with sqlite_engine.begin() as conn:
        add_store(conn, created_at=written)
    with sqlite_engine.connect() as conn:
        read = conn.execute(select(stores.c.created_at)).scalar_one()
    assert read == written
    assert read.tzinfo is timezone.utc
    assert read.hour == 10


def test_comparisons_use_utc_whatever_zone_is_passed(sqlite_engine):
    with sqlite_engine.begin() as conn:
        add_store(conn, created_at=datetime(2026, 1, 1, 12, 0, tzinfo=PLUS_TWO))
    with sqlite_engine.connect() as conn:
        later = datetime(2026, 1, 1, 10, 30, tzinfo=timezone.utc)
        assert conn.execute(select(stores.c.id).where(stores.c.created_at < later)).all() != []
