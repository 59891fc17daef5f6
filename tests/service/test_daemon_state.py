"""The name of a state database a daemon holds: one key per database, however its URL is written."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.core.errors import DaemonRunningError
from daemon.service.daemon_state import DatabaseHold, database_key

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def test_a_sqlite_url_is_keyed_by_the_file_it_opens(tmp_path, monkeypatch):
    """A relative path and the absolute one of the same file are one database."""
    monkeypatch.chdir(tmp_path)
    assert database_key("sqlite:///state.db") == database_key(f"sqlite:///{tmp_path / 'state.db'}")
    assert database_key("sqlite:///state.db") != database_key("sqlite:///other.db")


def test_a_server_url_is_keyed_without_its_password_or_driver():
    """Another password, or psycopg named as the driver, is still the same PostgreSQL database."""
    plain = database_key("postgresql://dreamd:one@db.example:5432/dreamd")
    assert database_key("postgresql+psycopg://dreamd:two@db.example:5432/dreamd") == plain
    assert database_key("postgresql://dreamd:one@db.example:5432/other") != plain
    assert database_key("postgresql://dreamd:one@db.example:5432/dreamd?options=-csearch_path%3Da") != plain


def test_a_hold_refuses_a_second_hold_of_the_database_until_it_ends(db_url):
    """In one process as across processes: the second hold names the first, and once the first
    ends the database can be held again."""
    with DatabaseHold(db_url, NOW):
        with pytest.raises(DaemonRunningError, match="pid [0-9]+ on host .*, since 2026-01-01T00:00:00"):
            DatabaseHold(db_url, NOW).__enter__()
    with DatabaseHold(db_url, NOW):
        pass
