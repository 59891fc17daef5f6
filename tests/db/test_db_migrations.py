"""schema.py and the migrations agree, and migrating is safe to repeat and to undo.

Every database here is made by the migrations themselves: ``open_engine`` makes a new
SQLite file from ``head_schema.py`` instead (tests/db/test_head_schema.py holds the two equal).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect

from daemon.db.engine import open_engine
from daemon.db.migrating import MIGRATIONS, alembic_config, pending_migrations, upgrade
from daemon.db.quick import HEAD_REVISION
from daemon.db.schema import metadata


def _migrated(url: str) -> Iterator[Engine]:
    """An engine on the database at ``url`` brought to head by Alembic's own run of the migrations."""
    engine = open_engine(url, migrate=False)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def engine(backend_url: str) -> Iterator[Engine]:
    yield from _migrated(backend_url)


@pytest.fixture
def sqlite_engine(sqlite_url: str) -> Iterator[Engine]:
    yield from _migrated(sqlite_url)


def _tables(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        return set(inspect(conn).get_table_names()) - {"alembic_version"}


def _differences(engine: Engine) -> list:
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn), metadata)


def test_head_has_exactly_the_tables_of_schema_py(engine):
    assert _tables(engine) == set(metadata.tables)


def test_schema_py_and_migrations_agree(engine):
    assert _differences(engine) == []


def test_upgrade_is_idempotent_and_nothing_is_pending(backend_url, engine):
    assert pending_migrations(engine) == []
    again = open_engine(backend_url)
    try:
        assert pending_migrations(again) == []
        assert _differences(again) == []
    finally:
        again.dispose()


def test_blank_database_opened_without_migrating_has_pending_revisions(backend_url):
    engine = open_engine(backend_url, migrate=False)
    try:
        assert pending_migrations(engine) == ["0001_initial", "0002_model_calls", "0003_pass_runner", "0004_proposal_reads", "0005_no_replace", "0006_root_identity", "0007_stat_cache", "0008_manifest_deltas", "0009_blob_deltas", "0010_model_ledger", "0011_tombstones_append_only", "0012_passes_by_status", "0013_stat_digests"]
        assert _tables(engine) == set()  # pending_migrations only reads
    finally:
        engine.dispose()


def test_downgrade_to_base_then_upgrade_again(engine):
    with engine.connect() as conn:
        command.downgrade(alembic_config(conn), "base")
    assert _tables(engine) == set()
    assert pending_migrations(engine) == ["0001_initial", "0002_model_calls", "0003_pass_runner", "0004_proposal_reads", "0005_no_replace", "0006_root_identity", "0007_stat_cache", "0008_manifest_deltas", "0009_blob_deltas", "0010_model_ledger", "0011_tombstones_append_only", "0012_passes_by_status", "0013_stat_digests"]
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")
    assert _tables(engine) == set(metadata.tables)
    assert _differences(engine) == []


def test_downgrade_drops_the_triggers_too(sqlite_engine):
    with sqlite_engine.connect() as conn:
        command.downgrade(alembic_config(conn), "base")
        triggers = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        assert triggers.fetchall() == []


def test_migrating_leaves_foreign_keys_enforced_on_the_connection(sqlite_engine):
    # env.py switches enforcement off for the run; the pooled connection must get it back.
    with sqlite_engine.connect() as conn:
        command.downgrade(alembic_config(conn), "base")
        command.upgrade(alembic_config(conn), "head")
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


BAD_MIGRATION = '''
from alembic import op

revision = "9999_bad"
down_revision = "{head}"


def upgrade():
    op.execute("CREATE TABLE scratch (x INTEGER)")
    op.execute(
        "INSERT INTO leases (store_id, holder, acquired_at, expires_at, heartbeat_at) "
        "VALUES (999, 'h', '2026-01-01', '2026-01-01', '2026-01-01')"
    )
'''


def test_a_migration_leaving_a_dangling_reference_rolls_back_alone(sqlite_engine, tmp_path):
    extra = tmp_path / "versions"
    extra.mkdir()
    (extra / "9999_bad.py").write_text(BAD_MIGRATION.replace("{head}", HEAD_REVISION))
    with sqlite_engine.connect() as conn:
        config = alembic_config(conn)
        config.set_main_option("version_locations", f"{MIGRATIONS / 'versions'}{os.pathsep}{extra}")
        with pytest.raises(RuntimeError, match="dangling foreign key"):
            command.upgrade(config, "head")
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        version = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        assert version == HEAD_REVISION
        assert "scratch" not in inspect(conn).get_table_names()


def test_head_revision_constant_matches_the_migrations():
    """The fast start-up check compares against the real head of the shipped migrations."""
    from alembic.script import ScriptDirectory

    from daemon.db.migrating import alembic_config
    from daemon.db.quick import HEAD_REVISION

    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [HEAD_REVISION]


def test_upgrade_from_the_oldest_revision_keeps_data(sqlite_engine):
    """A database at 0001 with a store in it upgrades to head and keeps its rows."""
    import datetime as dt

    from sqlalchemy import insert, select

    from daemon.db import schema

    with sqlite_engine.connect() as conn:
        command.downgrade(alembic_config(conn), "0001_initial")
    with sqlite_engine.begin() as conn:
        conn.execute(insert(schema.stores).values(name="s", root="/s", preset="generic", created_at=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)))
    assert pending_migrations(sqlite_engine) == ["0002_model_calls", "0003_pass_runner", "0004_proposal_reads", "0005_no_replace", "0006_root_identity", "0007_stat_cache", "0008_manifest_deltas", "0009_blob_deltas", "0010_model_ledger", "0011_tombstones_append_only", "0012_passes_by_status", "0013_stat_digests"]
    with sqlite_engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")
    assert pending_migrations(sqlite_engine) == []
    with sqlite_engine.connect() as conn:
        assert conn.scalars(select(schema.stores.c.name)).all() == ["s"]
        assert "model_calls" in inspect(conn).get_table_names()


def test_tombstones_become_append_only_and_go_back_to_one_row_a_key(engine):
    """Tombstones stored before 0011 are in effect after it; going back to 0009 keeps one row
    for each key still tombstoned and none for a key whose newest row is a lift."""
    import datetime as dt

    from sqlalchemy import insert, select
    from sqlalchemy.exc import IntegrityError

    from daemon.db import repo, schema

    at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with engine.connect() as conn:
        command.downgrade(alembic_config(conn), "0009_blob_deltas")
    with engine.begin() as conn:
        store_id = conn.execute(insert(schema.stores).values(name="s", root="/s", preset="generic", created_at=at)).inserted_primary_key[0]
        for key in ("a" * 64, "b" * 64):  # the columns 0009 has
            conn.execute(insert(schema.tombstones).values(store_id=store_id, key_kind="change", key=key, created_at=at))
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")
    with engine.begin() as conn:
        assert repo.rejected_changes(conn, store_id) == {"a" * 64, "b" * 64}
        repo.lift_change_tombstone(conn, store_id, "b" * 64, at, proposal_id=None, reason="taken back")
        assert repo.rejected_changes(conn, store_id) == {"a" * 64}
    with pytest.raises(IntegrityError, match="tombstones are append-only"), engine.begin() as conn:
        conn.execute(schema.tombstones.delete())
    with engine.connect() as conn:
        command.downgrade(alembic_config(conn), "0009_blob_deltas")
    with engine.begin() as conn:
        assert conn.exec_driver_sql("SELECT key FROM tombstones").scalars().all() == ["a" * 64]
        conn.exec_driver_sql("DELETE FROM tombstones")  # as 0009 allowed
    with engine.connect() as conn:
        command.upgrade(alembic_config(conn), "head")
    assert _differences(engine) == []
    with engine.connect() as conn:
        assert conn.execute(select(schema.tombstones)).all() == []
