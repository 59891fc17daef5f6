"""Dexto's SQLite database as a store: consistent read-only scans, compare-and-swap writes.

Reads use a read-only connection and one read transaction, so a scan sees one committed
state of a WAL database however busy its writer is; nothing is copied (the ``-wal`` file
holds committed rows the ``.db`` file does not), the journal mode is never changed and
nothing is vacuumed. A proposal is written in one short ``BEGIN IMMEDIATE`` transaction:
every ``UPDATE``/``DELETE`` names the exact value it replaces and must touch exactly one
row, else the whole transaction rolls back (StaleError) and the database is as it was.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from daemon import logs
from daemon.core.errors import StaleError, StoreError
from daemon.core.hashing import hash_bytes
from daemon.stores.records import dexto
from daemon.stores.records.rendering import NotRenderable, parse_value, render, value_of
from daemon.stores.scan import FileEntry, ScanResult, Skipped

# Where a retired record goes in a proposal's diff: it is deleted from the table and its
# exact value stays in dreamd's blobs; the name says so to whoever reads the diff.
DELETED_PREFIX = "dreamd:deleted"
LOCK_WAIT_S = 2.0  # dreamd gives up on a busy database well before Dexto's own wait (dexto.WRITER_WAIT_S)
UNREADABLE = "unreadable"  # the hash of a row no compare-and-swap can expect

log = logs.get_logger("dreamd.records")


@dataclass(frozen=True)
class RecordRoots:
    """A record store's database file; its archive is dreamd's blobs (retired records are
    deleted from the table, their exact values kept in the state database)."""

    notes: Path  # the database file
    identity: tuple[int, int] | None = None
    archive_prefix: str = DELETED_PREFIX
    beside: bool = False

    def is_archived(self, rel: str) -> bool:
        return rel.startswith(self.archive_prefix + "/")


def open_roots(path: Path | str) -> RecordRoots:
    """The database at ``path``; StoreError when it is missing or not a regular file."""
    db = Path(path).expanduser()
    try:
        info = os.stat(db)
    except OSError as exc:
        raise StoreError(f"record store {db}: {exc.strerror}", hint="the dexto preset takes the agent's database, ~/.dexto/database/<agentId>.db") from exc
    if not os.path.isfile(db):
        raise StoreError(f"record store {db} is not a database file", hint="the dexto preset takes the agent's database, ~/.dexto/database/<agentId>.db")
    return RecordRoots(db.resolve(), (info.st_dev, info.st_ino))


def is_record_path(path: str) -> bool:
    return path.startswith(dexto.KEY_PREFIX) and "/" not in path


def scan(roots: RecordRoots, excluded: Callable[[str], bool] = lambda key: False) -> ScanResult:
    """Every memory row as a note, in one read transaction; rows dreamd must not touch are
    reported in ``skipped`` with why (a row that is not JSON empties the agent's prompt).
    Keys the store's ``exclude`` globs name are left out silently, as for folders."""
    notes: dict[str, FileEntry] = {}
    skipped: list[Skipped] = []
    with _reading(roots) as conn:
        rows = conn.execute(f"SELECT key, value FROM {dexto.TABLE} WHERE key LIKE ? ORDER BY key", (dexto.KEY_PREFIX + "%",)).fetchall()
    for key, value in rows:
        if excluded(key):
            continue
        entry = _entry(key, value)
        if isinstance(entry, Skipped):
            skipped.append(entry)
        else:
            notes[key] = entry
    return ScanResult(roots=roots, files=dict(notes), archived={}, notes=notes, skipped=skipped)  # type: ignore[arg-type]


def _entry(key: str, value: object) -> FileEntry | Skipped:
    if not is_record_path(key):
        return Skipped(key, "bad-key: Dexto lists it (LIKE ignores case) but it is not memory:item:<id>")
    try:
        data = render(value)
    except NotRenderable as exc:
        return Skipped(key, str(exc))
    record = parse_value(value)
    if record["id"] != key[len(dexto.KEY_PREFIX) :]:
        return Skipped(key, f"id-differs-from-key: the record says id {record['id']!r}")
    return FileEntry(path=key, hash=hash_bytes(data), size=len(data), mtime_ns=record["updatedAt"] * 1_000_000, ino=0, ctime_ns=0, read=data)


def on_disk(roots: RecordRoots, paths: Iterable[str]) -> dict[str, str | None]:
    """The hash of each record's rendering now (None when absent; archive paths are dreamd's
    blobs, never rows); ``UNREADABLE`` for a row that cannot be rendered."""
    paths = list(paths)
    with _reading(roots) as conn:
        return {path: _hash_of(_value(conn, path)) for path in paths}


def _value(conn: sqlite3.Connection, path: str) -> object | None:
    if not is_record_path(path):
        return None
    row = conn.execute(f"SELECT value FROM {dexto.TABLE} WHERE key = ?", (path,)).fetchone()
    return None if row is None else row[0]


def _hash_of(value: object | None) -> str | None:
    if value is None:
        return None
    try:
        return hash_bytes(render(value))
    except NotRenderable:
        return UNREADABLE


@dataclass(frozen=True)
class Written:
    """What one transaction did, and how long it held the write lock."""

    changed: int
    held_s: float


def write(roots: RecordRoots, steps: Iterable[object], blobs: Mapping[str, bytes], *, undo: bool = False, now_ms: int | None = None) -> Written:
    """Bring every record step to its after hash (``undo``: before) in one transaction.

    Archive steps are skipped (the archive is dreamd's blobs). A step already at its target
    is left; any other row must hold exactly the other side's value (its rendering hashes
    to it: renderings are exact, so that value is the one the proposal saw), or everything
    rolls back and StaleError names the record. Only the target side's bytes are needed.
    """
    plan = []
    for step in steps:
        path, before, after = step.path, step.before, step.after  # type: ignore[attr-defined]
        if not is_record_path(path):
            continue
        want, other = (before, after) if undo else (after, before)
        plan.append((path, want, other, _value_for(blobs, want, path)))
    stamp = now_ms if now_ms is not None else int(time.time() * 1000)
    with _writing(roots) as (conn, started):
        changed = 0
        for path, want, other, new in plan:
            old = _value(conn, path)
            current = _hash_of(old)
            if current == want:
                continue
            if current != other:
                raise StaleError(f"{path} changed since it was read; nothing was written")
            changed += _swap(conn, path, old, new, stamp)  # type: ignore[arg-type]
        held = time.monotonic() - started
    return Written(changed, held)


def _value_for(blobs: Mapping[str, bytes], digest: str | None, path: str) -> str | None:
    """The exact value a rendering stands for, checked against Dexto's rules."""
    if digest is None:
        return None
    data = blobs.get(digest)
    if data is None or hash_bytes(data) != digest:
        raise StoreError(f"the bytes of {path} are missing from the state database or do not match their hash; refusing to write it")
    try:
        value = value_of(data)
    except ValueError as exc:
        raise StoreError(f"{path}: {exc}; refusing to write it") from None
    if hash_bytes(render(value)) != digest:
        raise StoreError(f"{path}: its rendering is not the one dreamd reads back; refusing to write it")
    return value


def _swap(conn: sqlite3.Connection, key: str, old: str | None, new: str | None, stamp: int) -> int:
    """One compare-and-swap statement; StaleError unless it touched exactly one row."""
    if new is None:
        cursor = conn.execute(f"DELETE FROM {dexto.TABLE} WHERE key = ? AND value = ?", (key, old))
    elif old is None:
        cursor = conn.execute(f"INSERT INTO {dexto.TABLE} (key, value, updated_at) SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM {dexto.TABLE} WHERE key = ?)", (key, new, stamp, key))
    else:
        cursor = conn.execute(f"UPDATE {dexto.TABLE} SET value = ?, updated_at = ? WHERE key = ? AND value = ?", (new, stamp, key, old))
    if cursor.rowcount != 1:
        raise StaleError(f"{key} changed since it was read (the write matched {cursor.rowcount} rows); nothing was written")
    return 1


@contextmanager
def _reading(roots: RecordRoots) -> Iterator[sqlite3.Connection]:
    """A read-only connection inside one read transaction: one committed state."""
    conn = _connect(roots, "ro")
    try:
        conn.execute("BEGIN")
        _check_layout(conn, roots)
        yield conn
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise _store_error(roots, "read", exc) from exc
    finally:
        conn.close()


@contextmanager
def _writing(roots: RecordRoots) -> Iterator[tuple[sqlite3.Connection, float]]:
    """One ``BEGIN IMMEDIATE`` transaction, committed when the block ends, else rolled back."""
    conn = _connect(roots, "rw")
    try:
        conn.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        try:
            _check_layout(conn, roots)
            yield conn, started
        except BaseException:
            conn.execute("ROLLBACK")
            log.info("records.transaction", outcome="rolled-back", held_ms=round((time.monotonic() - started) * 1000, 1))
            raise
        conn.execute("COMMIT")
        log.info("records.transaction", outcome="committed", held_ms=round((time.monotonic() - started) * 1000, 1))
    except sqlite3.Error as exc:
        raise _store_error(roots, "write", exc) from exc
    finally:
        conn.close()


def _connect(roots: RecordRoots, mode: str) -> sqlite3.Connection:
    uri = f"file:{quote(str(roots.notes))}?mode={mode}"
    try:
        return sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT_S, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _store_error(roots, "open", exc) from exc


def _check_layout(conn: sqlite3.Connection, roots: RecordRoots) -> None:
    """Refuse a database that is not Dexto's: ``kv_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, …)``."""
    columns = {row[1]: row for row in conn.execute(f"PRAGMA table_info({dexto.TABLE})")}
    key, value = columns.get("key"), columns.get("value")
    if not set(dexto.COLUMNS) <= set(columns) or key is None or value is None or key[2].upper() != "TEXT" or key[5] != 1 or value[2].upper() != "TEXT" or value[3] != 1:
        raise StoreError(f"{roots.notes} is not a Dexto database: no table kv_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at, updated_at)", hint="the dexto preset takes the agent's database, ~/.dexto/database/<agentId>.db")


def _store_error(roots: RecordRoots, doing: str, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreError(f"record store {roots.notes} is locked by another writer (waited {LOCK_WAIT_S:g} s to {doing}); nothing was written", hint="try again when the agent is not writing")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"record store {roots.notes} is read-only; nothing was written", hint="dreamd needs write access to the database file and its folder to apply")
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
        return StoreError(f"{roots.notes} is not an SQLite database", hint="the dexto preset takes the agent's database, ~/.dexto/database/<agentId>.db")
    return StoreError(f"record store {roots.notes}: cannot {doing}: {text}")
