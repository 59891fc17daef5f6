"""Opening the state database for commands that only read: nothing written, no lock waited
for, no migration (see ``open_read_only``); and an empty database when there is none yet.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.pool import StaticPool

from daemon.core.errors import StateError
from daemon.db.engine import DEFAULT_BUSY_TIMEOUT_MS, GIVEN_URL_HINT, STATE_DIR_HINT, describe, is_state_dir, open_engine, parse_url, run_pragmas, why_not_a_folder
from daemon.db.migrating import at_head, pending_migrations, refuse_unless_current
from daemon.db.translate import checked_times, error_hook, json_reader


def open_read_only(url: str, *, current: bool = False) -> Engine | None:
    """The database opened so that nothing can be written, or None when there is none yet
    (a SQLite file that does not exist, a server database not migrated to this code).

    A SQLite file is opened ``immutable`` (no lock, no journal, no WAL files created): that
    also reads a file in a read-only folder, on a full disk, or while another process holds
    a write lock. Immutable mode ignores the WAL and the rollback journal, so while either
    holds something (another process has the database open with committed transactions
    still in ``-wal``, or a write is under way or was interrupted in rollback mode) the
    file is opened ``mode=ro`` instead: that never writes the database, and SQLite's locks
    keep what is read consistent. Errors come out as StateError, like open_engine's.

    ``current=True`` is for commands that only read: a database whose schema is not this
    code's is refused with a StateError (an older one needs a command that writes to
    migrate it; reading never migrates); an empty one (no table at all) is None as well.
    """
    parsed = parse_url(url)
    what = describe(parsed)
    if parsed.get_backend_name() != "sqlite":
        engine = open_engine(url, migrate=False)
        try:
            if at_head(engine) or not pending_migrations(engine, what):  # the quick look first
                return engine
            if current:
                refuse_unless_current(engine, what)  # returns only when it is empty
        except BaseException:
            engine.dispose()
            raise
        engine.dispose()
        return None
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database).expanduser().resolve()
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:  # a file where a folder of the path should be
            raise StateError(f"{what} cannot be opened: {why_not_a_folder(path.parent, exc)}", hint=STATE_DIR_HINT if is_state_dir(path.parent) else GIVEN_URL_HINT) from None
        raise StateError(f"{what} cannot be read: {exc.strerror or exc}", hint="check the path and its folders' permissions") from None
    if not stat.S_ISREG(info.st_mode):
        raise StateError(f"{what} cannot be opened: it is not a regular file", hint="check that the path names a file in a directory you can write")
    engine = _read_only_sqlite(path, what, live=_in_use(path))
    if current:
        try:
            empty = refuse_unless_current(engine, what)
        except BaseException:
            engine.dispose()
            raise
        if empty:
            engine.dispose()
            return None
    return engine


def open_empty() -> Engine:
    """An empty database with this code's tables, in memory.

    What a command that only reads sees when no database exists yet: it lists nothing,
    as it would on a fresh database, and creates no file or folder to say so.
    """
    from daemon.db.schema import metadata

    engine = create_engine("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})
    metadata.create_all(engine)
    return engine


def _in_use(path: Path) -> bool:
    """Whether the WAL or the rollback journal beside ``path`` holds something immutable
    mode would miss: committed transactions not yet in the file, or a write under way."""
    for suffix, empty_is_idle in (("-wal", True), ("-journal", False)):
        try:
            size = os.stat(path.with_name(path.name + suffix)).st_size
        except FileNotFoundError:
            continue
        except OSError:
            return True  # cannot tell: let SQLite's locks decide
        if size > 0 or not empty_is_idle:
            return True
    return False


def _read_only_sqlite(path: Path, what: str, *, live: bool) -> Engine:
    """An engine on the SQLite file at ``path`` that SQLite itself keeps from writing.

    The path goes into a ``file:`` URI percent-encoded, so a folder named with ``?``, ``#``
    or ``%`` names the same file. Transactions are plain deferred BEGINs (repeatable reads
    across a command's statements); a lock another process holds is waited for up to the
    busy timeout, then reported as locked.
    """
    query = {"mode": "ro", "uri": "true"} if live else {"mode": "ro", "immutable": "1", "uri": "true"}
    url = URL.create("sqlite", database=f"file:{quote(str(path))}", query=query)
    engine = checked_times(create_engine(url, json_deserializer=json_reader(what)), what)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the "begin" hook below emits BEGIN
        run_pragmas(dbapi_connection, [f"PRAGMA busy_timeout={DEFAULT_BUSY_TIMEOUT_MS}"])

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            conn.exec_driver_sql("BEGIN")

    event.listen(engine, "handle_error", error_hook(what, path.parent))
    return engine
