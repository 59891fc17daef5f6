"""Alembic environment for dreamd's state database.

Migrations run only online, on the connection that ``daemon.db.engine`` hands over in
``config.attributes["connection"]``: the library owns the engine (pragmas, ``BEGIN
IMMEDIATE``, error translation), so there is no alembic.ini and no URL here. Each
migration commits on its own (``transaction_per_migration``), so a failure leaves the
database at the last good revision rather than half-way through one.

SQLite cannot ALTER most things, so operations render as batch (copy, drop, rename).
Dropping a referenced table while foreign keys are enforced would fail or cascade, so
enforcement is switched off for the run and ``PRAGMA foreign_key_check`` is run inside
each migration's transaction instead: a migration that leaves a dangling reference rolls
back. Note that a batch migration of ``events`` or ``blobs`` recreates the table and so
loses its append-only triggers; such a migration must create them again.

New revision (from a checkout, against a scratch database at head)::

    with open_engine("sqlite:////tmp/scratch.db").connect() as conn:
        command.revision(alembic_config(conn), "what changed", autogenerate=True,
                         rev_id="0002_what_changed")

then set ``HEAD_REVISION`` in ``daemon/db/quick.py`` and rewrite the statements a new SQLite
database is made from (``daemon/db/head_schema.py``; tests/db/test_head_schema.py says how).
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from daemon.db.schema import UTCDateTime, metadata

target_metadata = metadata


def _render_item(type_: str, obj: Any, _autogen_context: Any) -> str | bool:
    # New revisions spell the plain column type, so they never import schema.py.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _sqlite_foreign_keys(connection: Connection, on: bool) -> None:
    # The PRAGMA is silently ignored inside a transaction; the driver connection runs
    # in autocommit mode (the engine emits BEGIN itself), so it takes effect here.
    connection.connection.driver_connection.execute(  # type: ignore[union-attr]
        f"PRAGMA foreign_keys={'ON' if on else 'OFF'}"
    )


def _check_foreign_keys(*, ctx: Any, **_: Any) -> None:
    bad = ctx.connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if bad:
        raise RuntimeError(
            f"migration left {len(bad)} dangling foreign key(s), e.g. {tuple(bad[0])}"
        )


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if not isinstance(connection, Connection):
        raise RuntimeError("dreamd migrations run through daemon.db.engine, with a connection")
    if connection.in_transaction():
        raise RuntimeError("hand over a connection outside a transaction: each migration commits")
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        _sqlite_foreign_keys(connection, False)
    try:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=sqlite,
            transaction_per_migration=True,
            compare_type=True,
            render_item=_render_item,
            on_version_apply=[_check_foreign_keys] if sqlite else [],
        )
        with context.begin_transaction():
            context.run_migrations()
        if connection.in_transaction():  # alembic's own version-table reads autobegin
            connection.commit()
    finally:
        if connection.in_transaction():
            connection.rollback()
        if sqlite and not connection.invalidated:
            _sqlite_foreign_keys(connection, True)


if context.is_offline_mode():
    raise RuntimeError("dreamd migrations run online only (no --sql mode)")
run_migrations_online()
