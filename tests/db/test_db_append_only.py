"""events, blobs and tombstones refuse UPDATE and DELETE in the database itself (invariants 4, 6 and 7)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from daemon.db.schema import blobs, events, tombstones

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


def _add_tombstone(engine: Engine) -> None:
    with engine.begin() as conn:
        store_id = add_store(conn)
        conn.execute(insert(tombstones).values(store_id=store_id, key_kind="change", key="c" * 64, reason="keep both", created_at=NOW))


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


def test_insert_or_replace_cannot_rewrite_an_event(engine):
    """A REPLACE of an existing event (SQLite's INSERT OR REPLACE, PostgreSQL's ON CONFLICT DO UPDATE) is refused; the event keeps its actor."""
    _add_event(engine)
    with engine.connect() as conn:
        event_id = conn.execute(select(events.c.id)).scalar_one()
    if engine.dialect.name == "sqlite":
        forge = "INSERT OR REPLACE INTO events (id, store_id, seq, at, type, actor, surface, payload) SELECT id, store_id, seq, at, type, 'human:forged', surface, payload FROM events WHERE id = ?"
        args = (event_id,)
    else:
        forge = "INSERT INTO events (id, store_id, seq, at, type, actor, surface, payload) SELECT id, store_id, seq, at, type, 'human:forged', surface, payload FROM events WHERE id = %s ON CONFLICT (id) DO UPDATE SET actor = EXCLUDED.actor"
        args = (event_id,)
    with pytest.raises(IntegrityError, match="append-only"):
        with engine.begin() as conn:
            conn.exec_driver_sql(forge, args)
    with engine.connect() as conn:
        assert conn.execute(select(events.c.actor)).scalar_one() == "human:ana"


def test_insert_or_replace_cannot_swap_a_blob(engine):
    """A REPLACE of an existing blob leaves its bytes as they were; inserting a new blob still works."""
    _add_blob(engine)
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            conn.exec_driver_sql("INSERT OR REPLACE INTO blobs (hash, size, data) VALUES (?, 3, ?)", ("a" * 64, b"xyz"))
    else:
        with pytest.raises(IntegrityError):
            with engine.begin() as conn:
                conn.exec_driver_sql("INSERT INTO blobs (hash, size, data) VALUES (%s, 3, %s) ON CONFLICT (hash) DO UPDATE SET data = EXCLUDED.data", ("a" * 64, b"xyz"))
    with engine.begin() as conn:
        conn.execute(insert(blobs).values(hash="b" * 64, size=3, data=b"def"))
    with engine.connect() as conn:
        assert dict(conn.execute(select(blobs.c.hash, blobs.c.data)).all()) == {"a" * 64: b"abc", "b" * 64: b"def"}


@pytest.mark.parametrize("change", [update(tombstones).values(key="d" * 64), delete(tombstones)], ids=["update", "delete"])
def test_a_tombstone_cannot_be_updated_or_deleted(engine, change):
    """Rewriting or deleting a rejection's tombstone (which would let the rejected change back) is
    refused: a rejection is taken back by ``unreject``, which appends a lift."""
    _add_tombstone(engine)
    with pytest.raises(IntegrityError, match="tombstones are append-only"):
        with engine.begin() as conn:
            conn.execute(change)
    with engine.connect() as conn:
        assert conn.execute(select(tombstones.c.key, tombstones.c.lifted)).all() == [("c" * 64, False)]


def test_insert_or_replace_cannot_rewrite_a_tombstone(engine):
    """A REPLACE of an existing tombstone (SQLite's INSERT OR REPLACE, PostgreSQL's ON CONFLICT DO UPDATE) is refused."""
    _add_tombstone(engine)
    if engine.dialect.name == "sqlite":
        forge = "INSERT OR REPLACE INTO tombstones (id, store_id, key_kind, key, lifted, created_at) SELECT id, store_id, key_kind, key, 1, created_at FROM tombstones"
    else:
        forge = "INSERT INTO tombstones (id, store_id, key_kind, key, lifted, created_at) SELECT id, store_id, key_kind, key, true, created_at FROM tombstones ON CONFLICT (id) DO UPDATE SET lifted = EXCLUDED.lifted"
    with pytest.raises(IntegrityError, match="tombstones are append-only"):
        with engine.begin() as conn:
            conn.exec_driver_sql(forge)
    with engine.connect() as conn:
        assert conn.execute(select(tombstones.c.lifted)).all() == [(False,)]
