"""What a store held: blobs (whole, compressed or deltas), manifests (deltas of the last),
snapshots of them, and the stat cache that vouches for unchanged files.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select

from daemon.core.errors import StateError
from daemon.core.hashing import hash_bytes
from daemon.db import packing
from daemon.db import schema as t
from daemon.db.queries.common import INSERT, insert_if_absent

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
        conn.execute(insert_if_absent(conn, t.blobs, ["hash"]), new)
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
    created = int(conn.execute(INSERT[t.manifests], values).inserted_primary_key[0])
    entries, dropped = delta if delta is not None else (dict(manifest), [])
    if entries:
        conn.execute(INSERT[t.manifest_entries], [{"manifest_id": created, "path": p, "blob_hash": h} for p, h in entries.items()])
    if dropped:
        conn.execute(INSERT[t.manifest_drops], [{"manifest_id": created, "path": p} for p in dropped])
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
    conn.execute(t.stat_digests.delete().where(t.stat_digests.c.store_id == store_id))  # it summed up the rows changed here
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
    return int(conn.execute(INSERT[t.snapshots], values).inserted_primary_key[0])


def latest_snapshot(conn: Connection, store_id: int, as_of: dt.datetime | None = None) -> Any:
    """The newest snapshot of the store (recorded at or before ``as_of``), with its root hash."""
    return conn.execute(_LATEST_SNAPSHOT_AS_OF[as_of is not None], {"store_id": store_id, "as_of": as_of}).first()


def pass_snapshot(conn: Connection, store_id: int, pass_id: int) -> Any:
    """The snapshot a pass recorded of the store it read (None: it recorded none, as a skipped pass)."""
    c = t.snapshots.c
    return conn.execute(select(t.snapshots).where(c.store_id == store_id, c.pass_id == pass_id, c.reason == "pass").order_by(c.id).limit(1)).first()


def snapshots(conn: Connection, store_id: int, limit: int = 50) -> list[Any]:
    query = (
        select(t.snapshots, t.manifests.c.root_hash, t.manifests.c.file_count)
        .join(t.manifests, t.manifests.c.id == t.snapshots.c.manifest_id)
        .where(t.snapshots.c.store_id == store_id)
        .order_by(t.snapshots.c.id.desc())
        .limit(limit)
    )
    return list(conn.execute(query))


def manifest_id(conn: Connection, store_id: int, root_hash: str) -> int | None:
    return conn.scalar(_MANIFEST_ID, {"store_id": store_id, "root_hash": root_hash})
