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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from daemon.core.errors import StateError
from daemon.db.translate import state_error_for, translate_db_errors

__all__ = [
    "READ_ONLY",
    "alembic_config",
    "default_db_url",
    "describe",
    "open_engine",
    "open_read_only",
    "pending_migrations",
    "translate_db_errors",
]

MIGRATIONS = Path(__file__).resolve().with_name("migrations")
READ_ONLY: dict[str, Any] = {"dreamd_read_only": True}
DEFAULT_BUSY_TIMEOUT_MS = 5000
HEAD_REVISION = "0006_root_identity"  # the newest migration; tests check it against Alembic


def default_db_url() -> str:
    """The SQLite file used when no URL is configured: ``state.db`` in the state directory."""
    from daemon.locations import state_dir

    return f"sqlite:///{state_dir() / 'state.db'}"


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
    with translate_db_errors("state database"):
        try:
            parsed = make_url(url)
        except ValueError as exc:  # a non-numeric port, for one
            raise ArgumentError(str(exc)) from exc
    what = describe(parsed)
    with translate_db_errors(what):
        if parsed.get_backend_name() == "sqlite":
            engine = _sqlite_engine(parsed, busy_timeout_ms)
        else:
            engine = _server_engine(parsed)
        event.listen(engine, "handle_error", _translator(what))
        try:
            # Looking first costs no write lock: opening an up-to-date database does not
            # wait for (or fail on) a writer in another process.
            if migrate and not _at_head(engine):
                _upgrade(engine)
        except BaseException:
            engine.dispose()
            raise
    return engine


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


def open_read_only(url: str) -> Engine | None:
    """The database opened so that nothing can be written, or None when there is none yet
    (a SQLite file that does not exist, a server database not migrated to this code).

    A SQLite file is opened ``immutable`` (no lock, no journal, no WAL files). Immutable
    mode ignores the WAL, so while another process holds the database open (its committed
    transactions still in ``-wal``) the file is opened ``mode=ro`` instead: that never
    writes the database or the WAL. Errors come out as StateError, like open_engine's.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        engine = open_engine(url, migrate=False)
        if _at_head(engine) or not pending_migrations(engine):  # the quick look first
            return engine
        engine.dispose()
        return None
    database = parsed.database
    if not database or database == ":memory:" or not Path(database).is_file():
        return None
    path = Path(database).resolve()
    wal = path.with_name(path.name + "-wal")
    mode = "mode=ro" if wal.is_file() and wal.stat().st_size > 0 else "mode=ro&immutable=1"
    engine = create_engine(f"sqlite:///file:{path}?{mode}&uri=true")
    event.listen(engine, "handle_error", _translator(describe(parsed)))
    return engine


def _at_head(engine: Engine) -> bool:
    """Whether the database records exactly this code's head revision.

    A plain query, so the usual start of a command does not import Alembic (~0.1 s); a
    test keeps HEAD_REVISION equal to the migrations' real head.
    """
    with engine.execution_options(**READ_ONLY).connect() as conn:
        if not engine.dialect.has_table(conn, "alembic_version"):
            return False
        return set(conn.scalars(text("SELECT version_num FROM alembic_version"))) == {HEAD_REVISION}


def pending_migrations(engine: Engine) -> list[str]:
    """Revisions shipped with this code and not yet applied, oldest first. Writes nothing."""
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    with translate_db_errors(describe(engine.url)):
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
        engine = create_engine(url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the "begin" hook below emits BEGIN
        cursor = dbapi_connection.cursor()
        try:
            # busy_timeout first, so that switching to WAL waits for a lock too.
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cursor.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed journal row or blob survives power loss, not only a crash;
            # "nothing is lost" depends on it, and dreamd writes little.
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

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
        raise StateError(
            f"cannot create the state directory {directory}: {exc.strerror or exc}",
            hint="check permissions, or set STATE_DIRECTORY or XDG_STATE_HOME",
        ) from exc


def _translator(what: str) -> Any:
    def handle_error(context: ExceptionContext) -> BaseException | None:
        if context.is_pre_ping:
            return None
        return state_error_for(what, context.sqlalchemy_exception or context.original_exception)

    return handle_error
