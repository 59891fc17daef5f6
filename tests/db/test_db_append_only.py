"""events and blobs refuse UPDATE and DELETE in the database itself (invariants 4 and 6)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from daemon.db.schema import blobs, events

from .helpers import NOW, add_store


def _add_event(engine: Engine) -> int:
    with engine.begin() as conn:
        store_id = add_store(conn)
        conn.execute(
            insert(events).values(
                store_id=store_id, seq=1, at=NOW, type="pass.started", actor="human:ana",
                surface="cli", payload={"v": 1},
            )
        )
    return store_id


def _add_blob(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(insert(blobs).values(hash="a" * 64, size=3, data=b"abc"))


def test_event_insert_works(engine):
    _add_event(engine)
    with engine.connect() as conn:
        row = conn.execute(select(events.c.type, events.c.at, events.c.payload)).one()
    assert tuple(row) == ("pass.started", NOW, {"v": 1})


def test_event_update_is_refused(engine):
    _add_event(engine)
    with pytest.raises(IntegrityError, match="append-only"):
        with engine.begin() as conn:
            conn.execute(update(events).values(type="forged"))
    with engine.connect() as conn:
        assert conn.execute(select(events.c.type)).scalar_one() == "pass.started"


def test_event_delete_is_refused(engine):
    _add_event(engine)
    with pytest.raises(IntegrityError, match="append-only"):
        with engine.begin() as conn:
            conn.execute(delete(events))
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(events)).scalar_one() == 1


def test_blob_insert_works(engine):
    _add_blob(engine)
    with engine.connect() as conn:
        assert conn.execute(select(blobs.c.data)).scalar_one() == b"abc"


def test_blob_update_is_refused(engine):
    _add_blob(engine)
    with pytest.raises(IntegrityError, match="never updated or deleted"):
        with engine.begin() as conn:
            conn.execute(update(blobs).values(data=b"xyz"))
    with engine.connect() as conn:
        assert conn.execute(select(blobs.c.data)).scalar_one() == b"abc"


def test_blob_delete_is_refused(engine):
    _add_blob(engine)
    with pytest.raises(IntegrityError, match="never updated or deleted"):
        with engine.begin() as conn:
            conn.execute(delete(blobs))
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(blobs)).scalar_one() == 1
