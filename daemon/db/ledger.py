"""The model ledger's queries: what the model has been shown of a store (table model_ledger).

Rows are kept per store and replaced whole (a key's old row is deleted, its new one
inserted, in the caller's transaction), as the stat cache's are: a note shown again with
other bytes, or a group opened again, is one row, not a history. The history is in
model_calls; this table answers one question fast: what is still to show.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select

from daemon.db import schema as t

NOTE = "note"  # key: the note's path; digest: its hash when shown
OPEN = "open"  # key: "g:" + a hash of the group's paths; members: its paths and reasons
_CHUNK = 500


@dataclass(frozen=True)
class LedgerRow:
    key: str
    kind: str
    digest: str
    members: dict[str, Any] | None


def ledger_rows(conn: Connection, store_id: int) -> list[LedgerRow]:
    c = t.model_ledger.c
    rows = conn.execute(select(c.key, c.kind, c.digest, c.members).where(c.store_id == store_id).order_by(c.key)).all()
    return [LedgerRow(*row) for row in rows]


def save_ledger(conn: Connection, store_id: int, pass_id: int | None, now: dt.datetime, rows: Iterable[LedgerRow], gone: Iterable[str] = ()) -> None:
    """Write ``rows`` (replacing each key's old row) and delete the keys in ``gone``."""
    c = t.model_ledger.c
    new = list(rows)
    keys = sorted({*(r.key for r in new), *gone})
    for i in range(0, len(keys), _CHUNK):
        conn.execute(t.model_ledger.delete().where(c.store_id == store_id, c.key.in_(keys[i : i + _CHUNK])))
    values = [{"store_id": store_id, "key": r.key, "kind": r.kind, "digest": r.digest, "members": r.members, "pass_id": pass_id, "at": now} for r in new]
    for i in range(0, len(values), _CHUNK):
        conn.execute(insert(t.model_ledger), values[i : i + _CHUNK])
