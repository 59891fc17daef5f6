"""Fixtures for the state-database tests: real SQLite files, and PostgreSQL when asked.

Tests that must hold on every backend take ``backend_url``; its "postgresql" case runs
only when ``DREAMD_TEST_PG_URL`` names a database the tests may create schemas in, e.g.
``postgresql+psycopg://dreamd@/dreamd_test?host=/run/postgresql``. Each test gets a
fresh schema there (via ``search_path``), dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine

from daemon.db.engine import open_engine

PG_ENV = "DREAMD_TEST_PG_URL"


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'state.db'}"


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[Engine]:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"set {PG_ENV} to run the PostgreSQL tests")
    pytest.importorskip("psycopg")
    admin = create_engine(url)
    yield admin
    admin.dispose()


@pytest.fixture
def pg_url(pg_admin: Engine) -> Iterator[str]:
    schema = f"dreamd_test_{uuid.uuid4().hex[:12]}"
    with pg_admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = pg_admin.url.update_query_dict({"options": f"-csearch_path={schema}"})
    yield url.render_as_string(hide_password=False)
    with pg_admin.begin() as conn:
        conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")


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
