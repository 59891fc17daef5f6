"""Manifests as a base plus deltas: a snapshot where k files changed costs k rows, not one
row per file of the store (see the ``manifests`` table in db/schema.py). Manifests already
recorded stay full (depth 0); new ones are deltas of the store's newest manifest.

Revision ID: 0008_manifest_deltas
Revises: 0007_stat_cache
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_manifest_deltas"
down_revision = "0007_stat_cache"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("manifests", sa.Column("base_id", sa.Integer(), nullable=True))
    op.add_column("manifests", sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("manifests", sa.Column("chain_rows", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "manifest_drops",
        sa.Column("manifest_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["manifest_id"], ["manifests.id"], name="fk_manifest_drops_manifest_id_manifests"),
        sa.PrimaryKeyConstraint("manifest_id", "path", name="pk_manifest_drops"),
    )


def downgrade() -> None:
    op.drop_table("manifest_drops")
    with op.batch_alter_table("manifests") as batch:
        batch.drop_column("chain_rows")
        batch.drop_column("depth")
        batch.drop_column("base_id")
