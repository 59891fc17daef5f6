"""Opening the state database: where it lives, how SQLite is made to behave, migrations.

Several dreamd processes (the daemon, a CLI, the web UI) share one SQLite file, so every
connection gets WAL (readers never block the writer), a busy timeout (a writer waits for
the lock instead of failing at once) and enforced foreign keys (SQLite's default is off).

Python's sqlite3 driver runs its own half-transactions by default: no BEGIN before SELECT
or DDL, so reads are not repeatable, DDL autocommits and SAVEPOINTs escape the enclosing
transaction. Following SQLAlchemy's recipe, the driver is told to stay out of it
(``isolation_level = None``) and the engine emits BEGIN itself. It emits ``BEGIN
IMMEDIATE``: a deferred transaction that reads and then writes can fail with "database is
locked" at once, without the busy timeout helping, when another writer got in between.
Code that only reads can ask for a plain deferred BEGIN with ``READ_ONLY``::

    with engine.execution_options(**READ_ONLY).connect() as conn: ...

The schema is owned by the Alembic migrations shipped in ``migrations/``; ``open_engine``
upgrades the database to head before handing the engine out (a new SQLite file is made at
head in one transaction instead: ``fresh.py``). Failures a user can meet
(locked, unreadable, not a database, too new) surface as ``StateError`` everywhere, also
from statements run later on the engine (a ``handle_error`` hook does the translation).
So do two failures ``translate`` cannot see: SQLite messages that are not text (a corrupt
schema quoted in garbage bytes comes out of the driver as ``UnicodeDecodeError``) and a
column this code's schema has that the database lacks (altered outside dreamd).

Commands that only read open the database with ``open_read_only(url, current=True)``: no
write, no lock to wait for, no migration (an older schema is refused, not upgraded).

Migrations are ``migrating.py``'s, read-only opening ``read_only.py``'s, and the errors an engine
meets are turned into ``StateError`` by ``translate.py``.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from daemon.core.errors import ConfigError, StateError
from daemon.db.fresh import create_at_head
from daemon.db.translate import checked_times, error_hook, json_reader, translate_db_errors
from daemon.locations import default_db_url, state_dir  # noqa: F401 - default_db_url: where callers have found it

READ_ONLY: dict[str, Any] = {"dreamd_read_only": True}
DEFAULT_BUSY_TIMEOUT_MS = 5000


def describe(url: URL) -> str:
    """How messages name the database: its file for SQLite, the URL without password else."""
    if url.get_backend_name() == "sqlite":
        return f"state database {url.database or ':memory:'}"
    return f"state database {url.render_as_string(hide_password=True)}"


def open_engine(
    url: str, *, migrate: bool = True, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
) -> Engine:
    """An engine on the state database at ``url``, upgraded to the newest schema.

    ``migrate=False`` leaves the schema as it is (see ``pending_migrations``). Raises
    ``StateError`` when the database cannot be used.
    """
    from daemon.db.migrating import at_head, upgrade  # here: migrating imports this module

    parsed = parse_url(url)
    what = describe(parsed)
    with translate_db_errors(what):
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(parsed, busy_timeout_ms)
        else:
            engine = _server_engine(parsed)
        event.listen(engine, "handle_error", error_hook(what, sqlite_folder(parsed)))
        try:
            # Looking first costs no write lock: opening an up-to-date database does not
            # wait for (or fail on) a writer in another process.
            if migrate and not at_head(engine) and not create_at_head(engine):
                upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
    return engine


def sqlite_folder(url: URL) -> Path | None:
    """The folder of a SQLite database file named by path (None for memory or a URI)."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database).expanduser().absolute().parent


def parse_url(url: str) -> URL:
    """The URL parsed; StateError when it is none, ConfigError for a SQLite URL naming a host
    (``sqlite://relative.db``, which SQLAlchemy opens as an empty database in memory)."""
    with translate_db_errors("state database"):
        try:
            parsed = make_url(url)
        except ValueError as exc:  # a non-numeric port, for one
            raise ArgumentError(str(exc)) from exc
    if parsed.get_backend_name() == "sqlite" and (parsed.host or parsed.port or parsed.username):
        raise ConfigError(
            f"the state database URL {parsed.render_as_string(hide_password=True)} names a host, and SQLite has none: its file comes after the third slash",
            hint="sqlite:///relative.db for a file below this folder, sqlite:////abs/path.db for an absolute path",
        )
    return parsed


def _sqlite_engine(url: URL, busy_timeout_ms: int) -> Engine:
    database = url.database or ""
    if database in ("", ":memory:"):
        # One shared connection, or every checkout would see its own empty database.
        engine = create_engine(
            url, poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
    else:
        if not database.startswith("file:"):
            _make_private_dir(Path(database).parent)
        engine = checked_times(create_engine(url, json_deserializer=json_reader(describe(url))), describe(url))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the "begin" hook below emits BEGIN
        run_pragmas(dbapi_connection, [
            # busy_timeout first, so that switching to WAL waits for a lock too.
            f"PRAGMA busy_timeout={int(busy_timeout_ms)}",
            "PRAGMA journal_mode=WAL",
            # FULL: a committed journal row or blob survives power loss, not only a crash;
            # "nothing is lost" depends on it, and dreamd writes little.
            "PRAGMA synchronous=FULL",
            "PRAGMA foreign_keys=ON",
        ])  # fmt: skip

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if options.get("isolation_level") == "AUTOCOMMIT":
            return
        conn.exec_driver_sql("BEGIN" if options.get("dreamd_read_only") else "BEGIN IMMEDIATE")

    return engine


def _server_engine(url: URL) -> Engine:
    try:
        return create_engine(url, pool_pre_ping=True)
    except ImportError as exc:
        raise StateError(
            f"{describe(url)} needs a database driver that is not installed ({exc.name})",
            hint="for PostgreSQL install the extra: pip install 'dreamd[postgres]'",
        ) from exc


def _make_private_dir(directory: Path) -> None:
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        if is_state_dir(directory):
            raise StateError(f"cannot create the state directory {directory}: {why_not_a_folder(directory, exc)}", hint=STATE_DIR_HINT) from exc
        raise StateError(f"cannot create {directory}, the folder of the state database given: {why_not_a_folder(directory, exc)}", hint=GIVEN_URL_HINT) from exc


STATE_DIR_HINT = "check permissions, or set STATE_DIRECTORY or XDG_STATE_HOME"
# Advice for a database URL someone gave (--db, DREAMD_DB, the config's db): the state
# directory's variables would not move it.
GIVEN_URL_HINT = "give --db (or DREAMD_DB, or the config's db) a file in a folder you can write"


def is_state_dir(directory: Path) -> bool:
    """Whether ``directory`` is the state directory (the default database's folder)."""
    return directory.expanduser().absolute() == state_dir().absolute()


def why_not_a_folder(directory: Path, exc: OSError) -> str:
    """Why a folder cannot be made: the file in the way when one of its parents is one."""
    if exc.errno == errno.ENOTDIR or (exc.errno == errno.EEXIST and not directory.is_dir()):
        for parent in [directory, *directory.parents]:
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file, not a folder"
    return exc.strerror or str(exc)


def run_pragmas(dbapi_connection: Any, statements: list[str]) -> None:
    """Run connection set-up statements, with SQLite's failures as driver errors.

    The first statement reads the schema; in a corrupt file SQLite's message quotes the
    broken entry in bytes that are not UTF-8, and the driver raises UnicodeDecodeError
    instead of its own error. Set-up runs outside the statements ``handle_error`` sees, so
    it is turned into the error SQLite meant here, which every open already explains.
    """
    cursor = dbapi_connection.cursor()
    try:
        for statement in statements:
            cursor.execute(statement)
    except UnicodeDecodeError as exc:
        raise sqlite3.DatabaseError("database disk image is malformed") from exc
    finally:
        cursor.close()
