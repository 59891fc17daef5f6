"""What happened and who holds a store: the append-only events, the journal of writes,
and the leases that keep one writer per store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, bindparam, func, insert, select, update

from daemon.db import schema as t
from daemon.db.queries.common import INSERT

_LOCK_STORE = select(t.stores.c.id).where(t.stores.c.id == bindparam("store_id")).with_for_update()

_NEWEST_EVENT = select(func.coalesce(func.max(t.events.c.seq), 0)).where(t.events.c.store_id == bindparam("store_id"))

_CLOSE_JOURNAL = (
    update(t.journal)
    .where(t.journal.c.store_id == bindparam("in_store"), t.journal.c.id == bindparam("journal_id"))
    .values(state=bindparam("new_state"), finished_at=bindparam("now"))
)


def add_event(conn: Connection, store_id: int, type_: str, actor: str, surface: str, now: dt.datetime, payload: Mapping[str, Any] | None = None, *, pass_id: int | None = None, proposal_id: int | None = None) -> int:
    """Append one event with the store's next sequence number."""
    return Events(conn, store_id).add(type_, actor, surface, now, payload, pass_id=pass_id, proposal_id=proposal_id)


class Events:
    """A store's events appended within one transaction, numbered on from its newest.

    The store's row is locked first (PostgreSQL; SQLite's BEGIN IMMEDIATE already lets one
    writer in), so two transactions never compute the same number; the lock lasts to the
    end of the transaction, so the newest number is read once for all the events it adds.
    Every event of the transaction must then come through this one object.
    """

    def __init__(self, conn: Connection, store_id: int) -> None:
        conn.execute(_LOCK_STORE, {"store_id": store_id})
        self.conn, self.store_id = conn, store_id
        self.seq = int(conn.scalar(_NEWEST_EVENT, {"store_id": store_id}) or 0)

    def add(self, type_: str, actor: str, surface: str, now: dt.datetime, payload: Mapping[str, Any] | None = None, *, pass_id: int | None = None, proposal_id: int | None = None) -> int:
        self.seq += 1
        values = {
            "store_id": self.store_id, "seq": self.seq, "at": now, "type": type_, "actor": actor, "surface": surface,
            "pass_id": pass_id, "proposal_id": proposal_id, "payload": {"v": 1, **(payload or {})},
        }  # fmt: skip
        self.conn.execute(INSERT[t.events], values)
        return self.seq


def events(conn: Connection, store_id: int, limit: int = 100) -> list[Any]:
    return list(
        conn.execute(
            select(t.events).where(t.events.c.store_id == store_id).order_by(t.events.c.seq.desc()).limit(limit)
        )
    )[::-1]


DISPLACED = "file.displaced"


def displaced(conn: Connection, store_id: int, journal_id: int) -> dict[str, str]:
    """Bytes a journal's writes displaced that were not what it expected (path -> blob hash,
    the latest per path): someone's edit that raced the write, kept for resolve."""
    rows = conn.execute(
        select(t.events.c.payload).where(t.events.c.store_id == store_id, t.events.c.type == DISPLACED).order_by(t.events.c.seq)
    )
    return {row.payload["path"]: row.payload["hash"] for row in rows if row.payload.get("journal") == journal_id}


def failed_journals(conn: Connection, store_id: int) -> dict[int, str]:
    """Journals whose writes failed and were left in conflict (journal id -> the error), from
    their ``journal.failed`` events."""
    rows = conn.execute(select(t.events.c.payload).where(t.events.c.store_id == store_id, t.events.c.type == "journal.failed").order_by(t.events.c.seq))
    return {row.payload["journal"]: row.payload["error"] for row in rows}


def open_journal(conn: Connection, store_id: int, proposal_id: int, operation: str, steps: list[dict[str, Any]], now: dt.datetime, folders: list[str] | None = None) -> int:
    """A journal in state writing; ``folders``: those its writes will create."""
    payload = {"v": 1, "files": steps, **({"folders": folders} if folders else {})}
    values = {"store_id": store_id, "proposal_id": proposal_id, "operation": operation, "state": "writing", "steps": payload, "created_at": now}
    return int(conn.execute(INSERT[t.journal], values).inserted_primary_key[0])


def close_journal(conn: Connection, store_id: int, journal_id: int, state: str, now: dt.datetime) -> None:
    conn.execute(_CLOSE_JOURNAL, {"in_store": store_id, "journal_id": journal_id, "new_state": state, "now": now})


def finished_steps(conn: Connection, store_id: int, proposal_id: int | None = None, operation: str | None = None, *, after_journal: int | None = None) -> list[list[dict[str, Any]]]:
    """File steps of completed journals (newest first): what dreamd actually wrote; with
    ``after_journal``, only of journals opened after that one."""
    query = select(t.journal.c.steps).where(t.journal.c.store_id == store_id, t.journal.c.state == "done")
    if after_journal is not None:
        query = query.where(t.journal.c.id > after_journal)
    if proposal_id is not None:
        query = query.where(t.journal.c.proposal_id == proposal_id)
    if operation is not None:
        query = query.where(t.journal.c.operation == operation)
    return [row["files"] for row in conn.scalars(query.order_by(t.journal.c.id.desc()))]


def finished_applies(conn: Connection, store_id: int) -> list[tuple[int, dict[str, tuple[str | None, str | None]]]]:
    """Completed apply journals, oldest first: (proposal id, path -> (hash before, hash it wrote))."""
    query = select(t.journal.c.proposal_id, t.journal.c.steps).where(t.journal.c.store_id == store_id, t.journal.c.state == "done", t.journal.c.operation == "apply")
    return [(row.proposal_id, {step["path"]: (step["before"], step["after"]) for step in row.steps["files"]}) for row in conn.execute(query.order_by(t.journal.c.id))]


def journal_writes(conn: Connection, store_id: int) -> list[tuple[int, list[dict[str, Any]]]]:
    """(proposal, file steps) of every completed journal of the store, newest first."""
    query = select(t.journal.c.proposal_id, t.journal.c.steps).where(t.journal.c.store_id == store_id, t.journal.c.state == "done")
    return [(row.proposal_id, row.steps["files"]) for row in conn.execute(query.order_by(t.journal.c.id.desc()))]


def made_folders(conn: Connection, store_id: int, states: tuple[str, ...]) -> list[str]:
    """The folders the completed applies of the store's proposals now in ``states`` created."""
    query = (
        select(t.journal.c.steps)
        .join(t.proposals, t.proposals.c.id == t.journal.c.proposal_id)
        .where(t.journal.c.store_id == store_id, t.journal.c.operation == "apply", t.journal.c.state == "done", t.proposals.c.state.in_(states))
    )
    return [folder for steps in conn.scalars(query) for folder in steps.get("folders", ())]


def unfinished_journals(conn: Connection, store_id: int, states: tuple[str, ...] = ("writing",)) -> list[Any]:
    return list(
        conn.execute(
            select(t.journal)
            .where(t.journal.c.store_id == store_id, t.journal.c.state.in_(states))
            .order_by(t.journal.c.id)
        )
    )


def acquire_lease(conn: Connection, store_id: int, holder: str, now: dt.datetime, ttl: dt.timedelta, *, is_dead: Any = None) -> tuple[bool, str | None]:
    """Take the store's lease. Returns (newly taken, holder now blocking us or None).

    The lease is free when absent, expired, held by ``holder`` already (then it is not
    newly taken), or held by a holder ``is_dead(holder)`` says is gone.
    """
    values = {"holder": holder, "acquired_at": now, "expires_at": now + ttl, "heartbeat_at": now}
    for _ in range(3):
        row = conn.execute(select(t.leases).where(t.leases.c.store_id == store_id).with_for_update()).first()
        if row is None:
            if conn.dialect.name != "postgresql":  # SQLite: BEGIN IMMEDIATE let only us in
                conn.execute(insert(t.leases).values(store_id=store_id, **values))
                return True, None
            # FOR UPDATE found no row to lock, so another taker may be inserting it now: our
            # insert then waits for it and does nothing, and its row is judged below.
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            new = pg_insert(t.leases).values(store_id=store_id, **values).on_conflict_do_nothing(index_elements=[t.leases.c.store_id])
            if conn.execute(new.returning(t.leases.c.store_id)).first() is not None:
                return True, None
            continue
        if row.holder == holder:
            return False, None
        if row.expires_at > now and not (is_dead and is_dead(row.holder)):
            return False, row.holder
        conn.execute(update(t.leases).where(t.leases.c.store_id == store_id).values(**values))
        return True, None
    return False, "another process"  # taken and freed again under us each time: busy, retry


def renew_lease(conn: Connection, store_id: int, holder: str, now: dt.datetime, ttl: dt.timedelta) -> bool:
    """Push the expiry of a lease ``holder`` still holds; False when it lost it meanwhile."""
    result = conn.execute(
        update(t.leases).where(t.leases.c.store_id == store_id, t.leases.c.holder == holder).values(expires_at=now + ttl, heartbeat_at=now)
    )
    return result.rowcount == 1


def release_lease(conn: Connection, store_id: int, holder: str) -> None:
    conn.execute(t.leases.delete().where(t.leases.c.store_id == store_id, t.leases.c.holder == holder))


def journal_store(conn: Connection, journal_id: int) -> int | None:
    """The store a journal belongs to (like proposal_store, the one lookup by id alone)."""
    return conn.scalar(select(t.journal.c.store_id).where(t.journal.c.id == journal_id))


def journal_entry(conn: Connection, store_id: int, journal_id: int) -> Any:
    return conn.execute(select(t.journal).where(t.journal.c.store_id == store_id, t.journal.c.id == journal_id)).first()
