"""Stores: registered by name and root folder, found, renamed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Connection, select, update

from daemon.db import schema as t
from daemon.db.queries.common import insert_if_absent


def ensure_store(conn: Connection, name: str, root: str, preset: str, now: dt.datetime, identity: str | None = None) -> int:
    """The store's id, registering it on first use (two first users at once: one row)."""
    query = select(t.stores.c.id, t.stores.c.root, t.stores.c.preset, t.stores.c.root_identity).where(t.stores.c.name == name)
    row = conn.execute(query).first()
    if row is None:
        values = {"name": name, "root": root, "preset": preset, "created_at": now, "root_identity": identity}
        conn.execute(insert_if_absent(conn, t.stores, ["name"]), values)
        row = conn.execute(query).one()
    if (row.root, row.preset, row.root_identity) != (root, preset, identity or row.root_identity):
        conn.execute(update(t.stores).where(t.stores.c.id == row.id).values(root=root, preset=preset, root_identity=identity or row.root_identity))
    return int(row.id)


def find_store(conn: Connection, name: str) -> Any:
    return conn.execute(select(t.stores).where(t.stores.c.name == name)).first()


def find_store_at(conn: Connection, root: str) -> Any:
    """The store registered for a folder (its resolved absolute path), if any."""
    return conn.execute(select(t.stores).where(t.stores.c.root == root).order_by(t.stores.c.id)).first()


def rename_store(conn: Connection, store_id: int, name: str) -> None:
    conn.execute(update(t.stores).where(t.stores.c.id == store_id).values(name=name))


def store_by_id(conn: Connection, store_id: int) -> Any:
    return conn.execute(select(t.stores).where(t.stores.c.id == store_id)).first()


def all_stores(conn: Connection) -> list[Any]:
    return list(conn.execute(select(t.stores).order_by(t.stores.c.name)))
