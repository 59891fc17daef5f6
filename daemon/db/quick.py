"""The state a skipped pass needs, through the standard library's sqlite3 alone.

Importing SQLAlchemy costs more than the rest of a pass that finds nothing to do (about
0.2 s of a process; cron, a timer and every daemon worker start one), so the no-op lane
(``service/passes/noop.py``) asks here first. Only a SQLite file at this code's schema, already in
WAL mode, is answered; anything else (a server database, a URL with options, a missing
file, another schema) is None and the pass goes the whole way, through ``db/engine.py``.

``look`` reads, in one read transaction, what decides a skip; ``record_skip`` writes the
rows ``repo.start_pass``/``finish_pass``/``add_event`` write for a skipped pass, column for
column (a test compares the two), in one ``BEGIN IMMEDIATE`` that first checks nothing moved
since ``look``: no pass, lease, write or event came in between. Errors are not translated
here: the lane gives up on any ``sqlite3.Error`` (or text that does not decode, a value
that does not parse) and the whole pass meets it again, and says what it is.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import stat
from typing import Any, NamedTuple
from urllib.parse import quote

HEAD_REVISION = "0013_stat_digests"  # the newest migration; tests check it against Alembic
# How long the lane waits for another writer: a second. Longer contention (a locked file, a
# long transaction) is the whole pass's to wait out with its own timeout and report in one
# line, so a locked database is not waited for twice.
BUSY_TIMEOUT_MS = 1000
WAITING = ("pending", "accepted")  # core.proposals.OPEN, spelled out: importing it costs the lane (a test holds the two equal)


class Looked(NamedTuple):
    """What the database says of one store, read in one transaction."""

    store_id: int
    root: str
    preset: str
    root_identity: str | None
    first_at_root: bool  # no store registered earlier at the same folder
    last_completed: tuple[int, str | None, str | None, dt.datetime | None, dict[str, Any] | None] | None  # id, root hash, planner, next due, stats
    busy: bool  # a pass running (or dead), a lease, an apply half-written: the whole pass sorts that out
    waiting: int  # pending and accepted proposals
    pending: int  # of which pending (what `dreamd pass --all` tells of)
    seq: int  # the store's newest event
    memo: Memo | None  # what the lane last vouched for from the stat cache, if it still stands


class Memo(NamedTuple):
    """The stat cache's digest (schema.stat_digests): the files' paths and stats the lane last
    vouched for row by row, the root hash they hold, and which of them a scan skips."""

    digest: str
    root_hash: str
    skips: tuple[tuple[str, str], ...]  # (path, reason)


def connect(url: str) -> sqlite3.Connection | None:
    """A connection to the SQLite state database ``url`` names, or None when the lane cannot
    be sure it is the one ``db/engine.py`` would open at this code's schema."""
    path = _path(url)
    return _connected(path)[0] if path is not None else None


def _path(url: str) -> str | None:
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url:
        return None
    return os.path.abspath(os.path.expanduser(url[len(prefix) :]))


def _connected(path: str) -> tuple[sqlite3.Connection | None, tuple[int, int] | None]:
    """The lane's connection to the file at ``path`` and the (device, inode) it opened: the
    file's, the same before and after opening it (None when it was replaced meanwhile)."""
    try:
        before = os.stat(path)
        if not stat.S_ISREG(before.st_mode):
            return None, None
        # not bound to this thread: a keeper used by one thread at a time may be closed by
        # the thread that ends the process (the daemon closes its job threads' at shutdown)
        conn = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    except (OSError, sqlite3.Error):
        return None, None
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA synchronous=FULL")  # as the engine's: a committed row survives power loss
        conn.execute("PRAGMA foreign_keys=ON")
        wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        current = _at_head(conn)
        after = os.stat(path)
    except (sqlite3.Error, ValueError, OSError):  # a damaged schema is quoted in bytes that are not text
        conn.close()
        return None, None
    if not wal or not current:
        conn.close()
        return None, None
    same = (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    return conn, (after.st_dev, after.st_ino) if same else None


def _at_head(conn: sqlite3.Connection) -> bool:
    return [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")] == [HEAD_REVISION]


class Kept:
    """The lane's connection kept from one skip to the next in a process that passes again
    and again (a daemon worker, ``pass --all``): opening it and closing it, which checkpoints
    the WAL, was half of a watched skip's cost. It is used again only while the file at the
    URL's path is still the one it opened (same device and inode: a database deleted or
    replaced is opened anew, never written through an old connection) and still at this
    code's schema; any doubt closes it and opens the file again."""

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._key: tuple[str, int, int] | None = None  # path, device, inode

    def connection(self, url: str) -> sqlite3.Connection | None:
        """The lane's connection to ``url``'s database, or None (see ``connect``)."""
        path = _path(url)
        if path is None:
            self.close()
            return None
        if self._conn is not None and self._still(path):
            return self._conn
        self.close()
        conn, identity = _connected(path)
        if conn is not None and identity is not None:
            self._conn, self._key = conn, (path, *identity)
        return conn

    def release(self, conn: sqlite3.Connection) -> None:
        """Done with ``conn`` for now: kept if it is the kept one, else closed."""
        if conn is not self._conn:
            conn.close()

    def _still(self, path: str) -> bool:
        assert self._conn is not None and self._key is not None
        try:
            now = os.stat(path)
            if self._key != (path, now.st_dev, now.st_ino) or self._conn.in_transaction:
                return False
            return _at_head(self._conn)
        except (OSError, sqlite3.Error, ValueError):
            return False

    def close(self) -> None:
        conn, self._conn, self._key = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass


def registered(conn: sqlite3.Connection, *, name: str | None = None, root: str | None = None) -> tuple[str, str, str] | None:
    """(name, root, preset) of the store registered under ``name``, or first at the folder
    ``root`` (as repo.find_store and repo.find_store_at), if any."""
    if name is not None:
        row = conn.execute("SELECT name, root, preset FROM stores WHERE name = ?", (name,)).fetchone()
    else:
        row = conn.execute("SELECT name, root, preset FROM stores WHERE root = ? ORDER BY id LIMIT 1", (root,)).fetchone()
    return None if row is None else (row[0], row[1], row[2])


def look(conn: sqlite3.Connection, name: str) -> Looked | None:
    """The store registered under ``name``, or None when there is none."""
    conn.execute("BEGIN")
    try:
        row = conn.execute("SELECT id, root, preset, root_identity FROM stores WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        store_id, root = row[0], row[1]
        first = conn.execute("SELECT min(id) FROM stores WHERE root = ?", (root,)).fetchone()[0] == store_id
        waiting, pending = _waiting(conn, store_id)
        return Looked(store_id, root, row[2], row[3], first, _last_completed(conn, store_id), _busy(conn, store_id),
                      waiting, pending, _seq(conn, store_id), _memo(conn, store_id))  # fmt: skip
    finally:
        conn.execute("COMMIT")


def stat_rows(conn: sqlite3.Connection, store_id: int) -> list[tuple[str, int, int, int, int, str, int]]:
    """The store's stat-cache rows: path, size, mtime_ns, ino, ctime_ns, hash, scanned_ns (an
    inode above 2**63 as its two's complement, see repo.stat_cache). Read outside ``look``'s
    transaction: ``record_skip`` checks that no pass, apply or event came since."""
    return conn.execute("SELECT path, size, mtime_ns, ino, ctime_ns, blob_hash, scanned_ns FROM stat_cache WHERE store_id = ?", (store_id,)).fetchall()


def _memo(conn: sqlite3.Connection, store_id: int) -> Memo | None:
    row = conn.execute("SELECT digest, root_hash, skips FROM stat_digests WHERE store_id = ?", (store_id,)).fetchone()
    if row is None:
        return None
    return Memo(row[0], row[1], tuple((str(path), str(reason)) for path, reason in json.loads(row[2])))


def record_skip(conn: sqlite3.Connection, looked: Looked, *, surface: str, actor: str, runner: str, now: dt.datetime,
                root_hash: str, planner: str, stats: dict[str, Any], reason: str, memo: Memo | None = None) -> int | None:  # fmt: skip
    """Record a skipped pass and its ``pass.skipped`` event, and ``memo`` as the store's stat
    digest when given; the pass's id, or None (nothing written) when the store moved since
    ``looked`` was read."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        last = looked.last_completed
        if (
            _last_completed(conn, looked.store_id) != last
            or _busy(conn, looked.store_id)
            or _waiting(conn, looked.store_id) != (looked.waiting, looked.pending)
            or _seq(conn, looked.store_id) != looked.seq
        ):
            conn.execute("ROLLBACK")
            return None
        at = _stored_time(now)
        due = _stored_time(last[3]) if last and last[3] else None
        pass_id = conn.execute(
            "INSERT INTO passes (store_id, status, surface, actor, started_at, finished_at, root_hash, planner, next_due_at, stats, runner)"
            " VALUES (?, 'skipped', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (looked.store_id, surface, actor, at, at, root_hash, planner, due, json.dumps(stats), runner),
        ).lastrowid
        conn.execute(
            "INSERT INTO events (store_id, seq, at, type, actor, surface, pass_id, proposal_id, payload) VALUES (?, ?, ?, 'pass.skipped', ?, ?, ?, NULL, ?)",
            (looked.store_id, looked.seq + 1, at, actor, surface, pass_id, json.dumps({"v": 1, "reason": reason})),
        )
        if memo is not None:
            conn.execute(
                "INSERT OR REPLACE INTO stat_digests (store_id, digest, root_hash, skips) VALUES (?, ?, ?, ?)",
                (looked.store_id, memo.digest, memo.root_hash, json.dumps([list(skip) for skip in memo.skips])),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return int(pass_id)


def _last_completed(conn: sqlite3.Connection, store_id: int) -> tuple[int, str | None, str | None, dt.datetime | None, dict[str, Any] | None] | None:
    row = conn.execute(
        "SELECT id, root_hash, planner, next_due_at, stats FROM passes WHERE store_id = ? AND status = 'completed' ORDER BY id DESC LIMIT 1", (store_id,)
    ).fetchone()
    if row is None:
        return None
    return row[0], row[1], row[2], _read_time(row[3]), json.loads(row[4]) if row[4] is not None else None


def _busy(conn: sqlite3.Connection, store_id: int) -> bool:
    """A pass still running (or one that died running), any lease (live or expired), or a
    journal caught writing: recovery, a busy report or closing a dead pass may be due."""
    query = (
        "SELECT EXISTS (SELECT 1 FROM passes WHERE store_id = ?1 AND status = 'running')"
        " OR EXISTS (SELECT 1 FROM leases WHERE store_id = ?1)"
        " OR EXISTS (SELECT 1 FROM journal WHERE store_id = ?1 AND state = 'writing')"
    )
    return bool(conn.execute(query, (store_id,)).fetchone()[0])


def _waiting(conn: sqlite3.Connection, store_id: int) -> tuple[int, int]:
    """(pending and accepted, pending) proposals of the store."""
    query = "SELECT count(*), coalesce(sum(state = 'pending'), 0) FROM proposals WHERE store_id = ? AND state IN (?, ?)"
    waiting, pending = conn.execute(query, (store_id, *WAITING)).fetchone()
    return int(waiting), int(pending)


def _seq(conn: sqlite3.Connection, store_id: int) -> int:
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM events WHERE store_id = ?", (store_id,)).fetchone()[0])


def _stored_time(value: dt.datetime) -> str:
    """A time as SQLAlchemy's SQLite dialect stores an aware UTC DateTime (schema.UTCDateTime)."""
    utc = value.astimezone(dt.timezone.utc)
    return utc.strftime("%Y-%m-%d %H:%M:%S.") + f"{utc.microsecond:06d}"


def _read_time(text: str | None) -> dt.datetime | None:
    return None if text is None else dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)
