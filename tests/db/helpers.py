"""Small helpers shared by the state-database tests."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import Connection, insert
from sqlalchemy.engine import make_url

from daemon.db.schema import stores

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)


def add_store(conn: Connection, name: str = "notes", *, created_at: datetime = NOW) -> int:
    result = conn.execute(
        insert(stores).values(name=name, root=f"/srv/{name}", preset="plain", created_at=created_at)
    )
    return result.inserted_primary_key[0]


def sqlite_path(url: str) -> str:
    return make_url(url).database or ""
