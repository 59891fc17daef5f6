"""Proposals, their files, states and decisions, and tombstones (append-only: taking one
back appends a lift, never a delete).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, bindparam, false, func, insert, select, update

from daemon.core.proposals import OPEN
from daemon.db import schema as t
from daemon.db.queries.common import INSERT

_PROPOSAL = select(t.proposals).where(t.proposals.c.store_id == bindparam("store_id"), t.proposals.c.id == bindparam("proposal_id"))

_FILES_OF = (
    select(t.proposal_files)
    .join(t.proposals, t.proposals.c.id == t.proposal_files.c.proposal_id)
    .where(t.proposals.c.store_id == bindparam("store_id"), t.proposal_files.c.proposal_id.in_(bindparam("ids", expanding=True)))
    .order_by(t.proposal_files.c.proposal_id, t.proposal_files.c.path)
)

_SET_STATE = (
    update(t.proposals)
    .where(t.proposals.c.store_id == bindparam("in_store"), t.proposals.c.id == bindparam("proposal_id"))
    .values(state=bindparam("new_state"), state_reason=bindparam("reason"), updated_at=bindparam("now"))
)

_TOMBSTONE_LIFTED = (
    select(t.tombstones.c.lifted)
    .where(t.tombstones.c.store_id == bindparam("store_id"), t.tombstones.c.key_kind == bindparam("kind"), t.tombstones.c.key == bindparam("tomb_key"))
    .order_by(t.tombstones.c.id.desc())
    .limit(1)
)

_NEWER_TOMBSTONE = t.tombstones.alias("newer")

# A tombstone row in effect: not a lift, and no newer row (a lift) for its key.
_IN_EFFECT = (t.tombstones.c.lifted == false()) & ~(
    select(_NEWER_TOMBSTONE.c.id)
    .where(
        _NEWER_TOMBSTONE.c.store_id == t.tombstones.c.store_id,
        _NEWER_TOMBSTONE.c.key_kind == t.tombstones.c.key_kind,
        _NEWER_TOMBSTONE.c.key == t.tombstones.c.key,
        _NEWER_TOMBSTONE.c.id > t.tombstones.c.id,
    )
    .exists()
)


def add_proposal(conn: Connection, store_id: int, values: Mapping[str, Any], files: Mapping[str, tuple[str | None, str | None]]) -> int:
    proposal_id = insert_proposal(conn, store_id, values)
    add_proposal_files(conn, proposal_file_rows(proposal_id, files))
    return proposal_id


def insert_proposal(conn: Connection, store_id: int, values: Mapping[str, Any]) -> int:
    """A proposal's row alone; its files follow (``add_proposal_files``), in the same transaction."""
    return int(conn.execute(INSERT[t.proposals], {"store_id": store_id, **values}).inserted_primary_key[0])


def proposal_file_rows(proposal_id: int, files: Mapping[str, tuple[str | None, str | None]]) -> list[dict[str, Any]]:
    return [{"proposal_id": proposal_id, "path": p, "base_hash": b, "result_hash": r} for p, (b, r) in files.items()]


def add_proposal_files(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """The files of one or many proposals, in one statement."""
    if rows:
        conn.execute(insert(t.proposal_files), rows)


def proposal_store(conn: Connection, proposal_id: int) -> int | None:
    return conn.scalar(select(t.proposals.c.store_id).where(t.proposals.c.id == proposal_id))


def get_proposal(conn: Connection, store_id: int, proposal_id: int) -> Any:
    return conn.execute(_PROPOSAL, {"store_id": store_id, "proposal_id": proposal_id}).first()


def proposal_files(conn: Connection, store_id: int, proposal_id: int) -> dict[str, tuple[str | None, str | None]]:
    return files_of(conn, store_id, [proposal_id]).get(proposal_id, {})


def files_of(conn: Connection, store_id: int, proposal_ids: list[int]) -> dict[int, dict[str, tuple[str | None, str | None]]]:
    """Files of many proposals in one query per 500 ids (listing stays one round trip)."""
    found: dict[int, dict[str, tuple[str | None, str | None]]] = {}
    for i in range(0, len(proposal_ids), 500):
        rows = conn.execute(_FILES_OF, {"store_id": store_id, "ids": proposal_ids[i : i + 500]})
        for r in rows:
            found.setdefault(r.proposal_id, {})[r.path] = (r.base_hash, r.result_hash)
    return found


def list_proposals(conn: Connection, store_id: int, states: Iterable[str] | None = None) -> list[Any]:
    query = select(t.proposals).where(t.proposals.c.store_id == store_id)
    if states:
        query = query.where(t.proposals.c.state.in_(list(states)))
    return list(conn.execute(query.order_by(t.proposals.c.id)))


def states_of(conn: Connection, store_id: int, proposal_ids: list[int]) -> dict[int, tuple[str, str | None]]:
    """Each proposal's state and state reason now (ids in chunks, one query each)."""
    found: dict[int, tuple[str, str | None]] = {}
    for i in range(0, len(proposal_ids), 500):
        query = select(t.proposals.c.id, t.proposals.c.state, t.proposals.c.state_reason).where(
            t.proposals.c.store_id == store_id, t.proposals.c.id.in_(proposal_ids[i : i + 500])
        )
        found.update({row.id: (row.state, row.state_reason) for row in conn.execute(query)})
    return found


def open_proposals_with_keys(conn: Connection, store_id: int, keys: list[str]) -> dict[str, int]:
    """Change key -> a proposal of it still open (pending or accepted), for the keys that have one."""
    found: dict[str, int] = {}
    for i in range(0, len(keys), 500):
        query = select(t.proposals.c.change_key, t.proposals.c.id).where(
            t.proposals.c.store_id == store_id, t.proposals.c.change_key.in_(keys[i : i + 500]), t.proposals.c.state.in_(OPEN)
        )
        for row in conn.execute(query.order_by(t.proposals.c.id)):
            found.setdefault(row.change_key, row.id)
    return found


def latest_with_keys(conn: Connection, store_id: int, keys: list[str], state: str) -> dict[str, Any]:
    """Change key -> its newest proposal in ``state``, for the keys that have one."""
    found: dict[str, Any] = {}
    for i in range(0, len(keys), 500):
        query = select(t.proposals).where(t.proposals.c.store_id == store_id, t.proposals.c.change_key.in_(keys[i : i + 500]), t.proposals.c.state == state)
        found.update({row.change_key: row for row in conn.execute(query.order_by(t.proposals.c.id))})  # the newest last
    return found


def set_state(conn: Connection, store_id: int, proposal_id: int, state: str, now: dt.datetime, reason: str | None = None) -> None:
    conn.execute(_SET_STATE, {"in_store": store_id, "proposal_id": proposal_id, "new_state": state, "reason": reason, "now": now})


def add_decision(conn: Connection, store_id: int, proposal_id: int, **values: Any) -> None:
    conn.execute(insert(t.decisions).values(store_id=store_id, proposal_id=proposal_id, **values))


def decisions_of(conn: Connection, store_id: int, proposal_ids: list[int]) -> dict[int, list[Any]]:
    found: dict[int, list[Any]] = {}
    for i in range(0, len(proposal_ids), 500):
        rows = conn.execute(
            select(t.decisions)
            .where(t.decisions.c.store_id == store_id, t.decisions.c.proposal_id.in_(proposal_ids[i : i + 500]))
            .order_by(t.decisions.c.id)
        )
        for r in rows:
            found.setdefault(r.proposal_id, []).append(r)
    return found


def add_tombstone(conn: Connection, store_id: int, key_kind: str, key: str, now: dt.datetime, **values: Any) -> None:
    """Tombstone ``key``, unless it is tombstoned already (a lifted one is tombstoned again)."""
    if conn.scalar(_TOMBSTONE_LIFTED, {"store_id": store_id, "kind": key_kind, "tomb_key": key}) is not False:
        conn.execute(INSERT[t.tombstones], {"store_id": store_id, "key_kind": key_kind, "key": key, "created_at": now, **values})


def has_tombstone(conn: Connection, store_id: int, key_kind: str, key: str) -> bool:
    return key in tombstoned(conn, store_id, key_kind, [key])


def _in_effect(store_id: int, key_kind: str, *columns: Any) -> Any:
    return select(*columns).where(t.tombstones.c.store_id == store_id, t.tombstones.c.key_kind == key_kind, _IN_EFFECT)


def tombstoned(conn: Connection, store_id: int, key_kind: str, keys: list[str]) -> set[str]:
    """Those of ``keys`` with a tombstone of ``key_kind`` in effect."""
    found: set[str] = set()
    for i in range(0, len(keys), 500):
        found.update(conn.scalars(_in_effect(store_id, key_kind, t.tombstones.c.key).where(t.tombstones.c.key.in_(keys[i : i + 500]))))
    return found


def value_tombstones(conn: Connection, store_id: int) -> dict[str, str]:
    rows = conn.execute(_in_effect(store_id, "value", t.tombstones.c.key, t.tombstones.c.note_path))
    return {r.key: r.note_path or "" for r in rows}


def rejected_changes(conn: Connection, store_id: int) -> frozenset[str]:
    """Change keys of rejected proposals: planners must not count on those changes."""
    return frozenset(conn.scalars(_in_effect(store_id, "change", t.tombstones.c.key)))


def lift_change_tombstone(conn: Connection, store_id: int, key: str, now: dt.datetime, *, proposal_id: int, reason: str | None) -> None:
    """A rejection taken back: the same change may be proposed again."""
    if has_tombstone(conn, store_id, "change", key):
        conn.execute(INSERT[t.tombstones], {"store_id": store_id, "key_kind": "change", "key": key, "created_at": now, "proposal_id": proposal_id, "reason": reason, "lifted": True})


def lift_value_tombstones(conn: Connection, store_id: int, proposal_id: int, now: dt.datetime) -> None:
    """A revert brings retired notes back, so their values are no longer tombstoned: a lift
    is appended for each value the proposal's apply tombstoned."""
    rows = conn.execute(_in_effect(store_id, "value", t.tombstones.c.key, t.tombstones.c.note_path).where(t.tombstones.c.proposal_id == proposal_id)).all()
    if not rows:
        return
    lifts = [{"store_id": store_id, "key_kind": "value", "key": r.key, "created_at": now, "proposal_id": proposal_id, "note_path": r.note_path, "reason": "reverted", "lifted": True} for r in rows]
    conn.execute(INSERT[t.tombstones], lifts)


def decisions_since(conn: Connection, store_id: int, actor: str, decision: str, since: dt.datetime) -> int:
    """How many decisions ``actor`` made on this store since ``since`` (a policy's daily budget)."""
    return int(
        conn.scalar(
            select(func.count()).select_from(t.decisions).where(
                t.decisions.c.store_id == store_id, t.decisions.c.actor == actor,
                t.decisions.c.decision == decision, t.decisions.c.decided_at >= since,
            )  # fmt: skip
        )
        or 0
    )


def proposal_counts(conn: Connection, store_id: int) -> dict[str, int]:
    """How many of the store's proposals are in each state."""
    query = select(t.proposals.c.state, func.count()).where(t.proposals.c.store_id == store_id).group_by(t.proposals.c.state)
    return {state: int(count) for state, count in conn.execute(query)}
