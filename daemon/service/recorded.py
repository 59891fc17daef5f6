"""A proposal's recorded files and bytes, and the states dreamd's own writes left a file in:
read from the state database, for the pass, the apply and review alike."""

from __future__ import annotations

from sqlalchemy import Connection

from daemon.core.errors import DiffError, StoreError, UnsafePathError
from daemon.core.hashing import hash_bytes
from daemon.core.patch import rebuild
from daemon.core.validate import unsafe_path_reason
from daemon.db import repo

Files = dict[str, tuple[str | None, str | None]]


LARGE_BLOB = 64 * 1024  # base bytes worth keeping across the applies of one run (an index)


def proposal_bytes(conn: Connection, store_id: int, proposal_id: int, cache: dict[str, bytes] | None = None, *, diff: str | None = None) -> tuple[Files, dict[str, bytes]]:
    """A proposal's files (path -> base, result hash) and the bytes of both sides, by hash.

    Base bytes are blobs; result bytes are rebuilt from the base and the stored diff and
    must hash to the recorded result, or nothing is written. A path that could leave the
    store is refused before any byte is looked at. ``cache`` keeps large base blobs for the
    next call (every proposal of a pass has the same index as its base). ``diff``: the
    proposal's, when the caller read its row in this same transaction.
    """
    files_ = repo.proposal_files(conn, store_id, proposal_id)
    unsafe = [reason for reason in map(unsafe_path_reason, files_) if reason]
    if unsafe:
        raise UnsafePathError(f"proposal {proposal_id} is refused: {unsafe[0]}; nothing was written", hint=f"dreamd reject {proposal_id} --reason 'unsafe path'")
    wanted = {base for base, _ in files_.values() if base}
    kept = {h: (cache or {})[h] for h in wanted if h in (cache or {})}
    blobs = kept | repo.get_blobs(conn, wanted - set(kept))
    if cache is not None:
        cache.update({h: data for h, data in blobs.items() if len(data) >= LARGE_BLOB})
    missing = [p for p, (base, _) in files_.items() if base and base not in blobs]
    if missing:
        raise StoreError(f"proposal {proposal_id}: the recorded bytes of {', '.join(missing)} are missing from the state database")
    written = {p: r for p, (b, r) in files_.items() if r is not None and r != b}
    if written:
        diff = diff if diff is not None else repo.get_proposal(conn, store_id, proposal_id).diff
        rebuilt = rebuild(diff, {p: blobs[b] if b else None for p, (b, _) in files_.items()})
        for path, result in written.items():
            data = rebuilt.get(path)
            if data is None or hash_bytes(data) != result:
                raise DiffError(f"proposal {proposal_id}: its diff does not rebuild {path}; nothing was written")
            blobs[result] = data
    return files_, blobs
