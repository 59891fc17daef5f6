"""Migrations of the state database: the Alembic scripts shipped in ``migrations/``, applied to
head under a lock, and what is pending (read without a write, so ``status`` can ask).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from daemon.core.errors import StateError
from daemon.db.engine import READ_ONLY, describe
from daemon.db.quick import HEAD_REVISION
from daemon.db.translate import translate_db_errors

MIGRATIONS = Path(__file__).resolve().with_name("migrations")


def alembic_config(connection: Connection | None = None) -> Any:
    """An Alembic config for the migrations shipped in the package (no alembic.ini)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


MIGRATION_LOCK = 0x647265616D64  # "dreamd": the advisory lock id two migrating processes share


def upgrade(engine: Engine) -> None:
    """Run pending migrations; on PostgreSQL under an advisory lock, so two processes opening
    a new database at once migrate it once (the second finds it at head and does nothing)."""
    from alembic import command

    with engine.connect() as conn:
        server = conn.dialect.name == "postgresql"
        if server:
            conn.execute(text("SELECT pg_advisory_lock(:id)"), {"id": MIGRATION_LOCK})
            conn.commit()
        try:
            if not at_head(engine) and pending_migrations(engine):
                command.upgrade(alembic_config(conn), "head")
        finally:
            if server:
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:id)"), {"id": MIGRATION_LOCK})
                conn.commit()


def refuse_unless_current(engine: Engine, what: str) -> bool:
    """Raise StateError unless the database is at this code's head revision, or empty.

    Returns whether it is empty (no table at all: a server database nothing was written to
    yet, a zero-byte file), which reads as no database. A newer revision is reported by
    ``pending_migrations``; an older one, or tables without a revision, here.
    """
    if at_head(engine):
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


def at_head(engine: Engine) -> bool:
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
