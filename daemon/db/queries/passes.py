"""Passes and the model calls they made.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Connection, insert, select, update

from daemon.db import schema as t


def start_pass(conn: Connection, store_id: int, surface: str, actor: str, now: dt.datetime, runner: str | None = None) -> int:
    values = {"store_id": store_id, "status": "running", "surface": surface, "actor": actor, "started_at": now, "runner": runner}
    return int(conn.execute(insert(t.passes).values(**values)).inserted_primary_key[0])


def running_passes(conn: Connection, store_id: int | None = None) -> list[Any]:
    query = select(t.passes).where(t.passes.c.status == "running")
    if store_id is not None:
        query = query.where(t.passes.c.store_id == store_id)
    return list(conn.execute(query.order_by(t.passes.c.id)))


def last_pass(conn: Connection, store_id: int) -> Any:
    """The newest pass that ran or was skipped, whatever became of it."""
    return conn.execute(select(t.passes).where(t.passes.c.store_id == store_id).order_by(t.passes.c.id.desc()).limit(1)).first()


def finish_pass(conn: Connection, store_id: int, pass_id: int, **values: Any) -> None:
    conn.execute(update(t.passes).where(t.passes.c.store_id == store_id, t.passes.c.id == pass_id).values(**values))


def last_completed_pass(conn: Connection, store_id: int) -> Any:
    return conn.execute(
        select(t.passes)
        .where(t.passes.c.store_id == store_id, t.passes.c.status == "completed")
        .order_by(t.passes.c.id.desc())
        .limit(1)
    ).first()


def passes(conn: Connection, store_id: int, limit: int = 50) -> list[Any]:
    return list(
        conn.execute(select(t.passes).where(t.passes.c.store_id == store_id).order_by(t.passes.c.id.desc()).limit(limit))
    )


def add_model_calls(conn: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(insert(t.model_calls), rows)


def model_calls(conn: Connection, store_id: int, pass_id: int | None = None) -> list[Any]:
    query = select(t.model_calls).where(t.model_calls.c.store_id == store_id)
    if pass_id is not None:
        query = query.where(t.model_calls.c.pass_id == pass_id)
    return list(conn.execute(query.order_by(t.model_calls.c.id)))
