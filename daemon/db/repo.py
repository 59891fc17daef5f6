"""Queries of the state database, one function per question, each filtered by store.

Functions take a Connection inside the caller's transaction, so the service decides what
commits together. ``proposal_store`` and ``journal_store`` are the lookups without a store: they tell which
store owns an id a person typed, and nothing else.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, bindparam, false, func, insert, select, update

from daemon.core.errors import StateError
from daemon.core.hashing import hash_bytes
from daemon.core.proposals import OPEN
from daemon.db import packing
from daemon.db import schema as t

# Statements an apply runs for every proposal, built once with their parameters named (a
# statement built per call costs about 80 µs of SQLAlchemy's Python more than the query).
_IN_HASHES = t.blobs.c.hash.in_(bindparam("hashes", expanding=True))
_BLOB_HASHES = select(t.blobs.c.hash).where(_IN_HASHES)
_BLOB_DEPTHS = select(t.blobs.c.hash, t.blobs.c.depth).where(_IN_HASHES)
_BLOB_ROWS = select(t.blobs.c.hash, t.blobs.c.data, t.blobs.c.packed, t.blobs.c.base_hash).where(_IN_HASHES)
_MANIFEST_ID = select(t.manifests.c.id).where(t.manifests.c.store_id == bindparam("store_id"), t.manifests.c.root_hash == bindparam("root_hash"))
_NEWEST_MANIFEST = select(t.manifests.c.id, t.manifests.c.depth, t.manifests.c.chain_rows).where(t.manifests.c.store_id == bindparam("store_id"))
_NEWEST_MANIFEST_OF = {
    False: _NEWEST_MANIFEST.order_by(t.manifests.c.id.desc()).limit(1),
    True: _NEWEST_MANIFEST.where(t.manifests.c.id == bindparam("base_id")).order_by(t.manifests.c.id.desc()).limit(1),
}
_LATEST_SNAPSHOT = (
    select(t.snapshots, t.manifests.c.root_hash)
    .join(t.manifests, t.manifests.c.id == t.snapshots.c.manifest_id)
    .where(t.snapshots.c.store_id == bindparam("store_id"))
)
_LATEST_SNAPSHOT_AS_OF = {
    False: _LATEST_SNAPSHOT.order_by(t.snapshots.c.recorded_at.desc(), t.snapshots.c.id.desc()).limit(1),
    True: _LATEST_SNAPSHOT.where(t.snapshots.c.recorded_at <= bindparam("as_of")).order_by(t.snapshots.c.recorded_at.desc(), t.snapshots.c.id.desc()).limit(1),
}
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
_LOCK_STORE = select(t.stores.c.id).where(t.stores.c.id == bindparam("store_id")).with_for_update()
_NEWEST_EVENT = select(func.coalesce(func.max(t.events.c.seq), 0)).where(t.events.c.store_id == bindparam("store_id"))
_CLOSE_JOURNAL = (
    update(t.journal)
    .where(t.journal.c.store_id == bindparam("in_store"), t.journal.c.id == bindparam("journal_id"))
    .values(state=bindparam("new_state"), finished_at=bindparam("now"))
)
_INSERT = {table: insert(table) for table in (t.manifests, t.manifest_entries, t.manifest_drops, t.snapshots, t.tombstones, t.events, t.journal)}


def ensure_store(conn: Connection, name: str, root: str, preset: str, now: dt.datetime, identity: str | None = None) -> int:
    """The store's id, registering it on first use (two first users at once: one row)."""
    query = select(t.stores.c.id, t.stores.c.root, t.stores.c.preset, t.stores.c.root_identity).where(t.stores.c.name == name)
    row = conn.execute(query).first()
    if row is None:
        values = {"name": name, "root": root, "preset": preset, "created_at": now, "root_identity": identity}
        conn.execute(_insert_if_absent(conn, t.stores, ["name"]), values)
        row = conn.execute(query).one()
    if (row.root, row.preset, row.root_identity) != (root, preset, identity or row.root_identity):
        conn.execute(update(t.stores).where(t.stores.c.id == row.id).values(root=root, preset=preset, root_identity=identity or row.root_identity))
    return int(row.id)


def _insert_if_absent(conn: Connection, table: Any, keys: list[str]) -> Any:
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


# blobs and manifests ----------------------------------------------------------------


MAX_BLOB_DEPTH = 64  # deltas down to whole bytes, at most: reading a blob rebuilds that many


def put_blobs(conn: Connection, blobs: Mapping[str, bytes], bases: Mapping[str, str | None] | None = None, known: Mapping[str, bytes] | None = None) -> int:
    """Store the blobs not stored yet; returns how many looked new.

    ``bases`` maps a blob to an earlier version of the same file (a step's before, the last
    pass's bytes of the path): when that one is stored and the blob differs from it in one
    place, the blob is stored as a delta of it (see db/deltas.py); ``known`` holds base bytes
    the caller has already (hash -> bytes), so they are not rebuilt from the database.
    Blobs are shared by every store, so two stores' passes (each under its own lease) may
    insert the same bytes at once: the insert ignores a hash that appeared meanwhile.
    """
    if not blobs:
        return 0
    have: set[str] = set()
    keys = list(blobs)
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        have.update(conn.scalars(_BLOB_HASHES, {"hashes": chunk}))
    fresh = [h for h in keys if h not in have]
    wanted = {h: b for h in fresh if (b := (bases or {}).get(h)) and b != h}
    found = _blob_depths(conn, set(wanted.values()))
    usable = [b for b in set(wanted.values()) if found.get(b, MAX_BLOB_DEPTH) < MAX_BLOB_DEPTH]
    given = {b: (known or {})[b] for b in usable if b in (known or {})}
    based = given | get_blobs(conn, [b for b in usable if b not in given])
    new = []
    for h in fresh:
        base, delta = wanted.get(h), None
        if base in based:
            delta = packing.encode(based[base], blobs[h])  # type: ignore[index]
        if delta is not None and packing.worth_it(delta, blobs[h]):
            row = {"data": delta, "packed": False, "base_hash": base, "depth": found[base] + 1}  # type: ignore[index]
        else:
            data, packed = packing.pack(blobs[h])
            row = {"data": data, "packed": packed, "base_hash": None, "depth": 0}
        new.append({"hash": h, "size": len(blobs[h]), **row})
    if new:
        conn.execute(_insert_if_absent(conn, t.blobs, ["hash"]), new)
    return len(new)


def _blob_depths(conn: Connection, hashes: Iterable[str]) -> dict[str, int]:
    wanted, found = sorted(hashes), {}
    for i in range(0, len(wanted), 500):
        found.update({r.hash: r.depth for r in conn.execute(_BLOB_DEPTHS, {"hashes": wanted[i : i + 500]})})
    return found


def get_blobs(conn: Connection, hashes: Iterable[str]) -> dict[str, bytes]:
    """The bytes of the blobs stored (a hash not stored is left out), each rebuilt from its
    base when it is a delta and checked against its hash (StateError when it does not match)."""
    wanted = sorted(set(hashes))
    stored: dict[str, tuple[bytes, str | None]] = {}
    for i in range(0, len(wanted), 500):
        rows = conn.execute(_BLOB_ROWS, {"hashes": wanted[i : i + 500]})
        stored.update({r.hash: (packing.unpack(bytes(r.data), r.packed), r.base_hash) for r in rows})
    bases = {base for _, base in stored.values() if base is not None}
    whole = get_blobs(conn, bases) if bases else {}
    found: dict[str, bytes] = {}
    for digest, (data, base) in stored.items():
        if base is not None:
            if base not in whole:
                raise StateError(f"blob {digest[:12]} is stored as a delta of {base[:12]}, which is missing from the state database")
            data = packing.decode(whole[base], data)
            if hash_bytes(data) != digest:
                raise StateError(f"blob {digest[:12]} does not rebuild to its hash from its base {base[:12]}; the state database is damaged")
        found[digest] = data
    return found


MAX_DELTA_DEPTH = 1024  # deltas down to a full manifest, at most (and their rows at most the store's files)


def save_manifest(conn: Connection, store_id: int, root_hash: str, manifest: Mapping[str, str], *, base: tuple[int, Mapping[str, str]] | None = None, changed: Iterable[str] | None = None) -> int:
    """The manifest row for this root hash, created when new: as a delta of ``base`` (its id
    and entries, when the caller has them) or else of the store's newest manifest; in full
    when there is none, the chain is ``MAX_DELTA_DEPTH`` long or holds more rows than the
    store has files (rebuilding would cost more than twice a full copy), or most files changed.
    ``changed``: the only paths that may differ from ``base`` (an apply's steps), so the
    others are not compared."""
    existing = manifest_id(conn, store_id, root_hash)
    if existing is not None:
        return int(existing)
    newest = conn.execute(_NEWEST_MANIFEST_OF[base is not None], {"store_id": store_id, "base_id": base[0] if base else None}).first()
    delta: tuple[dict[str, str], list[str]] | None = None
    if newest is not None and newest.depth < MAX_DELTA_DEPTH:
        old = base[1] if base else manifest_entries(conn, store_id, newest.id)
        if base is not None and changed is not None:
            paths = set(changed)
            differ = {p: manifest[p] for p in paths if p in manifest and old.get(p) != manifest[p]}
            dropped = [p for p in paths if p not in manifest and p in old]
        else:
            differ = {p: h for p, h in manifest.items() if old.get(p) != h}
            dropped = [p for p in old if p not in manifest]
        rows = len(differ) + len(dropped)
        if rows <= len(manifest) // 2 and newest.chain_rows + rows <= len(manifest):
            delta = differ, dropped
    values = {"store_id": store_id, "root_hash": root_hash, "file_count": len(manifest)}
    if delta is not None:
        values |= {"base_id": newest.id, "depth": newest.depth + 1, "chain_rows": newest.chain_rows + len(delta[0]) + len(delta[1])}  # type: ignore[union-attr]
    created = int(conn.execute(_INSERT[t.manifests], values).inserted_primary_key[0])
    entries, dropped = delta if delta is not None else (dict(manifest), [])
    if entries:
        conn.execute(_INSERT[t.manifest_entries], [{"manifest_id": created, "path": p, "blob_hash": h} for p, h in entries.items()])
    if dropped:
        conn.execute(_INSERT[t.manifest_drops], [{"manifest_id": created, "path": p} for p in dropped])
    return created


def manifest_entries(conn: Connection, store_id: int, manifest_id: int) -> dict[str, str]:
    """Path -> blob of a manifest, rebuilt from its full base and the deltas on it (a few
    queries however long the chain: the links, then the rows of all of them at once)."""
    m, e, d = t.manifests.c, t.manifest_entries.c, t.manifest_drops.c
    links = dict(conn.execute(select(m.id, m.base_id).where(m.store_id == store_id, m.id <= manifest_id)).all())
    chain: list[int] = []
    at: int | None = manifest_id if manifest_id in links else None
    while at is not None:
        chain.append(at)
        at = links.get(at)
    chain.reverse()  # the full manifest first
    rows: dict[int, list[tuple[str, str]]] = {mid: [] for mid in chain}
    drops: dict[int, list[str]] = {mid: [] for mid in chain}
    for i in range(0, len(chain), 500):
        part = chain[i : i + 500]
        for mid, path, digest in conn.execute(select(e.manifest_id, e.path, e.blob_hash).where(e.manifest_id.in_(part))):
            rows[mid].append((path, digest))
        for mid, path in conn.execute(select(d.manifest_id, d.path).where(d.manifest_id.in_(part))):
            drops[mid].append(path)
    found: dict[str, str] = {}
    for mid in chain:
        found.update(rows[mid])
        for path in drops[mid]:
            found.pop(path, None)
    return found


# the stat cache ---------------------------------------------------------------------

StatRow = tuple[int, int, int, int, str, int]  # size, mtime_ns, ino, ctime_ns, blob hash, scanned_ns
_STAT_COLUMNS = ("size", "mtime_ns", "ino", "ctime_ns", "blob_hash", "scanned_ns")
_INT64 = 1 << 64


def stat_cache(conn: Connection, store_id: int) -> dict[str, StatRow]:
    """Path -> what the last pass that read the file saw of it (see stores/statcache.py)."""
    c = t.stat_cache.c
    rows = conn.execute(select(c.path, c.size, c.mtime_ns, c.ino, c.ctime_ns, c.blob_hash, c.scanned_ns).where(c.store_id == store_id)).all()
    return {r[0]: (r[1], r[2], r[3] % _INT64, r[4], r[5], r[6]) for r in rows}


def save_stat_cache(conn: Connection, store_id: int, rows: Mapping[str, StatRow], gone: Iterable[str] = ()) -> None:
    """Write these rows (replacing a path's old one) and drop the rows of paths in ``gone``.
    Every row's blob must be stored already (a foreign key says so)."""
    c = t.stat_cache.c
    paths = sorted({*rows, *gone})
    for i in range(0, len(paths), 500):
        conn.execute(t.stat_cache.delete().where(c.store_id == store_id, c.path.in_(paths[i : i + 500])))
    if rows:
        values = [{"store_id": store_id, "path": p, **dict(zip(_STAT_COLUMNS, row, strict=True))} for p, row in rows.items()]
        for value in values:  # a 64-bit inode number above the signed range, as its two's complement
            value["ino"] = value["ino"] - _INT64 if value["ino"] >= 1 << 63 else value["ino"]
        conn.execute(insert(t.stat_cache), values)


def add_snapshot(conn: Connection, store_id: int, manifest_id: int, reason: str, now: dt.datetime, *, pass_id: int | None = None, proposal_id: int | None = None) -> int:
    values = {"store_id": store_id, "manifest_id": manifest_id, "reason": reason, "pass_id": pass_id, "proposal_id": proposal_id, "recorded_at": now}
    return int(conn.execute(_INSERT[t.snapshots], values).inserted_primary_key[0])


def latest_snapshot(conn: Connection, store_id: int, as_of: dt.datetime | None = None) -> Any:
    """The newest snapshot of the store (recorded at or before ``as_of``), with its root hash."""
    return conn.execute(_LATEST_SNAPSHOT_AS_OF[as_of is not None], {"store_id": store_id, "as_of": as_of}).first()


def snapshots(conn: Connection, store_id: int, limit: int = 50) -> list[Any]:
    query = (
        select(t.snapshots, t.manifests.c.root_hash, t.manifests.c.file_count)
        .join(t.manifests, t.manifests.c.id == t.snapshots.c.manifest_id)
        .where(t.snapshots.c.store_id == store_id)
        .order_by(t.snapshots.c.id.desc())
        .limit(limit)
    )
    return list(conn.execute(query))


# passes ------------------------------------------------------------------------------


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


# proposals ---------------------------------------------------------------------------


def add_proposal(conn: Connection, store_id: int, values: Mapping[str, Any], files: Mapping[str, tuple[str | None, str | None]]) -> int:
    proposal_id = insert_proposal(conn, store_id, values)
    add_proposal_files(conn, proposal_file_rows(proposal_id, files))
    return proposal_id


def insert_proposal(conn: Connection, store_id: int, values: Mapping[str, Any]) -> int:
    """A proposal's row alone; its files follow (``add_proposal_files``), in the same transaction."""
    return int(conn.execute(insert(t.proposals).values(store_id=store_id, **values)).inserted_primary_key[0])


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


# tombstones --------------------------------------------------------------------------
# Append-only (see schema.tombstones): taking one back appends a lift, never a delete.


def add_tombstone(conn: Connection, store_id: int, key_kind: str, key: str, now: dt.datetime, **values: Any) -> None:
    """Tombstone ``key``, unless it is tombstoned already (a lifted one is tombstoned again)."""
    if conn.scalar(_TOMBSTONE_LIFTED, {"store_id": store_id, "kind": key_kind, "tomb_key": key}) is not False:
        conn.execute(_INSERT[t.tombstones], {"store_id": store_id, "key_kind": key_kind, "key": key, "created_at": now, **values})


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
        conn.execute(_INSERT[t.tombstones], {"store_id": store_id, "key_kind": "change", "key": key, "created_at": now, "proposal_id": proposal_id, "reason": reason, "lifted": True})


def lift_value_tombstones(conn: Connection, store_id: int, proposal_id: int, now: dt.datetime) -> None:
    """A revert brings retired notes back, so their values are no longer tombstoned: a lift
    is appended for each value the proposal's apply tombstoned."""
    rows = conn.execute(_in_effect(store_id, "value", t.tombstones.c.key, t.tombstones.c.note_path).where(t.tombstones.c.proposal_id == proposal_id)).all()
    if not rows:
        return
    lifts = [{"store_id": store_id, "key_kind": "value", "key": r.key, "created_at": now, "proposal_id": proposal_id, "note_path": r.note_path, "reason": "reverted", "lifted": True} for r in rows]
    conn.execute(_INSERT[t.tombstones], lifts)


# events ------------------------------------------------------------------------------


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
        self.conn.execute(_INSERT[t.events], values)
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


# journal -----------------------------------------------------------------------------


def open_journal(conn: Connection, store_id: int, proposal_id: int, operation: str, steps: list[dict[str, Any]], now: dt.datetime, folders: list[str] | None = None) -> int:
    """A journal in state writing; ``folders``: those its writes will create."""
    payload = {"v": 1, "files": steps, **({"folders": folders} if folders else {})}
    values = {"store_id": store_id, "proposal_id": proposal_id, "operation": operation, "state": "writing", "steps": payload, "created_at": now}
    return int(conn.execute(_INSERT[t.journal], values).inserted_primary_key[0])


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


# leases ------------------------------------------------------------------------------


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


def manifest_id(conn: Connection, store_id: int, root_hash: str) -> int | None:
    return conn.scalar(_MANIFEST_ID, {"store_id": store_id, "root_hash": root_hash})


def add_model_calls(conn: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        conn.execute(insert(t.model_calls), rows)


def model_calls(conn: Connection, store_id: int, pass_id: int | None = None) -> list[Any]:
    query = select(t.model_calls).where(t.model_calls.c.store_id == store_id)
    if pass_id is not None:
        query = query.where(t.model_calls.c.pass_id == pass_id)
    return list(conn.execute(query.order_by(t.model_calls.c.id)))


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


def journal_store(conn: Connection, journal_id: int) -> int | None:
    """The store a journal belongs to (like proposal_store, the one lookup by id alone)."""
    return conn.scalar(select(t.journal.c.store_id).where(t.journal.c.id == journal_id))


def journal_entry(conn: Connection, store_id: int, journal_id: int) -> Any:
    return conn.execute(select(t.journal).where(t.journal.c.store_id == store_id, t.journal.c.id == journal_id)).first()
