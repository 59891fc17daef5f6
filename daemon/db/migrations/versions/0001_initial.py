"""Initial schema: every table of daemon.db.schema, plus the append-only triggers.

Written out in full rather than imported from schema.py, so this revision keeps creating
the same first schema however schema.py changes later. Constraint names are the ones the
naming convention in schema.py produces; a test compares the result with schema.py.

``events`` and ``blobs`` refuse UPDATE and DELETE in the database itself (invariants
"every change is an event" and "nothing is lost"), so no code path, bug or hand-typed
SQL can rewrite history. On PostgreSQL, TRUNCATE (which skips row triggers) is refused too.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None

# table -> message of the error raised on UPDATE or DELETE
APPEND_ONLY = {"events": "events are append-only", "blobs": "blobs are never updated or deleted"}


def _utc() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def _hash() -> sa.String:
    return sa.String(length=64)


def _fk(column: str, target: str, table: str) -> sa.ForeignKeyConstraint:
    referred = target.split(".")[0]
    return sa.ForeignKeyConstraint([column], [target], name=f"fk_{table}_{column}_{referred}")


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect not in ("sqlite", "postgresql"):
        raise RuntimeError(f"dreamd's state database runs on SQLite or PostgreSQL, not {dialect}")
    op.create_table(
        "blobs",
        sa.Column("hash", _hash(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("hash", name="pk_blobs"),
    )
    op.create_table(
        "stores",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("root", sa.Text(), nullable=False),
        sa.Column("preset", sa.String(length=50), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_stores"),
        sa.UniqueConstraint("name", name="uq_stores_name"),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("at", _utc(), nullable=False),
        sa.Column("type", sa.String(length=50), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("surface", sa.String(length=20), nullable=False),
        sa.Column("pass_id", sa.Integer(), nullable=True),
        sa.Column("proposal_id", sa.Integer(), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        _fk("store_id", "stores.id", "events"),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.UniqueConstraint("store_id", "seq", name="uq_events_store_seq"),
    )
    op.create_table(
        "leases",
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("acquired_at", _utc(), nullable=False),
        sa.Column("expires_at", _utc(), nullable=False),
        sa.Column("heartbeat_at", _utc(), nullable=False),
        _fk("store_id", "stores.id", "leases"),
        sa.PrimaryKeyConstraint("store_id", name="pk_leases"),
    )
    op.create_table(
        "manifests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("root_hash", _hash(), nullable=False),
        sa.Column("file_count", sa.Integer(), nullable=False),
        _fk("store_id", "stores.id", "manifests"),
        sa.PrimaryKeyConstraint("id", name="pk_manifests"),
        sa.UniqueConstraint("store_id", "root_hash", name="uq_manifests_store_root"),
    )
    op.create_table(
        "passes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("surface", sa.String(length=20), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("started_at", _utc(), nullable=False),
        sa.Column("finished_at", _utc(), nullable=True),
        sa.Column("root_hash", _hash(), nullable=True),
        sa.Column("planner", sa.Text(), nullable=True),
        sa.Column("next_due_at", _utc(), nullable=True),
        sa.Column("stats", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        _fk("store_id", "stores.id", "passes"),
        sa.PrimaryKeyConstraint("id", name="pk_passes"),
    )
    op.create_index("ix_passes_store_id", "passes", ["store_id"])
    op.create_table(
        "manifest_entries",
        sa.Column("manifest_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("blob_hash", _hash(), nullable=False),
        _fk("blob_hash", "blobs.hash", "manifest_entries"),
        _fk("manifest_id", "manifests.id", "manifest_entries"),
        sa.PrimaryKeyConstraint("manifest_id", "path", name="pk_manifest_entries"),
    )
    op.create_table(
        "proposals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("pass_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("lossy", sa.Boolean(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("change_key", _hash(), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
        sa.Column("state_reason", sa.Text(), nullable=True),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("updated_at", _utc(), nullable=False),
        _fk("pass_id", "passes.id", "proposals"),
        _fk("store_id", "stores.id", "proposals"),
        sa.PrimaryKeyConstraint("id", name="pk_proposals"),
    )
    op.create_index("ix_proposals_store_key", "proposals", ["store_id", "change_key"])
    op.create_index("ix_proposals_store_state", "proposals", ["store_id", "state"])
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("proposal_id", sa.Integer(), nullable=False),
        sa.Column("decision", sa.String(length=10), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("surface", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("bound_key", _hash(), nullable=False),
        sa.Column("decided_at", _utc(), nullable=False),
        _fk("proposal_id", "proposals.id", "decisions"),
        _fk("store_id", "stores.id", "decisions"),
        sa.PrimaryKeyConstraint("id", name="pk_decisions"),
    )
    op.create_index("ix_decisions_proposal_id", "decisions", ["proposal_id"])
    op.create_table(
        "journal",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("proposal_id", sa.Integer(), nullable=False),
        sa.Column("operation", sa.String(length=10), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("finished_at", _utc(), nullable=True),
        _fk("proposal_id", "proposals.id", "journal"),
        _fk("store_id", "stores.id", "journal"),
        sa.PrimaryKeyConstraint("id", name="pk_journal"),
    )
    op.create_index("ix_journal_state", "journal", ["state"])
    op.create_table(
        "proposal_files",
        sa.Column("proposal_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("base_hash", _hash(), nullable=True),
        sa.Column("result_hash", _hash(), nullable=True),
        _fk("base_hash", "blobs.hash", "proposal_files"),
        _fk("proposal_id", "proposals.id", "proposal_files"),
        sa.PrimaryKeyConstraint("proposal_id", "path", name="pk_proposal_files"),
    )
    op.create_table(
        "snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("manifest_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=30), nullable=False),
        sa.Column("pass_id", sa.Integer(), nullable=True),
        sa.Column("proposal_id", sa.Integer(), nullable=True),
        sa.Column("recorded_at", _utc(), nullable=False),
        _fk("manifest_id", "manifests.id", "snapshots"),
        _fk("pass_id", "passes.id", "snapshots"),
        _fk("proposal_id", "proposals.id", "snapshots"),
        _fk("store_id", "stores.id", "snapshots"),
        sa.PrimaryKeyConstraint("id", name="pk_snapshots"),
    )
    op.create_index("ix_snapshots_store_recorded", "snapshots", ["store_id", "recorded_at"])
    op.create_table(
        "tombstones",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("key_kind", sa.String(length=10), nullable=False),
        sa.Column("key", _hash(), nullable=False),
        sa.Column("proposal_id", sa.Integer(), nullable=True),
        sa.Column("note_path", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("created_at", _utc(), nullable=False),
        _fk("proposal_id", "proposals.id", "tombstones"),
        _fk("store_id", "stores.id", "tombstones"),
        sa.PrimaryKeyConstraint("id", name="pk_tombstones"),
        sa.UniqueConstraint("store_id", "key_kind", "key", name="uq_tombstones_store_kind_key"),
    )
    for table, message in APPEND_ONLY.items():
        _create_append_only_triggers(table, message)


def downgrade() -> None:
    for table in APPEND_ONLY:
        _drop_append_only_triggers(table)
    op.drop_index("ix_snapshots_store_recorded", table_name="snapshots")
    op.drop_index("ix_journal_state", table_name="journal")
    op.drop_index("ix_decisions_proposal_id", table_name="decisions")
    op.drop_index("ix_proposals_store_state", table_name="proposals")
    op.drop_index("ix_proposals_store_key", table_name="proposals")
    op.drop_index("ix_passes_store_id", table_name="passes")
    for table in (
        "tombstones", "snapshots", "proposal_files", "journal", "decisions", "proposals",
        "manifest_entries", "passes", "manifests", "leases", "events", "stores", "blobs",
    ):  # fmt: skip
        op.drop_table(table)


def _create_append_only_triggers(table: str, message: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        # 23001 restrict_violation: drivers report it as an IntegrityError, like SQLite's.
        op.execute(
            f"CREATE FUNCTION {table}_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN RAISE EXCEPTION '{message}' USING ERRCODE = 'restrict_violation'; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {table}_refuse_change()"
        )
        op.execute(
            f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_refuse_change()"
        )
        return
    for verb in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
            f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )


def _drop_append_only_triggers(table: str) -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP TRIGGER {table}_no_truncate ON {table}")
        op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
        op.execute(f"DROP FUNCTION {table}_refuse_change()")
        return
    for verb in ("UPDATE", "DELETE"):
        op.execute(f"DROP TRIGGER {table}_no_{verb.lower()}")
