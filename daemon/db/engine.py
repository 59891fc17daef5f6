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
upgrades the database to head before handing the engine out. Failures a user can meet
(locked, unreadable, not a database, too new) surface as ``StateError`` everywhere, also
from statements run later on the engine (a ``handle_error`` hook does the translation).
So do two failures ``translate`` cannot see: SQLite messages that are not text (a corrupt
schema quoted in garbage bytes comes out of the driver as ``UnicodeDecodeError``) and a
column this code's schema has that the database lacks (altered outside dreamd).

Commands that only read open the database with ``open_read_only(url, current=True)``: no
write, no lock to wait for, no migration (an older schema is refused, not upgraded).
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import stat
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from daemon.core.errors import ConfigError, StateError
from daemon.db.quick import HEAD_REVISION
from daemon.db.translate import state_error_for, translate_db_errors
from daemon.locations import default_db_url, state_dir

__all__ = [
    "READ_ONLY",
    "alembic_config",
    "default_db_url",
    "describe",
    "open_empty",
    "open_engine",
    "open_read_only",
    "pending_migrations",
    "translate_db_errors",
]

MIGRATIONS = Path(__file__).resolve().with_name("migrations")
READ_ONLY: dict[str, Any] = {"dreamd_read_only": True}
DEFAULT_BUSY_TIMEOUT_MS = 5000


def describe(url: URL) -> str:
    """How messages name the database: its file for SQLite, the URL without password else."""
    if url.get_backend_name() == "sqlite":
        return f"state database {url.database or ':memory:'}"
    return f"state database {url.render_as_string(hide_password=True)}"


def alembic_config(connection: Connection | None = None) -> Any:
    """An Alembic config for the migrations shipped in the package (no alembic.ini)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def open_engine(
    url: str, *, migrate: bool = True, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS
) -> Engine:
    """An engine on the state database at ``url``, upgraded to the newest schema.

    ``migrate=False`` leaves the schema as it is (see ``pending_migrations``). Raises
    ``StateError`` when the database cannot be used.
    """
    parsed = _parse_url(url)
    what = describe(parsed)
    with translate_db_errors(what):
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(parsed, busy_timeout_ms)
        else:
            engine = _server_engine(parsed)
        event.listen(engine, "handle_error", _translator(what, _sqlite_folder(parsed)))
        try:
            # Looking first costs no write lock: opening an up-to-date database does not
            # wait for (or fail on) a writer in another process.
            if migrate and not _at_head(engine):
                _upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
    return engine


def _sqlite_folder(url: URL) -> Path | None:
    """The folder of a SQLite database file named by path (None for memory or a URI)."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database).expanduser().absolute().parent


def _parse_url(url: str) -> URL:
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


MIGRATION_LOCK = 0x647265616D64  # "dreamd": the advisory lock id two migrating processes share


def _upgrade(engine: Engine) -> None:
    """Run pending migrations; on PostgreSQL under an advisory lock, so two processes opening
    a new database at once migrate it once (the second finds it at head and does nothing)."""
    from alembic import command

    with engine.connect() as conn:
        server = conn.dialect.name == "postgresql"
        if server:
            conn.execute(text("SELECT pg_advisory_lock(:id)"), {"id": MIGRATION_LOCK})
            conn.commit()
        try:
            if not _at_head(engine) and pending_migrations(engine):
                command.upgrade(alembic_config(conn), "head")
        finally:
            if server:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": MIGRATION_LOCK})
                conn.commit()


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
    parsed = _parse_url(url)
    what = describe(parsed)
    if parsed.get_backend_name() != "sqlite":
        engine = open_engine(url, migrate=False)
        try:
            if _at_head(engine) or not pending_migrations(engine, what):  # the quick look first
                return engine
            if current:
                _refuse_unless_current(engine, what)  # returns only when it is empty
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
            raise StateError(f"{what} cannot be opened: {_why_not_a_folder(path.parent, exc)}", hint=STATE_DIR_HINT if _is_state_dir(path.parent) else GIVEN_URL_HINT) from None
        raise StateError(f"{what} cannot be read: {exc.strerror or exc}", hint="check the path and its folders' permissions") from None
    if not stat.S_ISREG(info.st_mode):
        raise StateError(f"{what} cannot be opened: it is not a regular file", hint="check that the path names a file in a directory you can write")
    engine = _read_only_sqlite(path, what, live=_in_use(path))
    if current:
        try:
            empty = _refuse_unless_current(engine, what)
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
    engine = _checked_times(create_engine(url, json_deserializer=_json_reader(what)), what)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the "begin" hook below emits BEGIN
        _run_pragmas(dbapi_connection, [f"PRAGMA busy_timeout={DEFAULT_BUSY_TIMEOUT_MS}"])

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            conn.exec_driver_sql("BEGIN")

    event.listen(engine, "handle_error", _translator(what, path.parent))
    return engine


def _refuse_unless_current(engine: Engine, what: str) -> bool:
    """Raise StateError unless the database is at this code's head revision, or empty.

    Returns whether it is empty (no table at all: a server database nothing was written to
    yet, a zero-byte file), which reads as no database. A newer revision is reported by
    ``pending_migrations``; an older one, or tables without a revision, here.
    """
    if _at_head(engine):
        return False
    pending = pending_migrations(engine, what)
    if not pending:
        return False
    with engine.execution_options(**READ_ONLY).connect() as conn:
        tables = engine.dialect.get_table_names(conn)
        current = sorted(conn.scalars(text("SELECT version_num FROM alembic_version"))) if "alembic_version" in tables else []
    if not tables:
        return True
    hint = "run a command that writes, e.g. dreamd pass, to migrate it; commands that only read never migrate"
    if not current:
        raise StateError(f"{what} has no dreamd tables", hint="point --db at dreamd's state database")
    raise StateError(f"{what} has an older schema ({', '.join(current)}) than this dreamd ({HEAD_REVISION})", hint=hint)


def _at_head(engine: Engine) -> bool:
    """Whether the database records exactly this code's head revision.

    A plain query, so the usual start of a command does not import Alembic (~0.1 s); a
    test keeps HEAD_REVISION equal to the migrations' real head.
    """
    with engine.execution_options(**READ_ONLY).connect() as conn:
        if not engine.dialect.has_table(conn, "alembic_version"):
            return False
        return set(conn.scalars(text("SELECT version_num FROM alembic_version"))) == {HEAD_REVISION}


def pending_migrations(engine: Engine, what: str | None = None) -> list[str]:
    """Revisions shipped with this code and not yet applied, oldest first. Writes nothing.

    ``what`` names the database in errors (default: from the engine's URL).
    """
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    with translate_db_errors(what or describe(engine.url)):
        with engine.execution_options(**READ_ONLY).connect() as conn:
            current = MigrationContext.configure(conn).get_current_heads()
        applied: set[str] = set()
        for head in current:
            applied.update(rev.revision for rev in script.iterate_revisions(head, "base"))
    oldest_first = reversed(list(script.walk_revisions()))
    return [rev.revision for rev in oldest_first if rev.revision not in applied]


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
        engine = _checked_times(create_engine(url, json_deserializer=_json_reader(describe(url))), describe(url))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the "begin" hook below emits BEGIN
        _run_pragmas(dbapi_connection, [
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


def _json_reader(what: str) -> Any:
    """json.loads for a SQLite engine's JSON columns, where text that does not parse can only
    be a damaged file (dreamd wrote it as JSON): a StateError, not a traceback. It is raised
    while rows are read, where the ``handle_error`` hook does not reach."""

    def loads(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            raise StateError(f"{what} is corrupt: a stored JSON value does not parse", hint="move it aside and restore a backup") from None

    return loads


def _checked_times(engine: Engine, what: str) -> Engine:
    """Make a stored time SQLite hands back as text that does not parse a StateError, like
    ``_json_reader`` does for JSON: this engine's dialect reads DateTime columns with a
    DATETIME whose parser says the file is damaged instead of raising ValueError."""
    from sqlalchemy import types
    from sqlalchemy.dialects.sqlite import DATETIME

    class CheckedDateTime(DATETIME):
        def result_processor(self, dialect: Any, coltype: Any) -> Any:
            parse = super().result_processor(dialect, coltype)

            def process(value: Any) -> Any:
                try:
                    return parse(value)
                except ValueError:
                    raise StateError(f"{what} is corrupt: a stored time does not parse", hint="move it aside and restore a backup") from None

            return process

    engine.dialect.colspecs = {**engine.dialect.colspecs, types.DateTime: CheckedDateTime}
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
        if _is_state_dir(directory):
            raise StateError(f"cannot create the state directory {directory}: {_why_not_a_folder(directory, exc)}", hint=STATE_DIR_HINT) from exc
        raise StateError(f"cannot create {directory}, the folder of the state database given: {_why_not_a_folder(directory, exc)}", hint=GIVEN_URL_HINT) from exc


STATE_DIR_HINT = "check permissions, or set STATE_DIRECTORY or XDG_STATE_HOME"
# Advice for a database URL someone gave (--db, DREAMD_DB, the config's db): the state
# directory's variables would not move it.
GIVEN_URL_HINT = "give --db (or DREAMD_DB, or the config's db) a file in a folder you can write"


def _is_state_dir(directory: Path) -> bool:
    """Whether ``directory`` is the state directory (the default database's folder)."""
    return directory.expanduser().absolute() == state_dir().absolute()


def _why_not_a_folder(directory: Path, exc: OSError) -> str:
    """Why a folder cannot be made: the file in the way when one of its parents is one."""
    if exc.errno == errno.ENOTDIR or (exc.errno == errno.EEXIST and not directory.is_dir()):
        for parent in [directory, *directory.parents]:
            if parent.exists() and not parent.is_dir():
                return f"{parent} is a file, not a folder"
    return exc.strerror or str(exc)


def _run_pragmas(dbapi_connection: Any, statements: list[str]) -> None:
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


# a column this code's schema has and the database lacks: SQLite's and PostgreSQL's words
_MISSING_COLUMN = (
    re.compile(r"no such column: (?:(?P<table>\w+)\.)?(?P<column>\w+)"),
    re.compile(r"table (?P<table>\w+) has no column named (?P<column>\w+)"),
    re.compile(r'column "(?P<column>\w+)" of relation "(?P<table>\w+)" does not exist'),
    re.compile(r'column (?:"?(?P<table>\w+)"?\.)?"?(?P<column>\w+)"? does not exist'),
)
SQLITE_IOERR, SQLITE_CORRUPT = 10, 11  # primary result codes, whatever extended code came with them
_NOT_TEXT = re.compile(r"could not decode to utf-8 column '([^']*)'", re.IGNORECASE)


def _missing_column(message: str) -> str | None:
    """``table.column`` when ``message`` says a column of this code's schema is missing.

    A column the schema does not have is a mistake in dreamd's SQL and stays a traceback.
    """
    from daemon.db.schema import metadata

    for pattern in _MISSING_COLUMN:
        found = pattern.search(message)
        if found is None:
            continue
        table, column = found.group("table"), found.group("column")
        tables = [metadata.tables[table]] if table in metadata.tables else [] if table else list(metadata.tables.values())
        owners = [t.name for t in tables if column in t.c]
        return f"{owners[0]}.{column}" if owners else None
    return None


def _beyond_translate(what: str, exc: BaseException, *, from_driver: bool, folder: Path | None = None) -> StateError | None:
    """The failures ``translate`` leaves alone, or words too vaguely, that are the
    database's, not a bug's.

    ``from_driver``: ``exc`` is the driver's own error (its message is the database's).
    """
    if isinstance(exc, UnicodeDecodeError):  # SQLite quoting garbage bytes: a corrupt file
        return StateError(f"{what} is corrupt", hint="move it aside and restore a backup")
    if not from_driver:
        return None
    primary = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    message = str(exc).strip()
    message = message.splitlines()[0] if message else ""
    if primary == SQLITE_CORRUPT or message.startswith("malformed database schema"):
        # also a schema entry whose SQL no longer parses, which reads like a "syntax error"
        return StateError(f"{what} is corrupt", hint="move it aside and restore a backup")
    not_text = _NOT_TEXT.search(message)
    if not_text:
        return StateError(f"{what} is corrupt: column {not_text.group(1)!r} holds bytes that are not UTF-8 text", hint="move it aside and restore a backup")
    column = _missing_column(message)
    if column:
        return StateError(
            f"{what} does not match this dreamd's schema: column {column} is missing",
            hint="if an older dreamd wrote it, a pass migrates it; if it was changed by hand, restore a backup or point --db at another database",
        )
    if primary == SQLITE_IOERR and folder is not None and _no_space_left(folder):
        # growing the WAL index on a full disk fails as an I/O error, not as SQLITE_FULL
        return StateError(f"{what} cannot grow: the disk is full", hint="free some space, then retry")
    return None


def _no_space_left(folder: Path) -> bool:
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def _translator(what: str, folder: Path | None = None) -> Any:
    """The ``handle_error`` hook of an engine on ``what`` (a SQLite file lives in ``folder``)."""

    def handle_error(context: ExceptionContext) -> BaseException | None:
        if context.is_pre_ping:
            return None
        original = context.original_exception
        wrapped = context.sqlalchemy_exception
        return _beyond_translate(what, original, from_driver=wrapped is not None, folder=folder) or state_error_for(what, wrapped or original)

    return handle_error
