"""The stat cache's table: rows per store, replaced and dropped by path, never without their blob."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError

from daemon.core.hashing import hash_bytes
from daemon.db import repo
from daemon.db.migrating import alembic_config
from .helpers import add_store

DATA = b"# a\n"
BLOB = hash_bytes(DATA)
BIG_INODE = (1 << 64) - 5  # 64-bit file systems hand out inode numbers above the signed range


def _row(size: int = 4, ino: int = 7) -> repo.StatRow:
    return (size, 1_700_000_000_000_000_001, ino, 1_700_000_000_000_000_002, BLOB, 1_800_000_000_000_000_000)


def test_rows_come_back_as_saved_with_a_64_bit_inode(engine):
    """Nanosecond times and an inode number above 2**63 round-trip exactly."""
    with engine.begin() as conn:
        store = add_store(conn)
        repo.put_blobs(conn, {BLOB: DATA})
        repo.save_stat_cache(conn, store, {"a.md": _row(ino=BIG_INODE)})
    with engine.connect() as conn:
        assert repo.stat_cache(conn, store) == {"a.md": _row(ino=BIG_INODE)}


def test_saving_replaces_a_paths_row_and_drops_gone_paths_of_that_store_only(engine):
    """A saved path's old row is replaced, a gone path's row removed, and another store's rows stay."""
    with engine.begin() as conn:
        mine, other = add_store(conn, "mine"), add_store(conn, "other")
        repo.put_blobs(conn, {BLOB: DATA})
        repo.save_stat_cache(conn, mine, {"a.md": _row(), "b.md": _row()})
        repo.save_stat_cache(conn, other, {"b.md": _row()})
        repo.save_stat_cache(conn, mine, {"a.md": _row(size=5)}, gone=["b.md"])
    with engine.connect() as conn:
        assert (repo.stat_cache(conn, mine), repo.stat_cache(conn, other)) == ({"a.md": _row(size=5)}, {"b.md": _row()})


def test_a_row_whose_blob_is_not_stored_is_refused(sqlite_engine):
    """The cache can never name a hash whose bytes the database does not hold."""
    with sqlite_engine.connect() as conn:
        store = add_store(conn)
        conn.commit()
        with pytest.raises(IntegrityError):
            repo.save_stat_cache(conn, store, {"a.md": _row()})
            conn.commit()


def test_downgrading_0007_drops_the_table_and_upgrading_brings_it_back_empty(sqlite_engine):
    """0007_stat_cache undoes to 0006 without the table, and an upgraded database starts with no row."""
    with sqlite_engine.connect() as conn:
        command.downgrade(alembic_config(conn), "0006_root_identity")
    with sqlite_engine.connect() as conn:
        assert "stat_cache" not in inspect(conn).get_table_names()
    with sqlite_engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")
    with sqlite_engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM stat_cache").scalar() == 0
