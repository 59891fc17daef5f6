"""Statements and helpers the query modules share: prebuilt statements with named
parameters (a statement built per call costs about 80 µs of SQLAlchemy's Python more than the
query) and the insert that lets a concurrent insert of the same key win quietly.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Connection, insert

from daemon.db import schema as t

INSERT = {table: insert(table) for table in (t.manifests, t.manifest_entries, t.manifest_drops, t.snapshots, t.tombstones, t.events, t.journal, t.proposals)}


def insert_if_absent(conn: Connection, table: Any, keys: list[str]) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING (rows given to execute): a concurrent insert of the
    same key, by another store's pass or another host, wins quietly."""
    return _dialect_insert_if_absent(conn.dialect.name, table, tuple(keys))


@functools.lru_cache(maxsize=None)  # one statement per dialect and table: built, keyed and compiled once
def _dialect_insert_if_absent(dialect: str, table: Any, keys: tuple[str, ...]) -> Any:
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    return dialect_insert(table).on_conflict_do_nothing(index_elements=list(keys))
