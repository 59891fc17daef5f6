"""open_engine: SQLite made to behave, and failures a user can meet become StateError."""

from __future__ import annotations

import importlib.util
import sqlite3
import stat
import time
from pathlib import Path

import pytest
from sqlalchemy import insert, inspect, select
from sqlalchemy.exc import IntegrityError, OperationalError

from daemon.core.errors import StateError
from daemon.db.engine import READ_ONLY, default_db_url, open_engine
from daemon.db.migrating import pending_migrations
from daemon.db.schema import leases, stores

from .helpers import NOW, add_store, sqlite_path


def test_pragmas_are_in_effect_on_a_new_connection(sqlite_engine):
    sqlite_engine.dispose()  # drop pooled connections: the next one is new
    with sqlite_engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL


def test_foreign_key_violation_is_refused(sqlite_engine):
    with pytest.raises(IntegrityError, match="FOREIGN KEY"):
        with sqlite_engine.begin() as conn:
            conn.execute(
                insert(leases).values(
                    store_id=999, holder="h", acquired_at=NOW, expires_at=NOW, heartbeat_at=NOW
                )
            )


def test_state_directory_is_created_private(tmp_path):
    url = f"sqlite:///{tmp_path / 'a' / 'dreamd' / 'state.db'}"
    open_engine(url).dispose()
    assert stat.S_IMODE((tmp_path / "a" / "dreamd").stat().st_mode) == 0o700


def test_ddl_rolls_back_with_its_transaction(sqlite_engine):
    # The stock sqlite3 driver would have autocommitted the CREATE TABLE.
    with pytest.raises(RuntimeError):
        with sqlite_engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE scratch (x INTEGER)")
            raise RuntimeError
    with sqlite_engine.connect() as conn:
        assert "scratch" not in inspect(conn).get_table_names()


def test_savepoint_rolls_back_inside_the_transaction(sqlite_engine):
    with sqlite_engine.begin() as conn:
        add_store(conn, "kept")
        with pytest.raises(RuntimeError), conn.begin_nested():
            add_store(conn, "dropped")
            raise RuntimeError
    with sqlite_engine.connect() as conn:
        assert conn.execute(select(stores.c.name)).scalars().all() == ["kept"]


def test_a_transaction_takes_the_write_lock_when_it_begins(sqlite_url, sqlite_engine):
    with sqlite_engine.connect() as conn, conn.begin():
        other = sqlite3.connect(sqlite_path(sqlite_url), timeout=0, isolation_level=None)
        try:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        finally:
            other.close()


@pytest.fixture
def locked(sqlite_url):
    """The database at sqlite_url, migrated, with another process's writer holding the lock."""
    open_engine(sqlite_url).dispose()
    other = sqlite3.connect(sqlite_path(sqlite_url), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    yield sqlite_url
    other.rollback()
    other.close()


def test_write_to_a_locked_database_is_a_state_error(locked):
    engine = open_engine(locked, migrate=False, busy_timeout_ms=100)
    started = time.monotonic()
    with pytest.raises(StateError, match="is locked by another process") as info:
        with engine.begin() as conn:
            add_store(conn)
    assert time.monotonic() - started < 3
    assert "stop the other dreamd" in info.value.one_line()
    engine.dispose()


def test_readers_are_not_blocked_by_a_writer(locked):
    engine = open_engine(locked, migrate=False, busy_timeout_ms=100)
    with engine.execution_options(**READ_ONLY).connect() as conn:
        assert conn.execute(select(stores.c.id)).all() == []
    engine.dispose()


def test_opening_an_up_to_date_database_does_not_wait_for_the_writer(locked):
    open_engine(locked, busy_timeout_ms=100).dispose()


def test_migrating_a_locked_database_is_a_state_error(sqlite_url):
    path = sqlite_path(sqlite_url)
    Path(path).parent.mkdir()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StateError, match="locked"):
            open_engine(sqlite_url, busy_timeout_ms=100)
    finally:
        other.close()


def test_a_directory_is_a_state_error(tmp_path):
    with pytest.raises(StateError, match="cannot be opened"):
        open_engine(f"sqlite:///{tmp_path}")


def test_a_file_of_garbage_is_a_state_error(tmp_path):
    path = tmp_path / "state.db"
    path.write_bytes(bytes(range(256)) * 16)
    with pytest.raises(StateError, match="is not an SQLite database"):
        open_engine(f"sqlite:///{path}")


def test_a_parent_that_is_a_file_is_a_state_error_naming_the_file(tmp_path):
    """A URL given whose folder is a file: the error names that file and advises another URL, not the state directory's variables."""
    (tmp_path / "file").write_text("x")
    with pytest.raises(StateError, match="cannot create .*/file, the folder of the state database given: .*/file is a file, not a folder") as refused:
        open_engine(f"sqlite:///{tmp_path / 'file' / 'state.db'}")
    assert refused.value.hint == "give --db (or DREAMD_DB, or the config's db) a file in a folder you can write"


def test_a_state_directory_that_cannot_be_made_advises_its_variables(tmp_path, monkeypatch):
    """The default database's folder under a file: the advice is STATE_DIRECTORY or XDG_STATE_HOME."""
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "file" / "dreamd"))
    with pytest.raises(StateError, match="cannot create the state directory .*: .*/file is a file, not a folder") as refused:
        open_engine(default_db_url())
    assert refused.value.hint == "check permissions, or set STATE_DIRECTORY or XDG_STATE_HOME"


@pytest.mark.parametrize("url", ["not a url", "nosuchdb://x", "postgresql://u:pw@host:port/db"])
def test_a_bad_url_is_a_state_error(url):
    with pytest.raises(StateError, match="URL is not valid"):
        open_engine(url)


def test_a_missing_driver_is_a_state_error():
    if importlib.util.find_spec("pg8000") is not None:  # not a dependency of dreamd
        pytest.skip("pg8000 is installed")
    with pytest.raises(StateError, match="driver that is not installed") as info:
        open_engine("postgresql+pg8000://u:pw@localhost/db")
    assert "dreamd[postgres]" in info.value.one_line()


def test_a_database_from_a_newer_dreamd_is_a_state_error(sqlite_url):
    open_engine(sqlite_url).dispose()
    with sqlite3.connect(sqlite_path(sqlite_url)) as raw:
        raw.execute("UPDATE alembic_version SET version_num = '0999_future'")
    raw.close()
    with pytest.raises(StateError, match="newer dreamd.*0999_future"):
        open_engine(sqlite_url)
    engine = open_engine(sqlite_url, migrate=False)
    with pytest.raises(StateError, match="newer dreamd"):
        pending_migrations(engine)
    engine.dispose()


def test_an_unmigrated_database_is_a_state_error_on_use(sqlite_url):
    engine = open_engine(sqlite_url, migrate=False)
    with pytest.raises(StateError, match="has no dreamd tables"):
        with engine.connect() as conn:
            conn.execute(select(stores.c.id)).all()
    engine.dispose()


def test_a_mistake_in_sql_stays_a_traceback(sqlite_engine):
    with pytest.raises(OperationalError, match="syntax error"):
        with sqlite_engine.connect() as conn:
            conn.exec_driver_sql("SELEC 1")


def test_in_memory_database_is_shared_between_connections():
    engine = open_engine("sqlite://")
    with engine.begin() as conn:
        add_store(conn)
    with engine.connect() as conn:
        assert conn.execute(select(stores.c.name)).scalar_one() == "notes"
    engine.dispose()


def test_default_url_prefers_systemd_state_directory(monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/dreamd:/var/lib/other")
    monkeypatch.setenv("XDG_STATE_HOME", "/xdg")
    assert default_db_url() == "sqlite:////var/lib/dreamd/state.db"


def test_default_url_then_xdg_state_home(monkeypatch):
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "/xdg")
    assert default_db_url() == "sqlite:////xdg/dreamd/state.db"


@pytest.mark.parametrize("xdg", [None, "", "relative/path"])
def test_default_url_falls_back_to_home(monkeypatch, tmp_path, xdg):
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_db_url() == f"sqlite:///{Path(tmp_path) / '.local/state/dreamd/state.db'}"
