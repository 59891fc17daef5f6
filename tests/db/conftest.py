"""Fixtures for the state-database tests: real SQLite files, and PostgreSQL when asked.

Tests that must hold on every backend take ``backend_url``; its "postgresql" case runs
only when ``DREAMD_TEST_PG_URL`` is set (``pg_url``, in tests/conftest.py: a fresh schema
per test).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from daemon.db.engine import open_engine


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'state.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_url(request: pytest.FixtureRequest) -> str:
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return request.getfixturevalue(name)


@pytest.fixture
def engine(backend_url: str) -> Iterator[Engine]:
    eng = open_engine(backend_url)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_engine(sqlite_url: str) -> Iterator[Engine]:
    eng = open_engine(sqlite_url)
    yield eng
    eng.dispose()
